package config

import (
	"strings"
	"testing"
	"time"
)

func TestCache(t *testing.T) {
	const base = `providers: [{name: p, kind: openai, base_url: "http://127.0.0.1:1/v1"}]
`
	model := func(cache string) string {
		return base + "models: [{name: m, targets: [{provider: p, model: x}]" + cache + "}]\n"
	}
	t.Run("defaults", func(t *testing.T) {
		c, err := Parse([]byte(model("")), "c.yaml")
		if err != nil {
			t.Fatal(err)
		}
		want := Cache{MaxBytes: 64 << 20, MaxEntryBytes: 1 << 20}
		if c.Cache != want {
			t.Errorf("cache: %+v; want %+v", c.Cache, want)
		}
		if got := (Cache{}).WithDefaults(); got != want {
			t.Errorf("WithDefaults: %+v; want %+v", got, want)
		}
		if mc := c.Models[0].Cache; mc != nil || CacheOn(mc, nil) {
			t.Errorf("a model that says nothing has the cache on: %+v", mc)
		}
	})
	t.Run("on", func(t *testing.T) {
		c, err := Parse([]byte(model(", cache: {}")+"cache: {max_bytes: 8MiB, max_entry_bytes: 64KiB}\n"), "c.yaml")
		if err != nil {
			t.Fatal(err)
		}
		mc := c.Models[0].Cache
		if mc == nil || !CacheOn(mc, nil) || mc.TTL.D() != 10*time.Minute || mc.Temperature || mc.StaleIfError != 0 {
			t.Errorf("cache: {} is %+v; want on, ttl 10m, temperature false, no stale", mc)
		}
		if c.Cache.MaxBytes != 8<<20 || c.Cache.MaxEntryBytes != 64<<10 {
			t.Errorf("bounds %+v", c.Cache)
		}
	})
	t.Run("set", func(t *testing.T) {
		c, err := Parse([]byte(model(", cache: {ttl: 90s, temperature: true, stale_if_error: 1h}")), "c.yaml")
		if err != nil {
			t.Fatal(err)
		}
		want := ModelCache{TTL: Duration(90 * time.Second), Temperature: true, StaleIfError: Duration(time.Hour)}
		if got := *c.Models[0].Cache; got.TTL != want.TTL || got.Temperature != want.Temperature || got.StaleIfError != want.StaleIfError {
			t.Errorf("%+v; want %+v", got, want)
		}
	})
	t.Run("keys", func(t *testing.T) {
		on, off := true, false
		for _, c := range []struct {
			name  string
			model *ModelCache
			key   *KeyCache
			want  bool
		}{
			{"neither", nil, nil, false},
			{"model", &ModelCache{}, nil, true},
			{"key on", nil, &KeyCache{Enabled: &on}, true},
			{"key off", &ModelCache{}, &KeyCache{Enabled: &off}, false},
			{"model off beats key on", &ModelCache{Enabled: &off}, &KeyCache{Enabled: &on}, false},
			{"key silent", &ModelCache{}, &KeyCache{}, true},
		} {
			if got := CacheOn(c.model, c.key); got != c.want {
				t.Errorf("%s: CacheOn = %v; want %v", c.name, got, c.want)
			}
		}
		var k *KeyCache
		if !k.Controls() || !(&KeyCache{}).Controls() || (&KeyCache{ClientControls: &off}).Controls() {
			t.Error("client_controls: on unless a key says false")
		}
		cfg, err := Parse([]byte(model("")+"keys: [{name: k, sha256: "+strings.Repeat("ab", 32)+", cache: {enabled: true, client_controls: false}}]\n"), "c.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if kc := cfg.Keys[0].Cache; kc == nil || !CacheOn(cfg.Models[0].Cache, kc) || kc.Controls() {
			t.Errorf("keys[0].cache = %+v", kc)
		}
	})
	t.Run("off", func(t *testing.T) {
		// Off, the model's other settings mean nothing and are not
		// checked.
		c, err := Parse([]byte(model(", cache: {enabled: false, ttl: 0s}")), "c.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if CacheOn(c.Models[0].Cache, nil) {
			t.Error("enabled: false is on")
		}
	})
	for _, c := range []struct{ yaml, at, fix string }{
		{model(", cache: {ttl: 0s}"), ":2: models[0].cache.ttl: ", "must be positive; write e.g. 10m, or enabled: false"},
		{model(", cache: {ttl: -1m}"), ":2: models[0].cache.ttl: ", "is negative; write a positive duration"},
		{model(", cache: {ttl: 600}"), ":2: models[0].cache.ttl: ", "600 has no unit; write 600s"},
		{model(", cache: {stale_if_error: -1s}"), ":2: models[0].cache.stale_if_error: ", "is negative; write a positive duration"},
		{model(", cache: {temperature: 0.5}"), ":2: models[0].cache.temperature: ", "true or false"},
		{model(", cache: {max_age: 1m}"), ":2: models[0].cache: ", `unknown field "max_age"; valid fields are enabled, ttl, temperature, stale_if_error`},
		{model("") + "cache: {max_bytes: 0}\n", ":3: cache.max_bytes: ", "must be positive; write e.g. 64MiB"},
		{model("") + "cache: {max_entry_bytes: 0}\n", ":3: cache.max_entry_bytes: ", "must be positive; write e.g. 1MiB"},
		{model("") + "cache: {max_bytes: 1MiB, max_entry_bytes: 2MiB}\n", ":3: cache.max_entry_bytes: ", "2MiB is more than max_bytes (1MiB), so no answer that large could be stored"},
		{model("") + "cache: {ttl: 1m}\n", ":3: cache: ", `unknown field "ttl"; valid fields are max_bytes, max_entry_bytes`},
		{model("") + "keys: [{name: k, sha256: " + strings.Repeat("ab", 32) + ", cache: {controls: false}}]\n", ":3: keys[0].cache: ", `unknown field "controls"; valid fields are enabled, client_controls`},
	} {
		_, err := Parse([]byte(c.yaml), "c.yaml")
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
