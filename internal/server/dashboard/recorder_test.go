package dashboard

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/breaker"
	"github.com/sluice-gw/sluice/internal/server/metrics"
)

// gate is a fake admission state and breaker set for the gauges.
type gate struct {
	mu    sync.Mutex
	snap  admission.Snapshot
	stats []*breaker.Stats
}

func (g *gate) Snapshot() admission.Snapshot { g.mu.Lock(); defer g.mu.Unlock(); return g.snap }

func newGate(m *metrics.Metrics) *gate {
	g := &gate{snap: admission.Snapshot{Limit: 96, ScopeInFlight: []int{0, 0}, ScopeLimits: []int{48, 48}},
		stats: []*breaker.Stats{{State: breaker.Closed, Weight: 1}, {State: breaker.Closed, Weight: 1}}}
	m.SetSources(metrics.Sources{Admission: g, Scopes: []string{"primary", "backup"},
		Breakers: func() []*breaker.Stats { g.mu.Lock(); defer g.mu.Unlock(); return g.stats }})
	return g
}

func TestRecorderRatesQuantilesAndTransitions(t *testing.T) {
	m := metrics.New()
	g := newGate(m)
	r := NewRecorder(m.Registry, 0)
	r.SetBudgets(Budgets{Hedge: 0.05, Retry: 0.1})
	t0 := time.Unix(1_700_000_000, 0)
	r.Sample(t0)

	// One second: 50 answered at 200 ms, 10 background shed, 5 hedges,
	// 2 rescues; the primary trips and is already half-open by the next
	// sample, its queue full.
	for range 50 {
		m.Requests.WithLabelValues("chat", "chat", "primary", "interactive", "ok", "").Inc()
		m.Duration.WithLabelValues("chat", "chat", "ok").Observe(0.2)
		m.UpstreamStatus.WithLabelValues("primary", "200").Inc()
	}
	for range 10 {
		m.Requests.WithLabelValues("chat", "chat", "", "background", "shed", "queue_full").Inc()
		m.Duration.WithLabelValues("chat", "chat", "shed").Observe(0.001)
	}
	m.Hedges.WithLabelValues("chat", "fired").Add(5)
	m.Rescues.WithLabelValues("chat", "primary", "backup").Add(2)
	m.BreakerTransitions.WithLabelValues("primary", "open", "slow").Inc()
	m.BreakerTransitions.WithLabelValues("primary", "half_open", "open_for").Inc()
	g.mu.Lock()
	g.stats[0] = &breaker.Stats{State: breaker.HalfOpen, SlowRate: 0.9}
	g.snap.Queued[admission.Background] = 7
	g.snap.OldestWait = 400 * time.Millisecond
	g.snap.ScopeInFlight = []int{48, 10}
	g.mu.Unlock()
	r.Sample(t0.Add(time.Second))

	snap := r.Since(0)
	if len(snap.Samples) != 2 {
		t.Fatalf("%d samples, want 2", len(snap.Samples))
	}
	s := snap.Samples[1]
	if s.RPS != 60 || s.OK != 50 || s.Sheds["queue_full/background"] != 10 || s.Hedges != 5 || s.Rescues != 2 {
		t.Errorf("rates: rps %v ok %v sheds %v hedges %v rescues %v", s.RPS, s.OK, s.Sheds, s.Hedges, s.Rescues)
	}
	// Sheds take a millisecond: they are left out of the latency, which
	// is the 200 ms bucket's (100 ms to 250 ms) interpolation.
	if s.LatencyMS.N != 50 || s.LatencyMS.P50 < 100 || s.LatencyMS.P99 > 250 {
		t.Errorf("latency %+v; want 50 observations between 100 and 250 ms", s.LatencyMS)
	}
	if s.Queue["background"] != 7 || s.OldestWaitMS != 400 {
		t.Errorf("queue %v oldest %v", s.Queue, s.OldestWaitMS)
	}
	var primary Provider
	for _, p := range s.Providers {
		if p.Name == "primary" {
			primary = p
		}
	}
	if primary.State != "half_open" || primary.InFlight != 48 || primary.Limit != 48 || primary.Calls != 50 {
		t.Errorf("primary %+v", primary)
	}
	// The open lasted less than a second, between samples: the
	// transitions counter still shows it, in order.
	var got []string
	for _, e := range snap.Events {
		if e.Kind == "breaker" {
			got = append(got, e.From+">"+e.To)
		}
	}
	if strings.Join(got, " ") != "closed>open open>half_open" {
		t.Errorf("breaker events %v; want closed>open open>half_open", got)
	}
	if s.Verdict != SlowGenerations || snap.Verdict.Kind != SlowGenerations {
		t.Errorf("verdict %s (%+v); want slow generations", s.Verdict, snap.Verdict)
	}
	if snap.Budgets.Hedge != 0.05 {
		t.Errorf("budgets %+v", snap.Budgets)
	}
	if later := r.Since(s.T); len(later.Samples) != 0 || len(later.Events) != 0 {
		t.Errorf("since the last sample: %d samples, %d events; want none", len(later.Samples), len(later.Events))
	}
}

func TestRecorderIsBounded(t *testing.T) {
	m := metrics.New()
	g := newGate(m)
	r := NewRecorder(m.Registry, 30)
	t0 := time.Unix(1_700_000_000, 0)
	for i := range 200 {
		// A breaker flapping every second, and a mark each second.
		g.mu.Lock()
		g.stats[0] = &breaker.Stats{State: breaker.State(i % 2)}
		g.mu.Unlock()
		m.BreakerTransitions.WithLabelValues("primary", breaker.State(i%2).String(), "x").Inc()
		r.Mark(t0.Add(time.Duration(i)*time.Second), "mark")
		r.Sample(t0.Add(time.Duration(i) * time.Second))
	}
	snap := r.Since(0)
	if len(snap.Samples) != 30 {
		t.Errorf("%d samples kept, want the window's 30", len(snap.Samples))
	}
	for i := 1; i < len(snap.Samples); i++ {
		if snap.Samples[i].T <= snap.Samples[i-1].T {
			t.Fatalf("samples out of order at %d", i)
		}
	}
	if snap.Samples[29].T != t0.Add(199*time.Second).UnixMilli() {
		t.Errorf("the newest sample is not the last taken")
	}
	if n := len(snap.Events); n > 2*31 || n == 0 {
		t.Errorf("%d events kept; want only the window's", n)
	}
}

func TestHandler(t *testing.T) {
	m := metrics.New()
	newGate(m)
	r := NewRecorder(m.Registry, 0)
	r.Sample(time.Now())
	srv := httptest.NewServer(Handler("/dashboard/", r))
	defer srv.Close()
	get := func(path string) *http.Response {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	page := get("/dashboard/")
	if page.StatusCode != 200 || !strings.Contains(page.Header.Get("Content-Security-Policy"), "default-src 'self'") {
		t.Errorf("page: %d, CSP %q", page.StatusCode, page.Header.Get("Content-Security-Policy"))
	}
	for _, asset := range []string{"static/app.js", "static/app.css", "static/vendor/uplot/uPlot.iife.min.js", "static/vendor/uplot/LICENSE"} {
		if resp := get("/dashboard/" + asset); resp.StatusCode != 200 {
			t.Errorf("%s: %d", asset, resp.StatusCode)
		}
	}
	var snap Snapshot
	resp := get("/dashboard/data.json")
	if err := json.NewDecoder(resp.Body).Decode(&snap); err != nil || len(snap.Samples) != 1 || snap.Window != 900_000 {
		t.Errorf("data.json: %v, %+v", err, snap)
	}
	if resp := get("/dashboard/data.json?since=yesterday"); resp.StatusCode != 400 {
		t.Errorf("a bad since: %d, want 400", resp.StatusCode)
	}
}

// benchMetrics is a registry with 4 providers' and 50 keys' series.
func benchMetrics() *metrics.Metrics {
	m := metrics.New()
	newGate(m)
	for _, p := range []string{"primary", "backup", "p3", "p4"} {
		for _, code := range []string{"200", "429", "500", "error"} {
			m.UpstreamStatus.WithLabelValues(p, code).Inc()
		}
		m.TTFT.WithLabelValues(p, "m").Observe(0.2)
	}
	for k := range 50 {
		key := "key" + string(rune('a'+k%26)) + string(rune('a'+k/26))
		m.Tokens.WithLabelValues(key, "chat", "primary", "input", "reported").Add(100)
		m.Requests.WithLabelValues("chat", "chat", "primary", "interactive", "ok", "").Inc()
	}
	m.Duration.WithLabelValues("chat", "chat", "ok").Observe(0.3)
	return m
}

// BenchmarkSample is the sampler's cost, paid once a second whatever the
// traffic: one gather of the registry, flattened into a sample.
func BenchmarkSample(b *testing.B) {
	m := benchMetrics()
	r := NewRecorder(m.Registry, 0)
	t0 := time.Now()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r.Sample(t0.Add(time.Duration(i) * time.Second))
	}
}

// BenchmarkGather is the baseline: the same registry gathered, as one
// Prometheus scrape does, without the sample.
func BenchmarkGather(b *testing.B) {
	m := benchMetrics()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Registry.Gather(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDataJSON is one poll of a full window (the page's first
// load; later polls ask for the last few seconds only).
func BenchmarkDataJSON(b *testing.B) {
	m := benchMetrics()
	r := NewRecorder(m.Registry, 0)
	t0 := time.Now()
	for i := range DefaultWindow {
		r.Sample(t0.Add(time.Duration(i) * time.Second))
	}
	h := Handler("/dashboard/", r)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/dashboard/data.json", nil))
		b.SetBytes(int64(w.Body.Len()))
	}
}

// An eval-graded target's pass rate is in every sample, by model and
// target; without evals there is none.
func TestRecorderEvalPassRates(t *testing.T) {
	m := metrics.New()
	newGate(m)
	r := NewRecorder(m.Registry, 0)
	t0 := time.Unix(1_700_000_000, 0)
	r.Sample(t0)
	if got := r.Since(0).Samples[0].EvalPassRate; got != nil {
		t.Fatalf("pass rates %v with no evals", got)
	}
	m.Evals.PassRate.WithLabelValues("chat", "backup", "m2").Set(0.6)
	m.Evals.PassRate.WithLabelValues("chat", "primary", "m1").Set(1)
	r.Sample(t0.Add(time.Second))
	ss := r.Since(0).Samples
	got := ss[len(ss)-1].EvalPassRate
	if len(got) != 2 || got["chat backup/m2"] != 0.6 || got["chat primary/m1"] != 1 {
		t.Errorf("pass rates %v, want chat backup/m2 0.6 and chat primary/m1 1", got)
	}
}
