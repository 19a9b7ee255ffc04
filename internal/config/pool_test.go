package config

import (
	"testing"
	"time"
)

// A pool written with nothing but its replicas' URLs gets working
// defaults: names, the load-aware balance, a scrape every second, stale
// after three, and a global limit that covers the replicas' sum.
func TestPoolDefaults(t *testing.T) {
	c, err := Parse([]byte(`
providers:
  - name: vllm
    kind: openai
    max_in_flight: 100
    replicas:
      - {base_url: "http://10.0.0.1:8000/v1/", metrics_url: "http://10.0.0.1:8000/metrics"}
      - {base_url: "http://10.0.0.2:8000/v1", max_in_flight: 300}
      - {base_url: "http://10.0.0.3:8000/v1"}
models:
  - name: m
    targets: [{provider: vllm, model: x}]
`), "pool.yaml")
	if err == nil {
		err = c.Validate()
	}
	if err != nil {
		t.Fatal(err)
	}
	p := c.Providers[0]
	if p.Replicas[0].Name != "vllm-1" || p.Replicas[2].Name != "vllm-3" {
		t.Errorf("names %q, %q; want vllm-1, vllm-3", p.Replicas[0].Name, p.Replicas[2].Name)
	}
	if p.Replicas[0].BaseURL != "http://10.0.0.1:8000/v1" {
		t.Errorf("base_url %q kept its trailing slash", p.Replicas[0].BaseURL)
	}
	if p.Pool.Balance != PoolLeastLoaded || p.Pool.ScrapeInterval.D() != time.Second || p.Pool.StaleAfter.D() != 3*time.Second {
		t.Errorf("pool %+v, want least_loaded, 1s, 3s", p.Pool)
	}
	if got := p.Capacity(); got != 500 {
		t.Errorf("capacity %d, want 100 + 300 + 100", got)
	}
	if got := c.Admission.MaxInFlight; got != 500 {
		t.Errorf("admission.max_in_flight %d, want the pool's 500", got)
	}
}
