package dashboard

import (
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/server/metrics"
)

// data.json carries the day's top spenders, as the usage records give
// them, and the keys with less than a fifth of a per-minute budget
// left, the nearest first; a provider's budget and a key with room are
// not listed.
func TestSpendersAndNearLimits(t *testing.T) {
	m := metrics.New()
	gt := newGate(m)
	quotas := []metrics.Quota{
		{Owner: "key", Name: "search", Dimension: "output_tokens", Limit: 1000, Remaining: 50},
		{Owner: "key", Name: "search", Dimension: "requests", Limit: 60, Remaining: 40},
		{Owner: "key", Name: "batch", Dimension: "input_tokens", Limit: 10000, Remaining: 1500},
		{Owner: "key", Name: "idle", Dimension: "input_tokens", Limit: 10000, Remaining: 10000},
		{Owner: "provider", Name: "openai", Dimension: "requests", Limit: 100, Remaining: 0},
	}
	m.SetSources(metrics.Sources{Admission: gt, Scopes: []string{"primary", "backup"}, Quotas: func() []metrics.Quota { return quotas }})
	r := NewRecorder(m.Registry, 0)
	r.SetSpenders(func() []Spender {
		return []Spender{{Key: "search", Team: "core", Requests: 12, CostMicros: 4_500_000}, {Key: "batch", Team: "data", Requests: 3, CostMicros: 20}}
	})
	r.Sample(time.Unix(1_700_000_000, 0))
	rec := httptest.NewRecorder()
	Handler("/dashboard/", r).ServeHTTP(rec, httptest.NewRequest("GET", "/dashboard/data.json", nil))
	var snap Snapshot
	if err := json.Unmarshal(rec.Body.Bytes(), &snap); err != nil {
		t.Fatal(err)
	}
	if len(snap.Spenders) != 2 || snap.Spenders[0] != (Spender{Key: "search", Team: "core", Requests: 12, CostMicros: 4_500_000}) {
		t.Errorf("spenders: %+v", snap.Spenders)
	}
	want := []NearLimit{
		{Key: "search", Dimension: "output_tokens", Limit: 1000, Remaining: 50, Used: 0.95},
		{Key: "batch", Dimension: "input_tokens", Limit: 10000, Remaining: 1500, Used: 0.85},
	}
	if len(snap.NearLimits) != len(want) {
		t.Fatalf("near limits: %+v", snap.NearLimits)
	}
	for i, w := range want {
		if g := snap.NearLimits[i]; g.Key != w.Key || g.Dimension != w.Dimension || g.Remaining != w.Remaining || g.Used < w.Used-1e-9 || g.Used > w.Used+1e-9 {
			t.Errorf("near limit %d: %+v, want %+v", i, g, w)
		}
	}
	// A budget is not mistaken for a provider.
	var names []string
	for _, p := range r.Since(0).Samples[0].Providers {
		names = append(names, p.Name)
	}
	if len(names) != 2 || names[0] != "backup" || names[1] != "primary" {
		t.Errorf("providers in the sample: %v, want backup and primary", names)
	}
}
