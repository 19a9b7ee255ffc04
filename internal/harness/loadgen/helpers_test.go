package loadgen

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/sim/report"
	"github.com/sluice-gw/sluice/internal/sim/scenario"
)

// hit is one request as the fake gateway saw it.
type hit struct {
	at   time.Time
	path string
	hdr  http.Header
	body []byte
}

// fakeGateway stands in for the gateway: behave answers the n-th request
// (from 0), and every request is recorded.
type fakeGateway struct {
	url    string
	behave func(n int, w http.ResponseWriter, r *http.Request)
	mu     sync.Mutex
	hits   []hit
}

func newFake(t *testing.T, behave func(n int, w http.ResponseWriter, r *http.Request)) *fakeGateway {
	t.Helper()
	g := &fakeGateway{behave: behave}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/stats" {
			// A run asks whether its target is a sluice mock, and at
			// which time scale (timescale.go): not a request the
			// scenario sent.
			http.NotFound(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		g.mu.Lock()
		n := len(g.hits)
		g.hits = append(g.hits, hit{at: time.Now(), path: r.URL.Path, hdr: r.Header.Clone(), body: body})
		g.mu.Unlock()
		g.behave(n, w, r)
	}))
	t.Cleanup(srv.Close)
	g.url = srv.URL
	return g
}

func (g *fakeGateway) seen() []hit {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]hit(nil), g.hits...)
}

// Answers the fake gateway gives.

func answerOK(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}]}`)
}

func answerAnthropic(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"id":"msg_x","type":"message","role":"assistant","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn"}`)
}

func answerShed(w http.ResponseWriter, retryAfterMs int) {
	w.Header().Set("Content-Type", "application/json")
	if retryAfterMs > 0 {
		w.Header().Set("Retry-After", fmt.Sprint((retryAfterMs+999)/1000))
		w.Header().Set("Retry-After-Ms", fmt.Sprint(retryAfterMs))
	}
	w.WriteHeader(http.StatusServiceUnavailable)
	io.WriteString(w, `{"error":{"message":"overloaded","type":"overloaded_error","param":null,"code":null}}`)
}

func answerStatus(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// sse writes events, sleeping before each by its delay, flushing each.
func sse(w http.ResponseWriter, r *http.Request, events ...any) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fl := w.(http.Flusher)
	fl.Flush()
	for _, e := range events {
		switch e := e.(type) {
		case time.Duration:
			select {
			case <-time.After(e):
			case <-r.Context().Done():
				return
			}
		case string:
			io.WriteString(w, e)
			fl.Flush()
		}
	}
}

// loadScenario reads testdata/basic.yaml and lets the test adjust it.
func loadScenario(t *testing.T, name string, adjust func(s *scenario.Scenario)) *scenario.File {
	t.Helper()
	f, err := scenario.Load("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	if adjust != nil {
		adjust(&f.Scenario)
	}
	return f
}

// one makes the scenario send exactly one request, 10 ms in.
func one(s *scenario.Scenario) {
	s.Duration = 10 * time.Millisecond
	s.Clients.Rate = []scenario.RateStep{{RPS: 100}}
}

func mustRun(t *testing.T, f *scenario.File, opts Options) *report.Row {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	row, err := Run(ctx, f, opts)
	if err != nil {
		t.Fatal(err)
	}
	if row.Unique != row.Counts.Total() {
		t.Errorf("unique %d but %d outcomes", row.Unique, row.Counts.Total())
	}
	return row
}

func gaps(hits []hit) []time.Duration {
	var out []time.Duration
	for i := 1; i < len(hits); i++ {
		out = append(out, hits[i].at.Sub(hits[i-1].at))
	}
	return out
}

func boolp(b bool) *bool { return &b }
