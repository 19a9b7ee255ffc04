package config

import (
	"strings"
	"testing"
	"time"
)

func TestHedgeAfter(t *testing.T) {
	base := `providers: [{name: p, kind: openai, base_url: "http://127.0.0.1:1/v1"}]
models: [{name: m, targets: [{provider: p, model: x}], hedge_after: %s}]
`
	for _, c := range []struct {
		v     string
		fixed time.Duration
		p95   bool
		err   string
	}{
		{"1500ms", 1500 * time.Millisecond, false, ""},
		{"p95", 0, true, ""},
		{"15", 0, false, "p95"},
	} {
		cfg, err := Parse([]byte(strings.Replace(base, "%s", c.v, 1)), "h.yaml")
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "hedge_after") {
				t.Errorf("%s: err %v, want one naming hedge_after and mentioning %q", c.v, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.v, err)
		}
		if h := cfg.Models[0].HedgeAfter; h.Fixed.D() != c.fixed || h.P95 != c.p95 || !h.On() {
			t.Errorf("%s: got %+v", c.v, h)
		}
	}
}
