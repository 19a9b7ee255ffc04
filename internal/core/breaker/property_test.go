package breaker

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// randomRun drives a breaker with a random but seeded host: calls,
// outcomes of every kind, in-flight slow flags, double and unknown
// reports, ticks on time and late, idle gaps, and a now that sometimes
// runs backwards. It checks the invariants after every step and returns
// every transition.
func randomRun(t *testing.T, cfg Config, seed uint64, steps int) []Transition {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	sick := []float64{0.02, 0.2, 0.6}[seed%3] // how often a call goes badly
	b := mustNew(t, cfg)
	st, _ := resolve(cfg)
	now := t0
	var held []Ticket
	var all []Transition
	var entered time.Time // when the current state was entered
	for i := range steps {
		switch n := r.IntN(100); {
		case n < 2:
			now = now.Add(time.Duration(r.Int64N(int64(3 * time.Minute))))
		case n < 4:
			now = now.Add(-time.Duration(r.Int64N(int64(5 * time.Second)))) // the breaker must clamp
		default:
			now = now.Add(time.Duration(r.Int64N(int64(700 * time.Millisecond))))
		}
		op := r.IntN(100)
		switch {
		case op < 40:
			if tk, err := b.Allow(now); err == nil {
				held = append(held, tk)
			}
		case op < 70 && len(held) > 0:
			j := r.IntN(len(held))
			o := Outcome{Kind: OK, Latency: 50*time.Millisecond + time.Duration(r.Int64N(int64(850*time.Millisecond)))}
			switch k := r.IntN(20); {
			case r.Float64() < sick:
				o = Outcome{Kind: Kind(r.IntN(2)), Latency: 5*time.Second + time.Duration(r.Int64N(int64(10*time.Second)))}
			case k < 2:
				o.Kind = RateLimited
			case k < 3:
				o.Kind = Cancelled
			case k < 5:
				o.Latency = 0 // since Allow: may be slow
			}
			if !b.Done(now, held[j], o) {
				t.Fatalf("step %d: Done refused a held ticket", i)
			}
			if b.Done(now, held[j], o) {
				t.Fatalf("step %d: a second Done was accepted", i)
			}
			held = append(held[:j], held[j+1:]...)
		case op < 80 && len(held) > 0 && r.Float64() < sick:
			b.Slow(now, held[r.IntN(len(held))])
		case op < 90:
			if next, ok := b.NextTimer(); ok && r.IntN(2) == 0 && next.After(now) {
				now = next
			}
			b.Tick(now)
		case op < 92:
			if b.Done(now, Ticket{}, Outcome{}) || b.Slow(now, Ticket{}) {
				t.Fatalf("step %d: the zero Ticket was accepted", i)
			}
		default:
			b.Stats(now)
		}
		clamped := b.last // time never runs backwards inside the breaker
		w := b.Weight(now)
		state, step := b.State(now)
		if w < 0 || w > 1 {
			t.Fatalf("step %d: weight %v", i, w)
		}
		var ok bool
		switch state {
		case Closed:
			ok = w == 1 && step == len(st.Steps)-1
		case Open, HalfOpen:
			ok = w == 0 && step == -1
		case Recovering:
			ok = w > 0 && w < 1 && step >= 0 && w == st.Steps[step]
		}
		if !ok {
			t.Fatalf("step %d: state %v step %d with weight %v", i, state, step, w)
		}
		s := b.Stats(now)
		if s.Errors+s.Slow > s.Calls || s.ErrorRate > 1 || s.SlowRate > 1 || s.InFlight != len(held) {
			t.Fatalf("step %d: stats %+v with %d held tickets", i, s, len(held))
		}
		for _, tr := range b.Transitions() {
			if n := len(all); n > 0 && (tr.From != all[n-1].To || tr.At.Before(all[n-1].At)) {
				t.Fatalf("step %d: transition %+v does not follow %+v", i, tr, all[n-1])
			}
			all, entered = append(all, tr), tr.At
		}
		next, ok := b.NextTimer()
		if ok && !next.After(clamped) {
			t.Fatalf("step %d: NextTimer %v is not after now %v (%v)", i, next.Sub(t0), clamped.Sub(t0), state)
		}
		// Never stuck: Open and HalfOpen always have a deadline, bounded
		// by OpenForMax and HalfOpenMaxWait from their start.
		switch state {
		case Open:
			ok = ok && !next.After(entered.Add(st.OpenForMax))
		case HalfOpen:
			if st.Steady {
				// Steady half-open waits for the host's probes: it must
				// always have one to grant, or one in flight to time out.
				_, probe := b.NextProbe()
				ok = ok || probe
			} else {
				ok = ok && !next.After(entered.Add(st.HalfOpenMaxWait))
			}
		default:
			ok = true
		}
		if !ok {
			t.Fatalf("step %d: %v since %v with timer %v", i, state, entered.Sub(t0), next.Sub(t0))
		}
	}
	return all
}

func TestPropertyInvariantsAndDeterminism(t *testing.T) {
	configs := []Config{
		{},
		{SlowThreshold: 3 * time.Second},
		{Window: 5 * time.Second, MinCalls: 3, Probes: 1, OpenFor: time.Second, OpenForMax: 4 * time.Second,
			HalfOpenMaxWait: 2 * time.Second, StepHold: time.Second, Steps: []float64{0.5}, ErrorRate: 0.3, SlowRate: 0.9},
		{MinCalls: 5, Probes: 2, ProbeTimeout: 500 * time.Millisecond, Steps: []float64{1}, SlowFloor: 100 * time.Millisecond},
		{Steady: true, SlowThreshold: time.Second},
	}
	for ci, cfg := range configs {
		t.Run(fmt.Sprintf("config %d", ci), func(t *testing.T) {
			states := map[State]bool{}
			for seed := range uint64(20) {
				first := randomRun(t, cfg, seed, 3000)
				second := randomRun(t, cfg, seed, 3000)
				if len(first) != len(second) {
					t.Fatalf("seed %d: %d then %d transitions", seed, len(first), len(second))
				}
				for i := range first {
					a, b := first[i], second[i]
					a.At, b.At = t0, t0
					if a != b || !first[i].At.Equal(second[i].At) {
						t.Fatalf("seed %d: transition %d differs: %+v vs %+v", seed, i, first[i], second[i])
					}
				}
				for _, tr := range first {
					states[tr.To] = true
				}
			}
			// The random host must actually exercise the machine.
			st, _ := resolve(cfg)
			for _, s := range []State{Open, HalfOpen, Recovering, Closed} {
				if !states[s] && (s != Recovering || len(st.Steps) > 1) {
					t.Errorf("no run reached %v", s)
				}
			}
		})
	}
}

// The memoised, sliding sums agree with a full pass over the ring
// whatever the order of counts and queries.
func TestHistorySumsMatchAFullPass(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	h := newHistory(historyWidth)
	h.origin = t0
	now := t0
	for range 20000 {
		switch rng.IntN(4) {
		case 0:
			now = now.Add(time.Duration(rng.IntN(400)) * time.Millisecond)
		case 1:
			start := now.Add(-time.Duration(rng.IntN(30_000)) * time.Millisecond)
			h.add(start, counts{calls: 1, slow: rng.IntN(2)})
		default:
			which := rng.IntN(2)
			to := now.Add(-time.Duration(which*rng.IntN(3000)) * time.Millisecond)
			from := to.Add(-12 * time.Second)
			got := h.sum(which, int64(from.Sub(t0)), int64(to.Sub(t0)))
			want := h.span(h.index(from), h.index(to), 1)
			if got != want {
				t.Fatalf("sum(%v, %v) = %+v, a full pass says %+v", from.Sub(t0), to.Sub(t0), got, want)
			}
		}
	}
}

// TestLatenciesStaySorted: once the p95 has been read, after every
// sample the sorted copy is the ring's values in order, however the new sample falls against the one
// it replaces (above, below, equal, duplicates).
func TestLatenciesStaySorted(t *testing.T) {
	for _, first := range []int{0, 10, HealthySamples + 10} { // the p95's first reader comes then
		rng := rand.New(rand.NewPCG(7, 11))
		var l latencies
		for n := range 5 * HealthySamples {
			l.add(time.Duration(rng.IntN(40)) * time.Millisecond) // few values: many ties
			if n < first {
				continue
			}
			want := slices.Sorted(slices.Values(l.ring))
			if got := l.p95(); got != want[(95*len(want)+99)/100-1] || !slices.Equal(l.sorted, want) {
				t.Fatalf("first read at %d, after %d samples: p95 %v, sorted %v; the ring sorted is %v", first, n+1, got, l.sorted, want)
			}
		}
	}
}

// TestLatenciesReadAfterAPause: a reader that stops for longer than the
// sorted copy is kept, then comes back, reads the same p95 as the ring
// holds.
func TestLatenciesReadAfterAPause(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	var l latencies
	for n := range 3 * unreadMax {
		l.add(time.Duration(rng.IntN(1000)) * time.Millisecond)
		if n%7 != 0 || (n > unreadMax/2 && n < 2*unreadMax) {
			continue // reads now and then, with a long pause
		}
		want := slices.Sorted(slices.Values(l.ring))
		if got := l.p95(); got != want[(95*len(want)+99)/100-1] || !slices.Equal(l.sorted, want) {
			t.Fatalf("after %d samples: p95 %v, the ring's is %v", n+1, got, want[(95*len(want)+99)/100-1])
		}
	}
}
