package brake

import (
	"testing"
	"time"
)

// A budget lends its burst, then one retry per 1/ratio requests.
func TestRetryBudget(t *testing.T) {
	b := NewRetryBudget(0.5, 2)
	for i := range 2 {
		if !b.Spend() {
			t.Fatalf("retry %d of the burst refused", i+1)
		}
	}
	if b.Spend() {
		t.Fatal("a retry past the burst went out with no request earning it")
	}
	b.Earn()
	if b.Spend() {
		t.Fatal("half a token paid for a retry")
	}
	b.Earn()
	if !b.Spend() {
		t.Fatal("two requests at 0.5 did not earn a retry")
	}
}

// The throttle sheds nothing while the server accepts, sheds with the
// SRE book's probability while it refuses, and forgets past its window.
func TestThrottle(t *testing.T) {
	th := NewThrottle(2, time.Minute, 6)
	now := time.Unix(1000, 0)
	for range 10 {
		th.Add(now, true)
	}
	if p, _, _ := th.Probability(now); p != 0 {
		t.Fatalf("all accepted: p = %v, want 0", p)
	}
	for range 30 {
		th.Add(now, Accepted(503))
	}
	// (40 − 2·10) / 41
	if p, reqs, acc := th.Probability(now); reqs != 40 || acc != 10 || p != 20.0/41 {
		t.Fatalf("p, reqs, acc = %v, %v, %v; want %v, 40, 10", p, reqs, acc, 20.0/41)
	}
	if shed, _, _, _ := th.Shed(now, 0.99); shed {
		t.Fatal("shed with a draw above p")
	}
	if p, reqs, _ := th.Probability(now.Add(2 * time.Minute)); p != 0 || reqs != 0 {
		t.Fatalf("two windows later: p = %v over %v requests, want nothing counted", p, reqs)
	}
}

func TestAccepted(t *testing.T) {
	for status, want := range map[int]bool{0: false, 200: true, 400: true, 429: false, 500: true, 503: false, 529: false} {
		if Accepted(status) != want {
			t.Errorf("Accepted(%d) = %v, want %v", status, !want, want)
		}
	}
}
