package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/harness/procs"
)

// faultStack is one row's real processes: two sluice mock providers
// (primary, fallback) and sluice serve on a plain config, fresh for
// each run so no breaker or latency history carries over.
type faultStack struct {
	listen, admin     string
	primary, fallback string // the mocks' addresses
}

// startFaultStack writes the row's config and scripts into a temporary
// directory (their ${...} filled in) and starts the processes: the
// mocks first, then the gateway on a config naming their addresses.
func startFaultStack(t *testing.T, r faultRun, run string) faultStack {
	t.Helper()
	bin := buildSluice(t)
	var s faultStack
	dir := t.TempDir()
	fill := func(role, file string, extra ...string) string {
		raw, err := os.ReadFile(filepath.Join("testdata", "faults", file))
		if err != nil {
			t.Fatal(err)
		}
		subst := append([]string{"${LISTEN}", s.listen, "${ADMIN}", s.admin, "${PRIMARY}", s.primary, "${FALLBACK}", s.fallback}, extra...)
		path := filepath.Join(dir, role+"-"+file)
		if err := os.WriteFile(path, []byte(strings.NewReplacer(subst...).Replace(string(raw))), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	var vars []string
	if r.vars != nil {
		vars = r.vars(t, run)
	}
	pScript := fill("primary", or(r.primary, "mock.yaml"), vars...)
	fScript := fill("fallback", or(r.fallback, "mock.yaml"))
	// Both mocks write in the run's encoding: a provider's fallback is
	// often the same kind of server, and a continuation's bytes must be
	// read as well as the broken call's.
	mockArgs := func(script, addr string) []string {
		return []string{"mock", "--script", script, "--listen", addr, "--grace", "1s", "--encoding", or(r.encoding, "compact")}
	}
	s.primary = startOnFreePort(t, func(addr string) procs.Spec {
		return procs.Spec{Path: bin, Args: mockArgs(pScript, addr), Ready: ready("http://" + addr + "/stats")}
	})
	s.fallback = startOnFreePort(t, func(addr string) procs.Spec {
		return procs.Spec{Path: bin, Args: mockArgs(fScript, addr), Ready: ready("http://" + addr + "/stats")}
	})
	s.admin = startOnFreePort(t, func(admin string) procs.Spec {
		s.listen, s.admin = freeAddr(t), admin
		cfg := fill("gateway", or(r.cfg, "sluice.yaml"))
		return procs.Spec{Path: bin, Args: []string{"serve", "--config", cfg}, Ready: ready("http://" + admin + "/readyz")}
	})
	return s
}

// startOnFreePort starts the process spec(addr) makes on a free
// address, and again on another if the first is taken before the
// process binds it (other tests on the machine pick free ports too). It
// returns the address it started on; the process runs until the test
// ends.
func startOnFreePort(t *testing.T, spec func(addr string) procs.Spec) string {
	t.Helper()
	var err error
	for range 3 {
		addr := freeAddr(t)
		s := spec(addr)
		s.Name = "sluice " + s.Args[0]
		s.StopSignal = os.Interrupt
		var p *procs.Proc
		if p, err = procs.Start(context.Background(), s); err == nil {
			t.Cleanup(func() { p.Stop() })
			return addr
		}
		if !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	t.Fatal(err)
	return ""
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// mockStats reads a mock's counters.
func mockStats(t *testing.T, addr string) mock.Stats {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s mock.StatsJSON
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatal(err)
	}
	return s.Stats
}

func resetMockStats(t *testing.T, addr string) {
	t.Helper()
	resp, err := http.Post("http://"+addr+"/stats/reset", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

// faultRequest is one request of a run: its prompt (distinct per
// request, so each has its own expected words) and dialect.
type faultRequest struct {
	i         int
	prompt    string
	anthropic bool
}

func (r faultRun) request(run string, i int) faultRequest {
	return faultRequest{i: i, prompt: fmt.Sprintf("fault %s, %s run in %s, request %d: tell me a story", r.name, run, r.encoding, i), anthropic: i%2 == 1}
}

// faultResult is a request's answer and the verdict on it.
type faultResult struct {
	req    faultRequest
	answer faultAnswer
	err    error // nil: what the row requires
}

// warmUp sends a dozen healthy requests at once (no fault header), so
// the primary has what a provider that was working has: a recent time
// to first token (without one, a silent target waits out the
// first-token ceiling, 10 s, rather than 4x its recent TTFT, at least
// 2 s) and the 10 healthy calls its breaker's slow threshold rests on
// (before them it is 10 s). The mocks' counters are reset after.
func warmUp(t *testing.T, s faultStack, r faultRun) {
	t.Helper()
	const n = 12
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := r.request("warm-up", i)
			body := faultBody(req.prompt, r.stream)
			a := askGateway(s.listen, body, req.anthropic, r.stream, nil, 20*time.Second)
			want, _ := mock.ExpectedAnswer([]byte(body), 60)
			errs[i] = a.complete(want)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("warm-up request %d (no fault): %v", i, err)
		}
	}
	resetMockStats(t, s.primary)
	resetMockStats(t, s.fallback)
}

// sendAll sends n requests, the i-th at i*gap from now, each in its own
// goroutine and bounded by timeout, and returns them in order once all
// have answered.
func sendAll(t *testing.T, s faultStack, r faultRun, run string, n int, gap, timeout time.Duration) []faultResult {
	t.Helper()
	out := make([]faultResult, n)
	var wg sync.WaitGroup
	began := time.Now()
	for i := range n {
		time.Sleep(time.Until(began.Add(time.Duration(i) * gap)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := r.request(run, i)
			body := faultBody(req.prompt, r.stream)
			a := askGateway(s.listen, body, req.anthropic, r.stream, r.header, timeout)
			want, err := mock.ExpectedAnswer([]byte(body), 60)
			if err == nil {
				err = r.client(a, want)
			}
			out[i] = faultResult{req: req, answer: a, err: err}
		}()
	}
	wg.Wait()
	return out
}

// faultFigures sums a run for the log and docs/FAULTS.md.
type faultFigures struct {
	requests, good    int
	primary, fallback mock.Stats
	p50, max          time.Duration
	statuses          map[int]int
	// secondCalls counts the answers by their X-Sluice-Second-Call
	// ("" for none): what made the call that answered.
	secondCalls map[string]int
	// trips counts the primary's breaker opening (the gateway's
	// /metrics).
	trips int
}

func figures(res []faultResult, primary, fallback mock.Stats) faultFigures {
	f := faultFigures{requests: len(res), primary: primary, fallback: fallback, statuses: map[int]int{}, secondCalls: map[string]int{}}
	var took []time.Duration
	for _, r := range res {
		if r.err == nil {
			f.good++
		}
		f.statuses[r.answer.status]++
		if r.answer.header != nil {
			f.secondCalls[r.answer.header.Get("X-Sluice-Second-Call")]++
		}
		took = append(took, r.answer.took)
	}
	slices.Sort(took)
	if len(took) > 0 {
		f.p50, f.max = took[len(took)/2], took[len(took)-1]
	}
	return f
}

func (f faultFigures) String() string {
	return fmt.Sprintf("requests %d, as required %d, statuses %v, second calls %v, primary breaker trips %d, primary calls %d (injected %d, cancelled %d), fallback calls %d (bad requests %d), time to answer p50 %v max %v",
		f.requests, f.good, f.statuses, f.secondCalls, f.trips, f.primary.Total, f.primary.ErrorsInjected, f.primary.CancelledByClient,
		f.fallback.Total, f.fallback.BadRequests, f.p50.Round(10*time.Millisecond), f.max.Round(10*time.Millisecond))
}

// judge fails the test for every request the row's client check
// refused (the first few in detail) and for the providers' counts.
func judge(t *testing.T, r faultRun, run string, res []faultResult, s faultStack) faultFigures {
	t.Helper()
	// A mock counts a call when its handler returns, which can be just
	// after the gateway has answered from what the call sent.
	time.Sleep(300 * time.Millisecond)
	f := figures(res, mockStats(t, s.primary), mockStats(t, s.fallback))
	trips, err := metricSum(s.admin, `sluice_breaker_transitions_total{`, `provider="primary"`, `to="open"`)
	if err != nil {
		t.Fatal(err)
	}
	f.trips = int(trips)
	t.Logf("FAULTS %s %s %s: %s", r.name, r.encoding, run, f)
	bad := 0
	for _, x := range res {
		if x.err == nil {
			continue
		}
		if bad++; bad <= 3 {
			dialect := "openai"
			if x.req.anthropic {
				dialect = "anthropic"
			}
			t.Errorf("%s request %d (%s): %v", run, x.req.i, dialect, x.err)
		}
	}
	if bad > 3 {
		t.Errorf("%s: %d of %d requests were not answered as required", run, bad, len(res))
	}
	if r.providers != nil {
		if err := r.providers(f, run == "single"); err != nil {
			t.Errorf("%s: what the providers saw: %v", run, err)
		}
	}
	return f
}
