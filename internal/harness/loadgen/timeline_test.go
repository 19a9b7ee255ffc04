package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/model/workload"
	"github.com/sluice-gw/sluice/internal/sim/report"
	"github.com/sluice-gw/sluice/internal/sim/scenario"
)

// hang holds an attempt open until the client hangs up on it: a server
// that never sends a first token.
func hang(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	<-r.Context().Done()
}

const (
	content = "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n"
	done    = "data: [DONE]\n\n"
)

// timed makes one streamed request whose attempts time out after
// timeout (scenario time) and are retried with jitter.
func timed(timeout time.Duration) func(s *scenario.Scenario) {
	return func(s *scenario.Scenario) {
		one(s)
		s.Clients.Stream = true
		s.Clients.Patience = time.Minute
		s.Clients.Timeout = timeout
		s.Clients.Retry = scenario.Retry{Strategy: "jittered", MaxAttempts: 3, Base: 100 * ms, Cap: 100 * ms}
	}
}

// minute0 is the run's first minute, where a short test's events fall.
func minute0(t *testing.T, row *report.Row) *report.Minute {
	t.Helper()
	if row.Timeline == nil || len(row.Timeline.Minutes) == 0 {
		t.Fatalf("no timeline: %+v", row.Timeline)
	}
	return &row.Timeline.Minutes[0]
}

// An attempt with no first token by the clients' timeout is abandoned
// alone and retried like a lost connection; the deadline sent is the
// attempt's own. Once the first token has come the attempt is not timed.
func TestAttemptTimeoutRetries(t *testing.T) {
	t.Run("no first token", func(t *testing.T) {
		g := newFake(t, func(n int, w http.ResponseWriter, r *http.Request) {
			if n == 0 {
				hang(w, r)
				return
			}
			sse(w, r, content, done)
		})
		// At a twentieth of real time the scenario's 4 s timeout is 200 ms.
		row := mustRun(t, loadScenario(t, "basic.yaml", timed(4*time.Second)), Options{Target: g.url, TimeScale: 0.05})
		h := g.seen()
		if len(h) != 2 || row.Counts[report.OK] != 1 || row.Attempts != 2 {
			t.Fatalf("%d attempts reached the server, %d sent, outcomes %v; want the hung one and its retry, answered",
				len(h), row.Attempts, row.Counts)
		}
		for i, x := range h {
			if v := x.hdr.Get("X-Sluice-Timeout"); v != "200ms" {
				t.Errorf("attempt %d: X-Sluice-Timeout %q, want the attempt's own 200ms", i+1, v)
			}
		}
		m := minute0(t, row)
		if m.Demand != 1 || m.Retries != 1 || m.TimedOut != [3]int{0, 1, 0} || m.Unanswered != 1 || len(m.TTFT) != 1 {
			t.Errorf("minute 1: %+v; want one arrival, one retry, one interactive timeout, one answer", m)
		}
		// In scenario time the answer came after the 4 s timeout.
		if len(m.TTFT) == 1 && m.TTFT[0] < 4*time.Second {
			t.Errorf("TTFT %v in scenario time, want past the 4 s timeout", m.TTFT[0])
		}
	})
	t.Run("first token in time", func(t *testing.T) {
		g := newFake(t, func(_ int, w http.ResponseWriter, r *http.Request) {
			sse(w, r, content, 800*ms, done) // the end comes well past the timeout
		})
		row := mustRun(t, loadScenario(t, "basic.yaml", timed(10*time.Second)), Options{Target: g.url, TimeScale: 0.05})
		if n := len(g.seen()); n != 1 || row.Counts[report.OK] != 1 {
			t.Errorf("%d attempts, outcomes %v; want one, answered", n, row.Counts)
		}
		if m := minute0(t, row); m.TimedOut != [3]int{} {
			t.Errorf("timed out %v, want none", m.TimedOut)
		}
	})
}

// X-Should-Retry: false stops the SDK-like strategies; naive ones do not
// read it.
func TestShouldRetryFalse(t *testing.T) {
	for _, c := range []struct {
		strategy string
		header   bool
		want     int
	}{
		{"jittered", true, 1},
		{"jittered", false, 3},
		{"backoff", true, 3},
	} {
		t.Run(fmt.Sprintf("%s, header %v", c.strategy, c.header), func(t *testing.T) {
			g := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
				if c.header {
					w.Header().Set("X-Should-Retry", "false")
				}
				answerShed(w, 0)
			})
			row := mustRun(t, loadScenario(t, "basic.yaml", func(s *scenario.Scenario) {
				one(s)
				s.Clients.Retry = scenario.Retry{Strategy: c.strategy, MaxAttempts: 3, Base: 10 * ms, Cap: 10 * ms}
			}), Options{Target: g.url})
			if n := len(g.seen()); n != c.want || row.Counts[report.Shed] != 1 {
				t.Errorf("%d attempts, outcomes %v; want %d, shed", n, row.Counts, c.want)
			}
		})
	}
}

// The client package's throttle (strategy "sluice") sheds new requests
// locally once the server refuses everything: fewer attempts reach it
// than there are requests, and its retries are paid from the budget.
func TestSluiceStrategyShedsLocally(t *testing.T) {
	g := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) { answerShed(w, 0) })
	row := mustRun(t, loadScenario(t, "basic.yaml", func(s *scenario.Scenario) {
		s.Duration = time.Second
		s.Clients.Rate = []scenario.RateStep{{RPS: 40}}
		s.Clients.Retry = scenario.Retry{Strategy: "sluice", MaxAttempts: 2, Base: 10 * ms, Cap: 10 * ms}
	}), Options{Target: g.url})
	hits := len(g.seen())
	m := minute0(t, row)
	throttled := m.Throttled[0] + m.Throttled[1] + m.Throttled[2]
	if row.Counts[report.Shed] != row.Unique || m.Demand != row.Unique {
		t.Fatalf("outcomes %v of %d requests, demand %d; want every one shed", row.Counts, row.Unique, m.Demand)
	}
	if hits >= row.Unique || throttled == 0 {
		t.Errorf("%d attempts reached the server for %d requests, %d throttled; want the throttle to shed some locally", hits, row.Unique, throttled)
	}
	if sent := m.Demand - throttled + m.Retries; sent != hits || sent != row.Attempts {
		t.Errorf("%d first attempts and retries in the timeline, %d counted, %d at the server", sent, row.Attempts, hits)
	}
	if budget := workload.DefaultBudgetBurst + workload.DefaultRetryBudget*float64(row.Unique); float64(m.Retries) > budget {
		t.Errorf("%d retries, more than the budget's %v", m.Retries, budget)
	}
}

// queueServer is a gateway's /metrics and an upstream's /stats; ok false
// makes both fail.
func queueServer(t *testing.T, ok bool) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/metrics":
			// The run's own scrape for extra calls must succeed.
			io.WriteString(w, "# TYPE sluice_queue_depth gauge\n"+
				"sluice_queue_depth{priority=\"interactive\"} 3\nsluice_queue_depth{priority=\"background\"} 2\n")
		case !ok:
			http.Error(w, "down", http.StatusInternalServerError)
		default:
			io.WriteString(w, `{"running": 170, "waiting": 7}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// The timeline takes each event where the simulator does: a refusal with
// its time, an attempt's timeout, the retries, the answer, and the
// queues sampled from the gateway's metrics and the upstreams' /stats.
func TestTimelineEvents(t *testing.T) {
	g := newFake(t, func(n int, w http.ResponseWriter, r *http.Request) {
		switch n {
		case 0:
			answerShed(w, 0)
		case 1:
			hang(w, r)
		default:
			answerOK(w)
		}
	})
	q := queueServer(t, true)
	row := mustRun(t, loadScenario(t, "basic.yaml", timed(300*ms)), Options{
		Target: g.url, Metrics: q.URL + "/metrics", QueuePoll: 10 * ms,
		UpstreamStats: []string{q.URL + "/stats," + q.URL + "/stats"},
	})
	m := minute0(t, row)
	if row.Counts[report.OK] != 1 || m.Demand != 1 || m.Retries != 2 {
		t.Errorf("outcomes %v, demand %d, retries %d; want answered after two retries", row.Counts, m.Demand, m.Retries)
	}
	if m.Refused != [3]int{0, 1, 0} || len(m.Rejection) != 1 || m.TimedOut != [3]int{0, 1, 0} || len(m.TTFT) != 1 {
		t.Errorf("refused %v (%d timed), timed out %v, %d answers; want one of each", m.Refused, len(m.Rejection), m.TimedOut, len(m.TTFT))
	}
	if m.PeakGateway != 5 || m.PeakUpstream != 14 || m.PeakQueue != 19 {
		t.Errorf("peak queue %d (gateway %d, upstream %d), want 19 (5 + 7 + 7)", m.PeakQueue, m.PeakGateway, m.PeakUpstream)
	}

	// A poll that fails is skipped, and costs the run nothing else.
	down := queueServer(t, false)
	row = mustRun(t, loadScenario(t, "basic.yaml", one), Options{
		Target: g.url, Metrics: down.URL + "/metrics", QueuePoll: 10 * ms, UpstreamStats: []string{down.URL + "/stats"},
	})
	if m := minute0(t, row); m.PeakQueue != 0 || row.Counts[report.OK] != 1 {
		t.Errorf("peak queue %d, outcomes %v; want no sample and the answer", m.PeakQueue, row.Counts)
	}
}

// --policy runs a policy's clients and names the row after it; a policy
// the scenario does not have is a ConfigError that says what it has.
func TestPolicy(t *testing.T) {
	f, err := scenario.Load("../../../scenarios/seed-002.yaml")
	if err != nil {
		t.Fatal(err)
	}
	target := "http://127.0.0.1:1"
	for _, c := range []struct {
		policy       string
		strategy     workload.Strategy
		sendDeadline bool
	}{
		{"", workload.Jittered, true},
		{"before", workload.Backoff, false},
		{"after", workload.Jittered, false},
		{"beyond", workload.Governed, true},
	} {
		p, err := newPlan(f, Options{Target: target, Policy: c.policy})
		if err != nil {
			t.Fatalf("policy %q: %v", c.policy, err)
		}
		name := c.policy
		if name == "" {
			name = "seed-002"
		}
		if p.name != name || p.retry.Strategy != c.strategy || p.sendDeadline != c.sendDeadline || p.timeout != 8*time.Second {
			t.Errorf("policy %q: row %q, retry %v, send deadline %v, timeout %v; want %q, %v, %v, 8s",
				c.policy, p.name, p.retry.Strategy, p.sendDeadline, p.timeout, name, c.strategy, c.sendDeadline)
		}
	}
	for _, c := range []struct {
		path, policy, want string
	}{
		{"../../../scenarios/seed-002.yaml", "nope", `has no policy "nope"; it has "before", "after", "beyond"`},
		{"testdata/basic.yaml", "after", "has no policies; drop --policy"},
	} {
		f, err := scenario.Load(c.path)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Run(context.Background(), f, Options{Target: target, Policy: c.policy})
		var ce *ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s --policy %s: %v; want a ConfigError saying %q", c.path, c.policy, err, c.want)
		}
	}
	code, out, errs := runCLI(t, "testdata/basic.yaml", "--target", target, "--policy", "after")
	if code != 2 || out != "" || !strings.Contains(errs, "--policy: ") {
		t.Errorf("exit %d, stderr %q; want 2 and the policy error", code, errs)
	}
}

// --minutes prints the run minute by minute after the table.
func TestCLIMinutes(t *testing.T) {
	g := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) { answerOK(w) })
	var seen atomic.Bool
	q := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		seen.Store(true)
		io.WriteString(w, `{"waiting": 4}`)
	}))
	defer q.Close()
	code, out, errs := runCLI(t, "testdata/basic.yaml", "--target", g.url, "--duration", "50ms", "--minutes", "--quiet",
		"--upstream-stats", q.URL+"/stats")
	if code != 0 || !strings.Contains(out, "basic, minute by minute") || !strings.Contains(out, "4 (0+4)") || !seen.Load() {
		t.Errorf("exit %d, stdout %q, stderr %q; want the minutes with the upstream's queue", code, out, errs)
	}
	if code, _, errs := runCLI(t, "testdata/basic.yaml", "--target", g.url, "--upstream-stats", "127.0.0.1:8000"); code != 2 || !strings.Contains(errs, "http(s) URL") {
		t.Errorf("a bad --upstream-stats: exit %d, stderr %q", code, errs)
	}
}
