package lifecycle

import (
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/quota"
)

// Screen refuses what Arrive would refuse for its budgets, and no more;
// at the floor it refuses only what no count could let through.
func TestScreen(t *testing.T) {
	e := budgetEngine(Budgets{Keys: []quota.Limits{perMinute(0, 6000, 0), perMinute(1, 0, 0)}})
	r := Request{Targets: []int{0}, Key: 1, InputTokens: 4000, MaxOutput: 100}
	first, _ := e.Arrive(at(0), r)
	if first.Verdict != admission.Admitted {
		t.Fatalf("first request %+v, want admitted", first)
	}
	// 2,000 input tokens are left: the floor passes (a count of 2,000
	// or less would be admitted), the counted request does not.
	if _, ok := e.Screen(at(0), Floor(r)); !ok {
		t.Fatal("the floor refused with 2,000 tokens left")
	}
	s, ok := e.Screen(at(0), r)
	if ok {
		t.Fatal("4,000 tokens screened through with 2,000 left")
	}
	// The screen's refusal is Arrive's, and it took nothing.
	a, _ := e.Arrive(at(0), r)
	if a.Verdict != admission.Rejected || s.Refusal != a.Refusal || s.Budget != a.Budget {
		t.Fatalf("screen %+v, arrival %+v: want the same refusal", s, a)
	}
	if st, _ := e.KeyStatus(at(0), 1); st[quota.InputTokens].Remaining != 2000 {
		t.Fatalf("after screening: %d input tokens left, want 2000", st[quota.InputTokens].Remaining)
	}
	// A key out of requests is refused at the floor, with the wait.
	k2 := Request{Targets: []int{0}, Key: 2, MaxOutput: 100}
	if a, _ := e.Arrive(at(0), k2); a.Verdict != admission.Admitted {
		t.Fatalf("key 2's first request %+v, want admitted", a)
	}
	f, ok := e.Screen(at(0), Floor(k2))
	if ok || f.Refusal.Reason != admission.ReasonKeyBudget || f.Budget.Dimension != quota.Requests || f.Refusal.RetryAfter != time.Minute {
		t.Fatalf("floor of a key out of requests: %+v, %v; want refused for requests, retry after 1m", f, ok)
	}
	// A key in debt in a dimension is refused at the floor too: a zero
	// cost does not pass a budget in debt.
	e.Finish(at(0), first.ID, Outcome{Kind: OK, UsageKnown: true, InputTokens: 9000})
	if f, ok := e.Screen(at(0), Floor(r)); ok || f.Budget.Dimension != quota.InputTokens {
		t.Fatalf("floor of a key in debt: %+v, %v; want refused for input tokens", f, ok)
	}
}
