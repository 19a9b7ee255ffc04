package config

import (
	"strings"
	"testing"
)

// server.max_body_bytes_per_client: what one client may hold of the body
// budget. Unset, a quarter of the budget, raised to twice max_body_bytes
// and never past the budget; set, at least twice max_body_bytes, and the
// budget itself at least that too (a body is held twice over while it
// is joined into one piece).
func TestBodyBytesPerClient(t *testing.T) {
	const head = `providers:
  - {name: p, kind: openai, base_url: http://a/v1}
models:
  - {name: m, targets: [{provider: p, model: x}]}
`
	for _, c := range []struct {
		name, yaml string
		want       int64
	}{
		{"the defaults: a quarter of 128 MiB", "", 32 << 20},
		{"a quarter of a larger budget", "server: {max_body_bytes_in_flight: 1GiB}\n", 256 << 20},
		{"raised to twice the largest body", "max_body_bytes: 20MiB\nserver: {max_body_bytes_in_flight: 64MiB}\n", 40 << 20},
		{"never past the budget", "max_body_bytes: 20MiB\nserver: {max_body_bytes_in_flight: 40MiB}\n", 40 << 20},
		{"as written", "server: {max_body_bytes_per_client: 100MiB}\n", 100 << 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Parse([]byte(head+c.yaml), "x.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.BodyBytesPerClient(); got != c.want {
				t.Fatalf("BodyBytesPerClient = %d, want %d", got, c.want)
			}
		})
	}
	for _, c := range []struct{ name, yaml, want string }{
		{"a share below two bodies", "server: {max_body_bytes_per_client: 15MiB}\n",
			"server.max_body_bytes_per_client: is smaller than max_body_bytes × 2 (20971520 bytes)"},
		{"a budget below two bodies", "server: {max_body_bytes_in_flight: 15MiB}\n",
			"server.max_body_bytes_in_flight: is smaller than max_body_bytes × 2 (20971520 bytes)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(head+c.yaml), "x.yaml")
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "raise it to at least that") {
				t.Fatalf("err = %v, want it to say %q and what to do", err, c.want)
			}
		})
	}
}
