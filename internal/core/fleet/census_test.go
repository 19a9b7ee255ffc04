package fleet

import (
	"testing"
	"time"
)

// The census, step by step: a count that rises is believed at once, one
// that falls only once it has stood for Hold; an outage freezes the
// count, and the count known before it holds for Hold after the store
// is back, however long it was away (a store restarted empty, or
// resumed from a stall, has heard from only the first replicas back).
func TestCensusLargestRecent(t *testing.T) {
	const hold = 3 * time.Second
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	type step struct {
		name string
		ms   int
		n    int // observed count; 0: a heartbeat that did not reach the store; -1: only ask
		want int
	}
	for _, c := range []struct {
		name  string
		steps []step
	}{
		{"nothing seen counts one", []step{{"before any beat", 0, -1, 1}}},
		{"a rise is believed at once", []step{
			{"alone", 0, 1, 1}, {"a second replica", 1000, 2, 2}, {"a third", 2000, 3, 3},
		}},
		{"a fall is believed after hold", []step{
			{"three", 0, 3, 3}, {"one left", 1000, 2, 3}, {"still within hold of three", 2999, 2, 3},
			{"three has stood down for hold", 3000, 2, 2},
		}},
		{"a store back empty", []step{
			{"three", 0, 3, 3}, {"store gone", 1000, 0, 3}, {"still gone", 11000, 0, 3},
			// Back after 10 s: its memory holds only this replica, and
			// the last count within hold is 10 s old; the count before
			// the outage holds for hold after the store is back.
			{"back, empty", 12000, 1, 3}, {"others heartbeat again", 13000, 3, 3},
			{"before + hold", 15000, 3, 3}, {"a replica really left", 16000, 2, 3}, {"stood for hold", 19000, 2, 2},
		}},
		{"a stalled store", []step{
			{"two", 0, 2, 2}, {"stall", 1000, 0, 2}, {"stall", 2000, 0, 2},
			{"resumed: the others' entries pruned", 11000, 1, 2}, {"hold after resume", 14000, 1, 1},
		}},
		{"frozen while away, without new sightings", []step{
			{"four", 0, 4, 4}, {"gone", 500, 0, 4}, {"asked long after", 60000, -1, 4},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cs := Census{Hold: hold}
			for _, s := range c.steps {
				switch {
				case s.n > 0:
					cs.Observe(at(s.ms), s.n)
				case s.n == 0:
					cs.Lost(at(s.ms))
				}
				if got := cs.Count(at(s.ms)); got != s.want {
					t.Fatalf("%s at %d ms: count %d, want %d", s.name, s.ms, got, s.want)
				}
			}
		})
	}
}

// However the counts come, the census never divides by less than the
// count it saw last: a replica's share is never larger than the one
// the latest heartbeat implies.
func TestCensusNeverBelowLatest(t *testing.T) {
	cs := Census{Hold: time.Second}
	counts := []int{1, 3, 2, 5, 1, 1, 4, 2, 2, 2, 2, 7, 1}
	for i, n := range counts {
		now := t0.Add(time.Duration(i) * 400 * time.Millisecond)
		if i%5 == 4 {
			cs.Lost(now)
		}
		cs.Observe(now, n)
		if got := cs.Count(now); got < n {
			t.Fatalf("step %d: count %d below the %d just seen", i, got, n)
		}
	}
	if len(cs.seen) > 3 {
		t.Errorf("the census keeps %d sightings, want those within hold only", len(cs.seen))
	}
}

// A joining replica has joined an interval after its first heartbeat
// once every other live replica has heartbeated since that one, or
// after the liveness window whatever the others did.
func TestJoined(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	const iv = time.Second
	for _, c := range []struct {
		name   string
		now    time.Duration
		others []time.Duration
		want   bool
	}{
		{"alone, before an interval", 900 * time.Millisecond, nil, false},
		{"alone, after an interval", time.Second, nil, true},
		{"others heartbeated since, before an interval", 500 * time.Millisecond, []time.Duration{100 * time.Millisecond}, false},
		{"others heartbeated since", 1100 * time.Millisecond, []time.Duration{100 * time.Millisecond, 700 * time.Millisecond}, true},
		{"one has not", 1100 * time.Millisecond, []time.Duration{100 * time.Millisecond, -300 * time.Millisecond}, false},
		{"one has not, past the window", 3 * time.Second, []time.Duration{-300 * time.Millisecond}, true},
	} {
		others := make([]time.Time, len(c.others))
		for i, d := range c.others {
			others[i] = at(d)
		}
		if got := Joined(t0, at(c.now), iv, others); got != c.want {
			t.Errorf("%s: Joined = %v, want %v", c.name, got, c.want)
		}
	}
}
