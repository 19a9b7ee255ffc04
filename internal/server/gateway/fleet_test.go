package gateway_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/server/redistest"
)

// Three replicas sharing a store admit, together, exactly one key's
// budget: the burst and then the rate, to the request, however the
// load is spread between them.
//
// The budget is spent when a replica admits a request, which the test
// cannot see: it sees each request's send and its answer. The first
// admission happened after the first admitted request was sent and
// before the first answer came back, and likewise the last, so the span
// the budget refilled over lies between lastSent-firstDone and
// lastDone-firstSent. Timing the answers alone would take a slow first
// answer (on a loaded machine, tens of milliseconds) for a shorter span
// than the replicas had, and a budget kept to the request for overspent.
//
// The load runs until the burst is spent and then for rateFor more, not
// for a fixed time: a loaded machine sends too slowly to spend the burst
// in a few seconds, and a run that never reached the rate measured
// nothing.
func TestFleetSharesKeyBudgets(t *testing.T) {
	const rpm = 1200 // a burst of 200 (10 s), then 20 a second
	const rateFor, atMost = 2 * time.Second, 20 * time.Second
	replicas := newFleet(t, mock.Config{}, func(c *config.Config) {
		c.Keys = []config.Key{{Name: "k", SHA256: config.KeyHash("sk-k"), Limits: config.Limits{RPM: rpm}}}
	})
	waitFor(t, "three live replicas", func() bool {
		return strings.Contains(httpGetAdmin(t, replicas[0], "/metrics"), "sluice_fleet_replicas 3")
	})
	var ok, refused, other atomic.Int64
	var mu sync.Mutex
	var firstSent, lastSent, firstDone, lastDone time.Time
	start := time.Now()
	var firstRefusal atomic.Int64 // Unix nanoseconds; 0: none yet
	done := func() bool {
		if r := firstRefusal.Load(); r != 0 {
			return time.Since(time.Unix(0, r)) >= rateFor
		}
		return time.Since(start) >= atMost
	}
	var wg sync.WaitGroup
	for w := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !done(); i++ {
				s := replicas[(w+i)%3]
				sent := time.Now()
				resp, err := s.post(context.Background(), "/v1/chat/completions", chatBody, bearer("sk-k"))
				if err != nil {
					other.Add(1)
					continue
				}
				resp.Body.Close()
				switch now := time.Now(); resp.StatusCode {
				case 200:
					ok.Add(1)
					mu.Lock()
					if firstSent.IsZero() || sent.Before(firstSent) {
						firstSent = sent
					}
					if firstDone.IsZero() || now.Before(firstDone) {
						firstDone = now
					}
					lastSent, lastDone = later(lastSent, sent), later(lastDone, now)
					mu.Unlock()
				case 429:
					refused.Add(1)
					firstRefusal.CompareAndSwap(0, now.UnixNano())
				default:
					other.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if other.Load() > 0 {
		t.Fatalf("%d requests neither answered nor refused for the budget", other.Load())
	}
	burst := float64(config.Limits{RPM: rpm}.RequestBurst())
	most := burst + float64(rpm)*lastDone.Sub(firstSent).Minutes()
	least := burst + float64(rpm)*lastSent.Sub(firstDone).Minutes()
	got := float64(ok.Load())
	t.Logf("admitted %d, refused %d over %v to %v: the budget allows %.1f to %.1f", ok.Load(), refused.Load(),
		lastSent.Sub(firstDone).Round(time.Millisecond), lastDone.Sub(firstSent).Round(time.Millisecond), least, most)
	if refused.Load() == 0 {
		t.Fatalf("the load never spent the burst in %v; the test measures nothing", atMost)
	}
	for i, r := range replicas {
		if logs := r.logText(); strings.Contains(logs, "shared store unreachable") {
			t.Logf("replica %d decided alone for a while:\n%s", i, grepLines(logs, "shared store"))
		}
	}
	if got > most+1 || got < least*0.98 {
		t.Errorf("the fleet admitted %.0f, want %.1f to %.1f (never more, at most 2%% less)", got, least, most)
	}
	m := httpGetAdmin(t, replicas[0], "/metrics")
	for _, line := range []string{"sluice_fleet_replicas 3", "sluice_fleet_store_shared 1"} {
		if !strings.Contains(m, line) {
			t.Errorf("metrics lack %q:\n%s", line, grepLines(m, "sluice_fleet"))
		}
	}
}

// later is the later of two times.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// With the store unreachable, each replica decides alone with its share
// and says so; nothing is refused for want of Redis.
func TestFleetWithoutStore(t *testing.T) {
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		c.Store = "redis://127.0.0.1:1/0" // nothing listens on port 1
		c.Fleet.Timeout = config.Duration(20 * time.Millisecond)
		c.Keys = []config.Key{{Name: "k", SHA256: config.KeyHash("sk-k"), Limits: config.Limits{RPM: 12}}} // 2 at once
	})
	for i, want := range []int{200, 200, 429} {
		start := time.Now()
		status, _, body := s.do("/v1/chat/completions", chatBody, bearer("sk-k"))
		if status != want {
			t.Fatalf("request %d: %d %s, want %d", i, status, body, want)
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("request %d took %v with the store down", i, took)
		}
	}
	waitFor(t, "the log line saying the store is unreachable", func() bool {
		return strings.Contains(s.logText(), "shared store unreachable")
	})
	if m := httpGetAdmin(t, s, "/metrics"); !strings.Contains(m, "sluice_fleet_store_shared 0") {
		t.Errorf("metrics do not say the store is down:\n%s", grepLines(m, "sluice_fleet"))
	}
}

// One decision for the fleet: a provider failing behind one replica
// trips the breaker on all three within a second, and only one replica
// probes it.
func TestFleetSharesBreakerVerdicts(t *testing.T) {
	replicas := newFleet(t, mock.Config{}, nil)
	state := func(s *stack) string { return breakerState(t, s) }
	// Errors through replica 0 only: 12 calls, every one a 500.
	for range 12 {
		replicas[0].do("/v1/chat/completions", chatBody, map[string]string{"X-Mock-Fail": "500"})
	}
	if st := state(replicas[0]); st == "0" {
		t.Fatalf("replica 0 did not trip on 12 errors (state %s)", st)
	}
	for i, s := range replicas[1:] {
		waitFor(t, fmt.Sprintf("replica %d to adopt the trip", i+1), func() bool { return state(s) != "0" })
	}
	// How long the verdict took to travel is read from the replicas' own
	// logs (one clock, one process), not from this test's polling, whose
	// scrapes a busy machine can slow by more than the travel itself.
	tripped := breakerLoggedAt(t, replicas[0], "")
	for i, s := range replicas[1:] {
		d := breakerLoggedAt(t, s, "fleet").Sub(tripped)
		t.Logf("replica %d out of rotation %v after the trip", i+1, d)
		if d > time.Second {
			t.Errorf("the trip took %v to reach replica %d, want under 1 s", d, i+1)
		}
	}
	for i, s := range replicas[1:] {
		if !strings.Contains(s.logText(), "reason=fleet") {
			t.Errorf("replica %d's log does not say the verdict was the fleet's:\n%s", i+1, grepLines(s.logText(), "breaker"))
		}
	}
	// The provider answers probes again: one replica probes, the others
	// follow its verdict back into rotation.
	for _, s := range replicas {
		waitLong(t, "every replica back in rotation", func() bool { st := state(s); return st == "0" || st == "3" })
	}
	probers := 0
	for _, s := range replicas {
		m := httpGetAdmin(t, s, "/metrics")
		if strings.Contains(m, `sluice_breaker_probes_total{provider="mock-openai",result="ok"}`) {
			probers++
		}
	}
	if probers != 1 {
		t.Errorf("%d replicas probed the provider, want exactly 1", probers)
	}
}

// waitLong is waitFor with room for a breaker's open time (15 s).
func waitLong(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitWithin(t, 15*time.Second, 20*time.Millisecond, what, cond)
}

// The fleet judges the fleet's calls: four failures behind each of three
// replicas are too few for any one breaker (MinCalls 10), and enough for
// the twelve they add up to.
func TestFleetSharesBreakerEvidence(t *testing.T) {
	// The run-of-errors rule is each replica's own, and would trip each
	// on its four failures (and their same-target retries) alone: off,
	// so only the shared window can trip them.
	replicas := newFleet(t, mock.Config{}, func(c *config.Config) {
		for i := range c.Providers {
			if c.Providers[i].Breaker != nil {
				c.Providers[i].Breaker.ConsecutiveErrors = -1
			}
		}
	})
	state := func(s *stack) string { return breakerState(t, s) }
	for _, s := range replicas {
		for range 4 {
			s.do("/v1/chat/completions", chatBody, map[string]string{"X-Mock-Fail": "500"})
		}
	}
	sent := time.Now()
	for i, s := range replicas {
		waitFor(t, fmt.Sprintf("replica %d to trip on the fleet's twelve failures", i), func() bool { return state(s) != "0" })
	}
	t.Logf("all three out of rotation %v after the last failure", time.Since(sent).Round(time.Millisecond))
	own := 0
	for _, s := range replicas {
		if strings.Contains(s.logText(), "reason=error_rate") {
			own++
		}
	}
	if own == 0 {
		t.Error("no replica tripped on the error rate it judged; the trips came from nowhere")
	}
}

// A replica that does not probe holds requests for the fleet prober's
// verdict, and hears of a failed probe (which moves no breaker) on the
// fleet's channel: its held requests are refused then, within a probe
// interval or two, not at the end of their 5 s wait.
func TestFleetFailedProbeReachesNonProbers(t *testing.T) {
	replicas := newFleet(t, mock.Config{Failures: []mock.Failure{{Kind: "status", Status: 500}}}, nil)
	for range 12 {
		replicas[0].do("/v1/chat/completions", chatBody, nil)
	}
	for i, s := range replicas {
		start := time.Now()
		status, _, body := s.do("/v1/chat/completions", chatBody, nil)
		took := time.Since(start)
		t.Logf("replica %d: %d in %v", i, status, took.Round(time.Millisecond))
		if status != 503 || took > 2500*time.Millisecond {
			t.Errorf("replica %d: %d in %v (%s); want 503 at the fleet's next failed probe, well before the 5 s wait", i, status, took, body)
		}
	}
}

// newFleet starts three gateways sharing the test Redis under a prefix
// of their own (one process here, three replicas in the fleet), each
// configured by mutate too.
func newFleet(t *testing.T, mc mock.Config, mutate func(*config.Config)) []*stack {
	t.Helper()
	addr := redistest.Addr(t)
	prefix := fmt.Sprintf("sluicetest:%d:", rand.Uint64())
	var replicas []*stack
	for i := range 3 {
		replicas = append(replicas, newStack(t, mc, func(c *config.Config) {
			c.Store = "redis://" + addr + "/0"
			c.Fleet.Prefix = prefix
			c.Fleet.ID = fmt.Sprintf("replica-%d", i)
			c.Fleet.Timeout = config.Duration(time.Second) // a busy 2-core test machine stalls a round trip for hundreds of milliseconds; not a fleet's budget
			if mutate != nil {
				mutate(c)
			}
		}))
	}
	return replicas
}

// breakerState is mock-openai's sluice_breaker_state on s, as text.
func breakerState(t *testing.T, s *stack) string {
	for _, l := range strings.Split(httpGetAdmin(t, s, "/metrics"), "\n") {
		if v, ok := strings.CutPrefix(l, `sluice_breaker_state{provider="mock-openai"}`); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

// breakerLoggedAt is when s logged its first breaker transition, with
// the given reason when one is given.
func breakerLoggedAt(t *testing.T, s *stack, reason string) time.Time {
	t.Helper()
	for _, line := range strings.Split(s.logText(), "\n") {
		if !strings.Contains(line, "msg=breaker") && !strings.Contains(line, `"msg":"breaker"`) {
			continue
		}
		if reason != "" && !strings.Contains(line, "reason="+reason) && !strings.Contains(line, `"reason":"`+reason+`"`) {
			continue
		}
		m := logTime.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("breaker line without a time: %s", line)
		}
		at, err := time.Parse(time.RFC3339Nano, m[1])
		if err != nil {
			t.Fatalf("breaker line's time: %v: %s", err, line)
		}
		return at
	}
	t.Fatalf("no breaker transition (reason %q) logged:\n%s", reason, s.logText())
	return time.Time{}
}

// logTime finds a log line's time, in the text or the JSON format.
var logTime = regexp.MustCompile(`(?:time=|"time":")([^\s"]+)`)
