package config

import (
	"strings"
	"testing"
	"time"
)

func TestIdempotency(t *testing.T) {
	base := `providers: [{name: p, kind: openai, base_url: "http://127.0.0.1:1/v1"}]
models: [{name: m, targets: [{provider: p, model: x}]}]
`
	t.Run("defaults", func(t *testing.T) {
		c, err := Parse([]byte(base), "i.yaml")
		if err != nil {
			t.Fatal(err)
		}
		want := Idempotency{TTL: Duration(time.Hour), MaxEntries: 10000, MaxBytes: 64 << 20, MaxResponseBytes: 1 << 20}
		if c.Idempotency != want || !c.Idempotency.On() {
			t.Errorf("defaults: %+v; want %+v, on", c.Idempotency, want)
		}
		if got := (Idempotency{}).WithDefaults(); got != want {
			t.Errorf("WithDefaults: %+v; want %+v", got, want)
		}
	})
	t.Run("set", func(t *testing.T) {
		c, err := Parse([]byte(base+"idempotency: {ttl: 10m, max_entries: 50, max_bytes: 2MiB, max_response_bytes: 256KiB}\n"), "i.yaml")
		if err != nil {
			t.Fatal(err)
		}
		want := Idempotency{TTL: Duration(10 * time.Minute), MaxEntries: 50, MaxBytes: 2 << 20, MaxResponseBytes: 256 << 10}
		if c.Idempotency != want {
			t.Errorf("%+v; want %+v", c.Idempotency, want)
		}
	})
	t.Run("off", func(t *testing.T) {
		// Off, the bounds are not checked: they mean nothing.
		c, err := Parse([]byte(base+"idempotency: {enabled: false, ttl: 0s}\n"), "i.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if c.Idempotency.On() {
			t.Error("enabled: false is on")
		}
	})
	for _, c := range []struct{ yaml, at, fix string }{
		{"{ttl: 0s}", ":3: idempotency.ttl: ", "must be positive; write e.g. 1h, or enabled: false"},
		{"{max_entries: 0}", ":3: idempotency.max_entries: ", "0 must be positive; write e.g. 10000"},
		{"{max_entries: -5}", ":3: idempotency.max_entries: ", "-5 must be positive"},
		{"{max_bytes: 0}", ":3: idempotency.max_bytes: ", "must be positive; write e.g. 64MiB"},
		{"{max_response_bytes: 0}", ":3: idempotency.max_response_bytes: ", "must be positive; write e.g. 1MiB"},
		{"{max_bytes: 1MiB, max_response_bytes: 2MiB}", ":3: idempotency.max_response_bytes: ", "2MiB is more than max_bytes (1MiB), so no answer that large could be stored"},
		{"{ttl: 60}", ":3: idempotency.ttl: ", "60 has no unit; write 60s"},
		{"{retain: 1h}", ":3: idempotency: ", `unknown field "retain"; valid fields are enabled, ttl, max_entries, max_bytes, max_response_bytes`},
	} {
		_, err := Parse([]byte(base+"idempotency: "+c.yaml+"\n"), "i.yaml")
		if err == nil {
			t.Errorf("%s: accepted", c.yaml)
			continue
		}
		errs := allErrors(t, err)
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), c.at) || !strings.Contains(errs[0].Error(), c.fix) {
			t.Errorf("%s: %v\nwant one error at %q saying %q", c.yaml, err, c.at, c.fix)
		}
	}
}
