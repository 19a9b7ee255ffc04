package lifecycle

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/quota"
)

func budgetEngine(b Budgets, scopes ...ScopeConfig) *Engine {
	if len(scopes) == 0 {
		scopes = []ScopeConfig{{Fixed: 100}}
	}
	var lanes []admission.Limiter
	if b.LargeMinInput > 0 {
		lanes = []admission.Limiter{admission.Fixed(1)}
	}
	return New(Config{
		Admission: admission.Config{Global: admission.Fixed(100), MaxDepth: 10, MaxWait: 30 * time.Second, Lanes: lanes},
		Scopes:    scopes,
		Budgets:   b,
	})
}

func perMinute(rpm, itpm, otpm int64) quota.Limits {
	return quota.Limits{quota.Requests: {PerMinute: rpm}, quota.InputTokens: {PerMinute: itpm}, quota.OutputTokens: {PerMinute: otpm}}
}

// A key's budget refuses at arrival with the exact wait, and a request
// is charged what it used, not what it reserved.
func TestKeyBudget(t *testing.T) {
	e := budgetEngine(Budgets{Keys: []quota.Limits{perMinute(0, 6000, 0)}})
	r := Request{Targets: []int{0}, Key: 1, InputTokens: 4000, MaxOutput: 100}
	a, _ := e.Arrive(at(0), r)
	if a.Verdict != admission.Admitted {
		t.Fatalf("first request %+v, want admitted", a)
	}
	b, _ := e.Arrive(at(0), r)
	if b.Verdict != admission.Rejected || b.Refusal.Reason != admission.ReasonKeyBudget || b.Budget.Dimension != quota.InputTokens {
		t.Fatalf("second request %+v, want refused for the key's input tokens", b)
	}
	// 2,000 tokens of 6,000 a minute are left; 2,000 more take 20 s.
	if b.Refusal.RetryAfter != 20*time.Second {
		t.Fatalf("Retry-After %v, want exactly 20s", b.Refusal.RetryAfter)
	}
	// Another key is untouched.
	if c, _ := e.Arrive(at(0), Request{Targets: []int{0}, Key: 0, InputTokens: 100000}); c.Verdict != admission.Admitted {
		t.Fatalf("a request without a budget %+v, want admitted", c)
	}
	// The provider says the prompt was 1,000 tokens: 3,000 come back.
	e.Finish(at(0), a.ID, Outcome{Kind: OK, InputTokens: 1000, OutputTokens: 10, UsageKnown: true})
	if s, _ := e.KeyStatus(at(0), 1); s[quota.InputTokens].Remaining != 5000 {
		t.Fatalf("remaining %d after settling 1,000 used, want 5,000", s[quota.InputTokens].Remaining)
	}
	if d, _ := e.Arrive(at(0), r); d.Verdict != admission.Admitted {
		t.Fatalf("after the refund %+v, want admitted", d)
	}
	// A prompt larger than the budget's burst can never pass.
	big, _ := e.Arrive(at(0), Request{Targets: []int{0}, Key: 1, InputTokens: 7000})
	if !big.Budget.Never {
		t.Fatalf("7,000 tokens against a 6,000 burst: %+v, want Never", big)
	}
}

// An answer with no usage reported is charged its whole reservation; a
// request that never started is refunded whole.
func TestBudgetSettlement(t *testing.T) {
	e := budgetEngine(Budgets{Keys: []quota.Limits{perMinute(10, 0, 1000)}}, ScopeConfig{Fixed: 1})
	r := Request{Targets: []int{0}, Key: 1, MaxOutput: 300}
	a, _ := e.Arrive(at(0), r)
	w, _ := e.Arrive(at(0), r) // waits: the scope holds one
	if w.Verdict != admission.Queued {
		t.Fatalf("second %+v, want queued", w)
	}
	e.Leave(at(0), w.ID)
	s, _ := e.KeyStatus(at(0), 1)
	if s[quota.Requests].Remaining != 9 || s[quota.OutputTokens].Remaining != 700 {
		t.Fatalf("after one in flight and one withdrawn: %+v, want 9 requests and 700 tokens left", s)
	}
	e.Finish(at(0), a.ID, Outcome{Kind: OK})
	if s, _ := e.KeyStatus(at(0), 1); s[quota.OutputTokens].Remaining != 700 {
		t.Fatalf("an answer with no usage: %d output tokens left, want 700 (the reservation kept)", s[quota.OutputTokens].Remaining)
	}
	b, _ := e.Arrive(at(0), Request{Targets: []int{0}, Key: 1, MaxOutput: 100})
	e.Finish(at(0), b.ID, Outcome{Kind: Cancelled, OutputTokens: 40})
	if s, _ := e.KeyStatus(at(0), 1); s[quota.OutputTokens].Remaining != 660 {
		t.Fatalf("a stream cut after 40 tokens: %d left, want 660", s[quota.OutputTokens].Remaining)
	}
}

// A provider out of budget is passed over, as a paused one is; with no
// target left the request is refused with the wait for the first back.
func TestProviderBudget(t *testing.T) {
	e := budgetEngine(Budgets{Scopes: []quota.Limits{perMinute(2, 0, 0), {}}}, ScopeConfig{Fixed: 100}, ScopeConfig{Fixed: 100})
	two := Request{Targets: []int{0, 1}}
	for i := range 2 {
		if a, _ := e.Arrive(at(0), two); a.Target != 0 {
			t.Fatalf("request %d went to %d, want the primary", i, a.Target)
		}
	}
	if a, _ := e.Arrive(at(0), two); a.Target != 1 || a.Verdict != admission.Admitted {
		t.Fatalf("third request %+v, want the backup: the primary is out of budget", a)
	}
	sole, _ := e.Arrive(at(0), Request{Targets: []int{0}})
	if sole.Verdict != admission.Rejected || sole.Refusal.Reason != admission.ReasonUnavailable || sole.Refusal.RetryAfter != 30*time.Second {
		t.Fatalf("with only the primary: %+v, want refused for 30 s (one request of 2 a minute)", sole)
	}
}

// Large-context requests share their lane: one in flight, and the rest
// wait, while small requests pass them.
func TestLargeContextLane(t *testing.T) {
	e := budgetEngine(Budgets{LargeMinInput: 10000})
	big := Request{Targets: []int{0}, InputTokens: 50000}
	if a, _ := e.Arrive(at(0), big); a.Verdict != admission.Admitted {
		t.Fatalf("first large %+v, want admitted", a)
	}
	if a, _ := e.Arrive(at(0), big); a.Verdict != admission.Queued {
		t.Fatalf("second large %+v, want queued: the lane holds one", a)
	}
	if a, _ := e.Arrive(at(0), Request{Targets: []int{0}, InputTokens: 500}); a.Verdict != admission.Admitted {
		t.Fatalf("small request %+v, want admitted past the large ones", a)
	}
}

// Whatever happens to requests (answered with or without usage, cut,
// retried, withdrawn, refused), each key is charged exactly what its
// requests used: the clock stands still, so nothing drains, and every
// reservation must come back but the use.
func TestBudgetsDoNotLeak(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	const burst = 1 << 40
	big := quota.Limit{PerMinute: 1 << 20, Burst: burst}
	lim := quota.Limits{big, big, big}
	for round := range 200 {
		e := New(Config{
			Admission: admission.Config{Global: admission.Fixed(4), MaxDepth: 6, MaxWait: 5 * time.Second},
			Scopes:    []ScopeConfig{{Fixed: 3}, {Fixed: 3}},
			Retry:     RetryConfig{Budget: 1, Burst: 5},
			Budgets:   Budgets{Keys: []quota.Limits{lim, lim}, Scopes: []quota.Limits{lim, lim}},
		})
		now := at(time.Duration(round) * time.Hour)
		reqs := map[ID]Request{}
		var used [3][3]int64 // key, dimension
		var live []ID
		for range 100 {
			if op := rng.IntN(4); op < 2 || len(live) == 0 {
				r := Request{Targets: []int{0, 1}, Key: 1 + rng.IntN(2), InputTokens: int64(rng.IntN(3000)),
					MaxOutput: int64(rng.IntN(2000))}
				a, rd := e.Arrive(now, r)
				if a.Verdict != admission.Rejected {
					live = append(live, a.ID)
					reqs[a.ID] = r
				}
				if len(rd.Start) > 0 {
					t.Fatalf("round %d: an arrival started others with the clock still", round)
				}
				continue
			}
			i := rng.IntN(len(live))
			id := live[i]
			live = append(live[:i], live[i+1:]...)
			if e.Leave(now, id) {
				continue
			}
			o := Outcome{Kind: OutcomeKind(rng.IntN(6)), OutputTokens: rng.IntN(500), InputTokens: int64(rng.IntN(3000)), UsageKnown: rng.IntN(2) == 0}
			if o.Kind == OK && rng.IntN(3) == 0 {
				if _, _, ok := e.Retry(now, id, Outcome{Kind: ConnError}); ok {
					e.End(now, id, 1, o)
				}
			}
			e.Finish(now, id, o) // waiters it starts are in live already
			// What the request used, by the rules Outcome documents.
			r := reqs[id]
			in, out := r.InputTokens, r.MaxOutput
			if out == 0 {
				out = DefaultMaxOutput
			}
			switch {
			case o.UsageKnown:
				if o.InputTokens > 0 {
					in = o.InputTokens
				}
				out = int64(o.OutputTokens)
			case o.OutputTokens > 0:
				out = int64(o.OutputTokens)
			case o.Kind == OK:
			default:
				in, out = 0, int64(o.OutputTokens)
			}
			if o.InputTokens > 0 {
				in = o.InputTokens // the provider's input count settles the input, however it ended
			}
			// No answer is longer than it was allowed, and the margin.
			cap := r.MaxOutput
			if cap <= 0 {
				cap = DefaultMaxOutput
			}
			out = min(out, cap+OutputMargin(cap))
			used[r.Key][quota.Requests]++
			used[r.Key][quota.InputTokens] += in
			used[r.Key][quota.OutputTokens] += out
		}
		for _, id := range live {
			if !e.Leave(now, id) {
				if _, ok := e.Finish(now, id, Outcome{Kind: Cancelled}); !ok {
					t.Fatalf("round %d: request %d neither waiting nor in flight", round, id)
				}
				used[reqs[id].Key][quota.Requests]++
			}
		}
		if e.reqs.Len() != 0 {
			t.Fatalf("round %d: %d requests still open", round, e.reqs.Len())
		}
		for _, st := range e.BudgetStats(now) {
			if st.Reserved != 0 {
				t.Fatalf("round %d: %s %d holds %d %s reserved with nothing in flight", round, st.Owner, st.Index, st.Reserved, st.Dimension)
			}
		}
		for k := 1; k <= 2; k++ {
			s, _ := e.KeyStatus(now, k)
			for d, st := range s {
				if got := st.Burst - st.Remaining; got != used[k][d] {
					t.Fatalf("round %d, key %d, %s: charged %d, used %d", round, k, quota.Dimension(d), got, used[k][d])
				}
			}
		}
	}
}

// A request naming no max_tokens reserves its route's default, else the
// engine's, never more for each answer than its key's output budget; its
// output is relayed up to that and the margin.
func TestDefaultOutputReservation(t *testing.T) {
	e := budgetEngine(Budgets{Keys: []quota.Limits{perMinute(0, 0, 100000), perMinute(0, 0, 500)}})
	for _, c := range []struct {
		r    Request
		want int64
	}{
		{Request{Targets: []int{0}, Key: 1}, DefaultMaxOutput},
		{Request{Targets: []int{0}, Key: 1, DefaultOutput: 8000}, 8000},
		{Request{Targets: []int{0}, Key: 1, MaxOutput: 300, DefaultOutput: 8000}, 300},
		{Request{Targets: []int{0}, Key: 2}, 500},
		{Request{Targets: []int{0}, Key: 1, MaxOutput: NoOutput}, 0},
		{Request{Targets: []int{0}, Key: 2, Choices: 3}, 1500},
	} {
		if got := e.books.cost(c.r).OutputTokens; got != c.want {
			t.Errorf("%+v reserves %d output tokens, want %d", c.r, got, c.want)
		}
		if got, want := e.OutputLimit(c.r), c.want+OutputMargin(c.want); got != want {
			t.Errorf("%+v is relayed up to %d output tokens, want %d", c.r, got, want)
		}
	}
	if OutputMargin(200) != 16 || OutputMargin(4096) != 128 || OutputMargin(0) != 0 {
		t.Errorf("margins %d %d %d, want 16, 128 and 0", OutputMargin(200), OutputMargin(4096), OutputMargin(0))
	}
}
