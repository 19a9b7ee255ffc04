package spend

import (
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/core/price"
)

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Skipf("time zone %s not installed: %v", name, err)
	}
	return loc
}

func TestDailyWindowEdges(t *testing.T) {
	l := Limit{Scope: "key", Name: "k", Window: Daily, Amount: 1e6}
	before := time.Date(2026, 12, 3, 23, 59, 59, 999999999, time.UTC)
	after := before.Add(time.Nanosecond)
	a, b := Plan([]Limit{l}, before, nil)[0], Plan([]Limit{l}, after, nil)[0]
	if a.Reserve.ID != "key:k:d:2026-12-03" || b.Reserve.ID != "key:k:d:2026-12-04" {
		t.Fatalf("buckets either side of midnight: %s, %s", a.Reserve.ID, b.Reserve.ID)
	}
	if !a.Ends.Equal(after) {
		t.Fatalf("the day ends at %v, want %v", a.Ends, after)
	}
	if !a.Reserve.Expires.Equal(after.Add(Grace)) {
		t.Fatalf("expires %v", a.Reserve.Expires)
	}
}

// In a zone with daylight saving, a day is 23 or 25 hours, and the
// window follows the zone's midnight, not UTC's.
func TestDailyWindowAcrossDST(t *testing.T) {
	ny := mustZone(t, "America/New_York")
	l := Limit{Scope: "team", Name: "t", Window: Daily, Amount: 1e6}
	// 2026-03-08: clocks go forward at 02:00; the day has 23 hours.
	spring := time.Date(2026, 3, 8, 12, 0, 0, 0, ny)
	n := Plan([]Limit{l}, spring, ny)[0]
	start := time.Date(2026, 3, 8, 0, 0, 0, 0, ny)
	if got := n.Ends.Sub(start); got != 23*time.Hour {
		t.Fatalf("spring-forward day lasts %v, want 23h", got)
	}
	// 2026-11-01: clocks go back; 25 hours.
	fall := time.Date(2026, 11, 1, 23, 30, 0, 0, ny)
	n = Plan([]Limit{l}, fall, ny)[0]
	if got := n.Ends.Sub(time.Date(2026, 11, 1, 0, 0, 0, 0, ny)); got != 25*time.Hour {
		t.Fatalf("fall-back day lasts %v, want 25h", got)
	}
	if n.Reserve.ID != "team:t:d:2026-11-01" {
		t.Fatalf("bucket %s", n.Reserve.ID)
	}
	// 03:30 UTC on 2 Nov is still 1 Nov in New York (22:30 EST).
	utc := time.Date(2026, 11, 2, 3, 30, 0, 0, time.UTC)
	if id := Plan([]Limit{l}, utc, ny)[0].Reserve.ID; id != "team:t:d:2026-11-01" {
		t.Fatalf("UTC 03:30 on 2 Nov is in New York's %s, want 2026-11-01", id)
	}
	if id := Plan([]Limit{l}, utc, time.UTC)[0].Reserve.ID; id != "team:t:d:2026-11-02" {
		t.Fatalf("in UTC: %s", id)
	}
}

func TestMonthlyWindowEnds(t *testing.T) {
	l := Limit{Scope: "key", Name: "k", Window: Monthly, Amount: 1e6}
	for _, c := range []struct {
		at   time.Time
		id   string
		ends time.Time
	}{
		{time.Date(2026, 1, 31, 23, 0, 0, 0, time.UTC), "key:k:m:2026-01", time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)},
		{time.Date(2028, 2, 29, 12, 0, 0, 0, time.UTC), "key:k:m:2028-02", time.Date(2028, 3, 1, 0, 0, 0, 0, time.UTC)},
		{time.Date(2026, 12, 31, 23, 59, 59, 0, time.UTC), "key:k:m:2026-12", time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
		{time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), "key:k:m:2027-01", time.Date(2027, 2, 1, 0, 0, 0, 0, time.UTC)},
	} {
		n := Plan([]Limit{l}, c.at, nil)[0]
		if n.Reserve.ID != c.id || !n.Ends.Equal(c.ends) {
			t.Errorf("at %v: %s ending %v, want %s ending %v", c.at, n.Reserve.ID, n.Ends, c.id, c.ends)
		}
	}
	// Tokyo's month begins nine hours before UTC's.
	tokyo := mustZone(t, "Asia/Tokyo")
	at := time.Date(2026, 11, 30, 16, 0, 0, 0, time.UTC) // 1 Dec 01:00 in Tokyo
	if id := Plan([]Limit{l}, at, tokyo)[0].Reserve.ID; id != "key:k:m:2026-12" {
		t.Fatalf("Tokyo: %s", id)
	}
}

// A rolling window counts Sub+1 sub-buckets: a spend is remembered for
// at least the span and at most a sub-bucket longer.
func TestRollingWindow(t *testing.T) {
	l := Limit{Scope: "key", Name: "k", Window: Rolling, Span: 24 * time.Hour, Amount: 10e6}
	t0 := time.Date(2026, 12, 3, 10, 30, 0, 0, time.UTC)
	n0 := Plan([]Limit{l}, t0, nil)[0]
	if len(n0.Count) != Sub+1 || n0.Count[Sub] != n0.Reserve {
		t.Fatalf("%d buckets counted", len(n0.Count))
	}
	spentIn := n0.Reserve.ID
	counted := func(at time.Time) bool {
		for _, b := range Plan([]Limit{l}, at, nil)[0].Count {
			if b.ID == spentIn {
				return true
			}
		}
		return false
	}
	if !counted(t0.Add(24 * time.Hour)) {
		t.Fatal("a spend was forgotten before the span passed")
	}
	if counted(t0.Add(25*time.Hour + time.Minute)) {
		t.Fatal("a spend was remembered more than a sub-bucket past the span")
	}
	// The reset: with 12 $ in the oldest sub-bucket and 1 $ in the
	// current one, the window falls below 10 $ when the oldest leaves,
	// at the end of the current sub-bucket.
	amounts := make([]price.Micros, Sub+1)
	amounts[0], amounts[Sub] = 12e6, 1e6
	r := Decide([]Need{n0}, Totals{amounts})
	if r == nil || r.Spent != 13e6 || !r.Reset.Equal(n0.Ends) {
		t.Fatalf("refusal %+v, want 13 $ spent, reset at %v", r, n0.Ends)
	}
	// With the spend in the third-oldest, it resets two sub-buckets later.
	amounts[0], amounts[2] = 0, 12e6
	r = Decide([]Need{n0}, Totals{amounts})
	if want := n0.Ends.Add(2 * time.Hour); r == nil || !r.Reset.Equal(want) {
		t.Fatalf("reset %v, want %v", r.Reset, want)
	}
	if !n0.Reserve.Expires.After(t0.Add(25 * time.Hour)) {
		t.Fatalf("a sub-bucket expires at %v, while still counted", n0.Reserve.Expires)
	}
}

// Under the limit a request is admitted whatever its size; at or over
// it, refused, naming the limit, the spend and the reset.
func TestDecideAndRefusal(t *testing.T) {
	key := Limit{Scope: "key", Name: "search", Window: Daily, Amount: 10e6}
	team := Limit{Scope: "team", Name: "ads", Window: Monthly, Amount: 100e6}
	now := time.Date(2026, 12, 3, 15, 0, 0, 0, time.UTC)
	needs := Plan([]Limit{key, team}, now, nil)
	if r := Decide(needs, Totals{{9999999}, {0}}); r != nil {
		t.Fatalf("refused under the limit: %+v", r)
	}
	r := Decide(needs, Totals{{1e6}, {100e6}})
	if r == nil || r.Limit != team || r.Spent != 100e6 {
		t.Fatalf("want the team's monthly refusal, got %+v", r)
	}
	if want := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC); !r.Reset.Equal(want) {
		t.Fatalf("reset %v", r.Reset)
	}
	msg := r.Message(nil)
	for _, s := range []string{`team "ads"'s monthly spend limit`, "$100.00 of $100.00 spent", "2027-01-01T00:00:00Z"} {
		if !strings.Contains(msg, s) {
			t.Errorf("message %q lacks %q", msg, s)
		}
	}
	if ra := r.RetryAfter(now); ra != time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC).Sub(now) {
		t.Fatalf("retry after %v", ra)
	}
	r = Decide(needs, Totals{{10500000}, {0}})
	if r == nil || r.Limit != key || !strings.Contains(r.Message(nil), "$10.50 of $10.00") {
		t.Fatalf("key refusal %+v", r)
	}
}

func TestWarn(t *testing.T) {
	a := Limit{Scope: "key", Name: "k", Window: Daily, Amount: 10e6}
	b := Limit{Scope: "team", Name: "t", Window: Monthly, Amount: 100e6, Soft: 0.5}
	needs := Plan([]Limit{a, b}, time.Unix(0, 0), nil)
	if _, ok := Warn(needs, Totals{{7e6}, {40e6}}); ok {
		t.Fatal("warned below both thresholds")
	}
	w, ok := Warn(needs, Totals{{8e6}, {60e6}})
	if !ok || w.Limit != a || w.Share != 0.8 {
		t.Fatalf("want the key's 80%%, got %+v", w)
	}
	if h := w.Header(); h != `scope=key; name="k"; window=daily; spent=0.80` {
		t.Fatalf("header %q", h)
	}
}

func TestMaxCost(t *testing.T) {
	cheap := price.Price{Input: 1, Output: 2}
	dear := price.Price{Input: 3, Output: 15}
	r := Request{Input: 1000, Choices: 2, MaxOutput: 500}
	// The dear target: 1000 x 3 + 2 x 500 x 15 = 18000 µ$.
	if got := MaxCost(r, []price.Price{cheap, dear}); got != 18000 {
		t.Fatalf("max cost %d", got)
	}
	r.MaxOutput = 0
	if got := MaxCost(r, []price.Price{dear}); got != 3000+2*DefaultMaxOutput*15 {
		t.Fatalf("without max_tokens: %d", got)
	}
	r.DefaultOutput = 100
	if got := MaxCost(r, []price.Price{dear}); got != 3000+2*100*15 {
		t.Fatalf("with default_max_tokens: %d", got)
	}
	if got := MaxCost(Request{Input: 10, MaxOutput: -1}, []price.Price{dear}); got != 30 {
		t.Fatalf("embeddings: %d", got)
	}
}

func TestDollars(t *testing.T) {
	for m, want := range map[price.Micros]string{10e6: "$10.00", 1234: "$0.001234", 20000: "$0.02", 12345678: "$12.35"} {
		if got := Dollars(m); got != want {
			t.Errorf("Dollars(%d) = %s, want %s", m, got, want)
		}
	}
}
