package gateway_test

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
)

// slowPrimaryBreaker trips after three calls pass 200 ms in flight.
func slowPrimaryBreaker() *config.Breaker {
	return &config.Breaker{SlowThreshold: config.Duration(200 * time.Millisecond), MinCalls: 3,
		Window: config.Duration(2 * time.Second), OpenFor: config.Duration(10 * time.Second)}
}

// postAll sends n chat requests at once and returns each one's status and
// how long it took.
func postAll(s *stack, n int) ([]int, []time.Duration) {
	statuses, took := make([]int, n), make([]time.Duration, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			resp, err := s.post(context.Background(), "/v1/chat/completions", chatBody, nil)
			if err != nil {
				s.t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			statuses[i], took[i] = resp.StatusCode, time.Since(start)
		}()
	}
	wg.Wait()
	return statuses, took
}

// answeredSoonAfterTheTrip sends n requests at once and wants each one
// answered well before the slow primary would have answered it.
func answeredSoonAfterTheTrip(t *testing.T, s *stack, n int) {
	t.Helper()
	statuses, took := postAll(s, n)
	for i := range statuses {
		if statuses[i] != 200 || took[i] > 1500*time.Millisecond {
			t.Errorf("request %d: status %d after %v; want the backup's answer soon after the 200 ms trip", i, statuses[i], took[i])
		}
	}
}

// The calls a slow primary took before its breaker tripped are not left
// to sit out its latency: each gets a second call on the backup the
// moment the breaker is open, the backup's answer wins, and the cancel
// of the primary's call reaches the primary.
func TestRescueStrandedCallsOntoTheBackup(t *testing.T) {
	backup, addBackup := withBackup(t, mock.Config{TTFT: 10 * time.Millisecond, OutputTokens: mock.TokenRange{Min: 1}})
	s := newStack(t, mock.Config{TTFT: 3 * time.Second, OutputTokens: mock.TokenRange{Min: 1}}, func(c *config.Config) {
		c.Providers[0].Breaker = slowPrimaryBreaker()
		addBackup(c)
	})
	answeredSoonAfterTheTrip(t, s, 3)
	if n := backup.Stats().Completed; n != 3 {
		t.Errorf("the backup completed %d calls, want the 3 rescues", n)
	}
	waitFor(t, "the primary's calls to be cancelled", func() bool { return s.mock.Stats().CancelledByClient == 3 })
	if n := s.counter("sluice_rescues_total", "to", "backup"); n != 3 {
		t.Errorf("sluice_rescues_total = %v, want 3", n)
	}
}

// rescue: false leaves them where they are.
func TestRescueCanBeTurnedOff(t *testing.T) {
	backup, addBackup := withBackup(t, mock.Config{TTFT: 10 * time.Millisecond, OutputTokens: mock.TokenRange{Min: 1}})
	s := newStack(t, mock.Config{TTFT: time.Second, OutputTokens: mock.TokenRange{Min: 1}}, func(c *config.Config) {
		c.Providers[0].Breaker = slowPrimaryBreaker()
		off := false
		c.Providers[0].Breaker.Rescue = &off
		addBackup(c)
	})
	statuses, took := postAll(s, 3)
	for i := range statuses {
		if statuses[i] != 200 || took[i] < time.Second {
			t.Errorf("request %d: status %d after %v; want the primary's own answer at 1 s", i, statuses[i], took[i])
		}
	}
	if n := backup.Stats().Total; n != 0 {
		t.Errorf("the backup saw %d calls with rescue off", n)
	}
}

// A provider that is its model's only target probes with Sluice's own
// one-token requests while it is unhealthy, instead of making users
// into probes: a user it cannot answer in time (here, one who will wait
// only 1 s for a provider taking 2 s) is held for the next probe's
// verdict (at most a probe interval plus a probe timeout) and refused
// when it fails; one with time enough is served through the open
// breaker; and the first fast probe brings the provider back.
func TestSyntheticProbesBringASoleProviderBack(t *testing.T) {
	// Every call in the first 1.5 s takes 2 s; after that, 10 ms.
	s := newStack(t, mock.Config{TTFT: 10 * time.Millisecond, OutputTokens: mock.TokenRange{Min: 5},
		Brownouts: []mock.Brownout{{End: 1500 * time.Millisecond, Latency: 2 * time.Second}}}, func(c *config.Config) {
		b := slowPrimaryBreaker()
		b.OpenFor = config.Duration(300 * time.Millisecond)
		b.ProbeInterval = config.Duration(100 * time.Millisecond)
		b.ProbeTimeout = config.Duration(300 * time.Millisecond)
		b.Probes = 5
		b.Probe = config.ProbeSynthetic
		c.Providers[0].Breaker = b
	})
	go postAll(s, 3) // trip it
	waitFor(t, "the breaker to open", func() bool { return strings.Contains(s.logText(), "to=open") })

	start := time.Now()
	status, hdr, body := s.do("/v1/chat/completions", chatBody, map[string]string{"X-Sluice-Timeout": "1s"})
	// Held for at most 100 ms + 300 ms; the rest is slack for a busy
	// machine.
	if status != 503 || time.Since(start) > 1500*time.Millisecond || hdr.Get("Retry-After") == "" {
		t.Fatalf("a user while the provider is unhealthy: status %d after %v, Retry-After %q: %s",
			status, time.Since(start), hdr.Get("Retry-After"), body)
	}
	// Refused while held, or answered early once through: either way
	// the answer says why.
	if !strings.Contains(string(body), "no_healthy_target") && !strings.Contains(string(body), "provider_too_slow") {
		t.Errorf("refusal does not name its reason: %s", body)
	}
	if status, _, body := s.do("/v1/chat/completions", chatBody, nil); status != 200 {
		t.Errorf("a user with time to wait for the slow provider: status %d: %s", status, body)
	}
	waitFor(t, "a probe to pass", func() bool { return strings.Contains(s.logText(), "reason=probes_ok") })
	// The probe is the provider's own kind of request, one token, for
	// the first target's model.
	if p := s.mock.LastRequest(); p.Header.Get("X-Sluice-Probe") != "1" || p.Path != "/v1/chat/completions" ||
		!strings.Contains(string(p.Body), `"max_tokens":1`) || p.Model == "" {
		t.Errorf("the last call before a user's was not a probe: %s %s %q", p.Path, p.Body, p.Header.Get("X-Sluice-Probe"))
	}
	if status, _, body := s.do("/v1/chat/completions", chatBody, nil); status != 200 {
		t.Fatalf("after a passing probe: status %d: %s", status, body)
	}
	ok, to := s.counter("sluice_breaker_probes_total", "result", "ok"), s.counter("sluice_breaker_probes_total", "result", "timeout")
	if ok < 1 || to < 1 {
		t.Errorf("probes: %v ok, %v timed out; want timeouts in the brownout, then a pass", ok, to)
	}
	if logs := s.logText(); strings.Contains(logs, "probe rejected") {
		t.Errorf("the mock rejected a probe:\n%s", logs)
	}
}

// counter sums the samples of a counter whose labels include the given
// name/value pairs.
func (s *stack) counter(name string, labels ...string) float64 {
	s.t.Helper()
	mf, err := s.gw.Metrics().Registry.Gather()
	if err != nil {
		s.t.Fatal(err)
	}
	var sum float64
	for _, f := range mf {
		if f.GetName() != name {
			continue
		}
	metric:
		for _, m := range f.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, l := range m.GetLabel() {
					found = found || (l.GetName() == labels[i] && l.GetValue() == labels[i+1])
				}
				if !found {
					continue metric
				}
			}
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// Requests queued for a provider when its breaker opens start on the
// backup at once, rather than wait for a slot on the slow provider.
func TestWaitersMoveToTheBackupWhenThePrimaryTrips(t *testing.T) {
	backup, addBackup := withBackup(t, mock.Config{TTFT: 10 * time.Millisecond, OutputTokens: mock.TokenRange{Min: 1}})
	s := newStack(t, mock.Config{TTFT: 3 * time.Second, OutputTokens: mock.TokenRange{Min: 1}}, func(c *config.Config) {
		c.Providers[0].Breaker = slowPrimaryBreaker()
		c.Providers[0].MaxInFlight = 3 // three calls fill it; the rest queue
		// The default queue (150 places, 5 s) holds the rest.
		addBackup(c)
	})
	answeredSoonAfterTheTrip(t, s, 5)
	if n := backup.Stats().Completed; n != 5 {
		t.Errorf("the backup completed %d calls, want 3 rescues and 2 moved waiters", n)
	}
	if n := s.mock.Stats().Total; n != 3 {
		t.Errorf("the primary saw %d calls; the waiters should never have reached it", n)
	}
}
