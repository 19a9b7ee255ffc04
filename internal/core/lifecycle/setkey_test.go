package lifecycle

import (
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/core/quota"
)

// A key added while the engine runs gets a budget of its limits; the
// same limits again keep its state; new limits start a full budget.
func TestSetKey(t *testing.T) {
	now := time.Unix(1000, 0)
	rpm := func(n int64) quota.Limits {
		return quota.Limits{quota.Requests: {PerMinute: n, Burst: n}, quota.OutputTokens: {PerMinute: 500, Burst: 500}}
	}
	e := New(Config{Budgets: Budgets{Keys: []quota.Limits{rpm(10)}}, KeyTenants: []int{1}})
	if _, ok := e.KeyStatus(now, 3); ok {
		t.Fatal("key 3 has a budget before it is set")
	}
	e.SetKey(3, rpm(2), 2)
	if e.tenant(Request{Key: 3}) != 2 || e.tenant(Request{Key: 2}) != 0 {
		t.Fatal("tenants not set")
	}
	if c := e.Reservation(Request{Key: 3}); c.OutputTokens != 500 {
		t.Fatalf("a request of key 3 without max_tokens reserves %d output tokens, want its budget's 500", c.OutputTokens)
	}
	if _, _, ok := e.books.reserveFor(now, Request{Key: 3}); !ok {
		t.Fatal("first request refused")
	}
	e.SetKey(3, rpm(2), 2)
	if st, _ := e.KeyStatus(now, 3); st[quota.Requests].Remaining != 1 {
		t.Fatalf("same limits again: %d requests left, want 1 (state kept)", st[quota.Requests].Remaining)
	}
	e.SetKey(3, rpm(5), 2)
	if st, _ := e.KeyStatus(now, 3); st[quota.Requests].Remaining != 5 {
		t.Fatalf("new limits: %d requests left, want a full 5", st[quota.Requests].Remaining)
	}
	e.SetKey(3, quota.Limits{}, 2)
	if _, ok := e.KeyStatus(now, 3); ok {
		t.Fatal("a key set to no limits keeps a budget")
	}
	if st, _ := e.KeyStatus(now, 1); st[quota.Requests].Limit != 10 {
		t.Fatal("the configured key's budget changed")
	}
}
