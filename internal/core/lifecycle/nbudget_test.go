package lifecycle

import (
	"testing"

	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/quota"
)

// providerRemaining is provider s's remaining budget in dimension d.
func providerRemaining(t *testing.T, e *Engine, s int, d quota.Dimension) int64 {
	t.Helper()
	for _, st := range e.BudgetStats(at(0)) {
		if st.Owner == "provider" && st.Index == s && st.Dimension == d {
			return st.Remaining
		}
	}
	t.Fatalf("no budget for provider %d in %v", s, d)
	return 0
}

// n answers of max_tokens each: n = 10 with max_tokens 100 reserves
// 1,000 output tokens, and the 1,000 the provider reports are charged
// to the key and to the provider's account, not capped at 100. A count
// past n × max_tokens and the margin a host relays (OutputLimit) is
// still the provider's error, capped there.
func TestChoicesReserveAndSettle(t *testing.T) {
	for _, c := range []struct {
		name           string
		choices        int64
		reported       int
		reserve, spent int64
	}{
		{"n=10 reports 1000", 10, 1000, 1000, 1000},
		{"n=10 reports 400", 10, 400, 1000, 400},
		{"n=10 reports an absurd count", 10, 50_000, 1000, 1000 + 31},
		{"n=1", 1, 100, 100, 100},
		{"n unset", 0, 100, 100, 100},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := budgetEngine(Budgets{Keys: []quota.Limits{perMinute(0, 0, 5000)}, Scopes: []quota.Limits{perMinute(0, 0, 5000)}})
			r := Request{Targets: []int{0}, Key: 1, MaxOutput: 100, Choices: c.choices}
			a, _ := e.Arrive(at(0), r)
			if a.Verdict != admission.Admitted {
				t.Fatalf("%+v, want admitted", a)
			}
			if got := e.KeyReserved(1)[quota.OutputTokens]; got != c.reserve {
				t.Fatalf("reserved %d output tokens, want %d", got, c.reserve)
			}
			e.Finish(at(0), a.ID, Outcome{Kind: OK, OutputTokens: c.reported, UsageKnown: true})
			if s, _ := e.KeyStatus(at(0), 1); s[quota.OutputTokens].Remaining != 5000-c.spent {
				t.Fatalf("key has %d output tokens left, want %d (charged %d)", s[quota.OutputTokens].Remaining, 5000-c.spent, c.spent)
			}
			if got := providerRemaining(t, e, 0, quota.OutputTokens); got != 5000-c.spent {
				t.Fatalf("provider has %d output tokens left, want %d", got, 5000-c.spent)
			}
			if got := e.KeyReserved(1); got != [3]int64{} {
				t.Fatalf("still reserved after settling: %v", got)
			}
		})
	}
	// A key whose budget cannot hold n × max_tokens refuses at once.
	e := budgetEngine(Budgets{Keys: []quota.Limits{perMinute(0, 0, 500)}})
	if a, _ := e.Arrive(at(0), Request{Targets: []int{0}, Key: 1, MaxOutput: 100, Choices: 10}); a.Verdict != admission.Rejected || !a.Budget.Never {
		t.Fatalf("n=10 x 100 against a 500 burst: %+v, want refused for good", a)
	}
	// n answers without max_tokens are n answers of the default cap
	// (never more each than the key's whole budget): 10 of them against
	// a 500 burst are refused for good, as 10 x 100 are; they were let
	// through, reserving 500, and drew 20,000.
	e = budgetEngine(Budgets{Keys: []quota.Limits{perMinute(0, 0, 500)}})
	if a, _ := e.Arrive(at(0), Request{Targets: []int{0}, Key: 1, Choices: 10}); a.Verdict != admission.Rejected || !a.Budget.Never {
		t.Fatalf("n=10 without max_tokens against a 500 burst: %+v, want refused for good", a)
	}
	// One answer without max_tokens is the key's minute at most, as
	// before: asked, reserved, and cut there (OutputLimit).
	a, _ := e.Arrive(at(0), Request{Targets: []int{0}, Key: 1})
	if a.Verdict != admission.Admitted || e.KeyReserved(1)[quota.OutputTokens] != 500 {
		t.Fatalf("n=1 without max_tokens against a 500 burst: %+v reserving %d, want admitted reserving 500", a, e.KeyReserved(1)[quota.OutputTokens])
	}
	if got := e.OutputLimit(Request{Key: 1}); got != 500+16 {
		t.Fatalf("its output limit is %d, want 516 (the cap and the margin)", got)
	}
	if got := e.Used(Request{Key: 1}, Outcome{Kind: OK, OutputTokens: 20_000}).OutputTokens; got != 516 {
		t.Fatalf("a count of 20,000 is charged as %d, want 516: no more than the limit", got)
	}
	e.Finish(at(0), a.ID, Outcome{Kind: OK, OutputTokens: 20_000})
	// n with no max_tokens: n default allowances, within the key's budget.
	e = budgetEngine(Budgets{Keys: []quota.Limits{perMinute(0, 0, 100_000)}, OutputReserve: 1000})
	if e.Reservation(Request{Key: 1, Choices: 3}).OutputTokens != 3000 {
		t.Fatalf("n=3 without max_tokens reserves %d, want 3,000", e.Reservation(Request{Key: 1, Choices: 3}).OutputTokens)
	}
	if got := e.Reservation(Request{Key: 1, MaxOutput: 1 << 40, Choices: 1 << 16}).OutputTokens; got != maxReserve {
		t.Fatalf("a huge n × max_tokens reserves %d, want the bound %d", got, int64(maxReserve))
	}
}

// In a fleet the key's budget lives in the shared store, but what this
// replica's requests hold of it is still kept, for
// sluice_budget_reserved.
func TestSharedKeyReserved(t *testing.T) {
	e := budgetEngine(Budgets{Keys: []quota.Limits{perMinute(10, 0, 5000)}, SharedKeys: true})
	a, _ := e.Arrive(at(0), Request{Targets: []int{0}, Key: 1, InputTokens: 20, MaxOutput: 500})
	if a.Verdict != admission.Admitted {
		t.Fatalf("%+v, want admitted", a)
	}
	if got := e.KeyReserved(1); got != [3]int64{1, 20, 500} {
		t.Fatalf("reserved %v, want [1 20 500]", got)
	}
	e.Finish(at(0), a.ID, Outcome{Kind: OK, OutputTokens: 7, UsageKnown: true})
	if got := e.KeyReserved(1); got != [3]int64{} {
		t.Fatalf("reserved %v after the answer, want none", got)
	}
}

// A request degraded to another model keeps the answers it asked for.
func TestDegradeKeepsChoices(t *testing.T) {
	r := Request{Key: 1, MaxOutput: 100, Choices: 4}
	got := Degrading{To: "small"}.Apply(r, Route{}, at(0), 0)
	if got.Choices != 4 || got.MaxOutput != 100 {
		t.Fatalf("degraded request asks for %d answers of %d, want 4 of 100", got.Choices, got.MaxOutput)
	}
}
