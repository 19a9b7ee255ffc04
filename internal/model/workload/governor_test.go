package workload

import (
	"math/rand/v2"
	"testing"
	"time"
)

// Governed retries wait exactly the server's Retry-After, never retry
// when it asks for more than the cap or says x-should-retry: false, and
// back off with full jitter otherwise.
func TestGovernedWaits(t *testing.T) {
	p := Retry{Strategy: Governed, MaxAttempts: 4, Base: time.Second, Cap: 8 * time.Second}
	rng := rand.New(rand.NewPCG(1, 2))
	if d, ok := p.Next(Ended{Attempt: 1, Status: 503, RetryAfter: 1500 * time.Millisecond}, rng); !ok || d != 1500*time.Millisecond {
		t.Errorf("Retry-After 1.5s: wait %s, retry %v", d, ok)
	}
	if _, ok := p.Next(Ended{Attempt: 1, Status: 503, RetryAfter: 9 * time.Second}, rng); ok {
		t.Error("retried sooner than a Retry-After beyond the cap")
	}
	if _, ok := p.Next(Ended{Attempt: 1, Status: 503, NoRetry: true}, rng); ok {
		t.Error("retried after x-should-retry: false")
	}
	for range 100 {
		d, ok := p.Next(Ended{Attempt: 3, Status: 0}, rng)
		if !ok || d < 0 || d > 4*time.Second {
			t.Fatalf("third retry of a timeout: wait %s, retry %v; want within [0, 4s]", d, ok)
		}
	}
	naive := Retry{Strategy: Backoff, Base: time.Second}
	if d, ok := naive.Next(Ended{Attempt: 1, Status: 503, NoRetry: true}, rng); !ok || d != time.Second {
		t.Errorf("a naive client does not read x-should-retry: wait %s, retry %v", d, ok)
	}
}

// Under a storm where every answer is refused, the governor holds
// retries near the budget's 10 % and sheds most new requests itself.
func TestGovernorUnderAStorm(t *testing.T) {
	g := NewGovernor()
	rng := rand.New(rand.NewPCG(3, 4))
	t0 := time.Unix(0, 0)
	sent, retries, shed := 0, 0, 0
	const n = 10000
	for i := range n {
		now := t0.Add(time.Duration(i) * 10 * time.Millisecond) // 100 req/s for 100 s
		if !g.Admit(now, rng.Float64()) {
			shed++
			continue
		}
		for attempt := 1; attempt <= 3; attempt++ {
			sent++
			g.Throttle.Add(now, Accepted(503))
			if attempt == 3 || !g.Budget.Spend() {
				break
			}
			retries++
		}
	}
	if retries > n/10+DefaultBudgetBurst {
		t.Errorf("%d retries for %d requests: over the 10%% budget", retries, n)
	}
	if shed < n*9/10 {
		t.Errorf("only %d of %d new requests shed locally with every answer refused", shed, n)
	}
	t.Logf("%d requests: %d shed locally, %d attempts sent, %d retries", n, shed, sent, retries)
}
