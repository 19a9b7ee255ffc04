package breaker

import (
	"testing"
	"time"
)

// flapSim drives one breaker with a steady stream of calls to a provider
// whose latency alternates between healthy and slow every period, as a
// gateway host would: a router that sends each arrival with probability
// Weight (by a deterministic credit), offers arrivals as probes while
// HalfOpen, flags calls Slow at their SlowAfter, and Ticks at NextTimer.
type flapSim struct {
	b      *Breaker
	period time.Duration
	lat    func(since time.Duration) time.Duration // overrides period
	credit float64
	flight []flapCall
	trans  []Transition
}

type flapCall struct {
	tk      Ticket
	start   time.Time
	end     time.Time
	flagged bool
}

func (s *flapSim) latency(now time.Time) time.Duration {
	if s.lat != nil {
		return s.lat(now.Sub(t0))
	}
	if (now.Sub(t0)/s.period)%2 == 0 {
		return 400 * time.Millisecond
	}
	return 6 * time.Second
}

func (s *flapSim) run(t *testing.T, d, step time.Duration) {
	for now := t0; now.Before(t0.Add(d)); now = now.Add(step) {
		if next, ok := s.b.NextTimer(); ok && !next.After(now) {
			s.b.Tick(now)
			if n2, ok := s.b.NextTimer(); ok && !n2.After(now) {
				t.Fatalf("at %v: NextTimer %v not after Tick", now.Sub(t0), n2.Sub(t0))
			}
		}
		live := s.flight[:0]
		for _, c := range s.flight {
			switch {
			case !c.end.After(now):
				s.b.Done(now, c.tk, Outcome{Kind: OK, Latency: c.end.Sub(c.start)})
				continue
			case !c.flagged && now.Sub(c.start) > c.tk.SlowAfter():
				s.b.Slow(now, c.tk)
				c.flagged = true
			}
			live = append(live, c)
		}
		s.flight = live
		send := false
		if st, _ := s.b.State(now); st == HalfOpen {
			send = true // offered as a probe; Allow rations
		} else if w := s.b.Weight(now); w > 0 {
			if s.credit += w; s.credit >= 1 {
				s.credit--
				send = true
			}
		} else {
			s.credit = 0
		}
		if send {
			if tk, err := s.b.Allow(now); err == nil {
				s.flight = append(s.flight, flapCall{tk: tk, start: now, end: now.Add(s.latency(now))})
			}
		}
		s.trans = append(s.trans, s.b.Transitions()...)
	}
}

// A provider alternating 5 s healthy / 5 s slow for ten minutes at 20
// calls/s. Each failed recovery doubles the open time (10, 20, 40, 80,
// then 120 s), and the open periods after the first trip add up to 630 s
// > 600 s after at most 8 of them. Between two opens a cycle makes at
// most 3 transitions (open_elapsed, probes_ok, the re-trip; or
// open_elapsed and a probe failure): a step cannot be calm for a whole
// 10 s hold when every 10 s holds a slow phase. So at most 1 + 8×3 = 25
// transitions, against ~40 cycles without backoff.
func TestFlappingProviderDoesNotFlap(t *testing.T) {
	tests := []struct {
		name     string
		cfg      Config
		maxTrans int
	}{
		{"derived threshold", Config{}, 25},
		{"fixed threshold", Config{SlowThreshold: 2 * time.Second}, 25},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &flapSim{b: mustNew(t, tc.cfg), period: 5 * time.Second}
			s.run(t, 10*time.Minute, 50*time.Millisecond)
			if len(s.trans) == 0 || s.trans[0].Reason != ReasonSlowRate {
				t.Fatalf("first transition %q, want a slow_rate trip", trail(s.trans))
			}
			if len(s.trans) > tc.maxTrans {
				t.Errorf("%d transitions, want at most %d: %s", len(s.trans), tc.maxTrans, trail(s.trans))
			}
			maxWeight := 0.0
			for i, tr := range s.trans[1:] {
				if tr.From != s.trans[i].To {
					t.Fatalf("transition %d starts from %v, previous ended in %v", i+1, tr.From, s.trans[i].To)
				}
				if tr.Reason == ReasonProbesOK && (tr.Step != 0 || tr.Weight != 0.10) {
					t.Errorf("a fail-back started at step %d (weight %v), want the first step", tr.Step, tr.Weight)
				}
				maxWeight = max(maxWeight, tr.Weight)
			}
			// Hysteresis: after the first trip, the flapping provider never
			// gets past the first step.
			if maxWeight > 0.10 {
				t.Errorf("weight reached %v while flapping: %s", maxWeight, trail(s.trans))
			}
			t.Logf("%d transitions: %s", len(s.trans), trail(s.trans))
		})
	}
}

// The same run without backoff (OpenForMax = OpenFor) still never
// climbs past the first step, but retries every cycle: backoff is what
// keeps the count small.
func TestFlappingWithoutBackoff(t *testing.T) {
	s := &flapSim{b: mustNew(t, Config{OpenForMax: DefaultOpenFor}), period: 5 * time.Second}
	s.run(t, 10*time.Minute, 50*time.Millisecond)
	for _, tr := range s.trans {
		if tr.Weight > 0.10 {
			t.Fatalf("weight reached %v: %s", tr.Weight, trail(s.trans))
		}
	}
	// Each cycle lasts at least OpenFor, so at most 600/10 cycles.
	if len(s.trans) > 1+60*3 {
		t.Errorf("%d transitions", len(s.trans))
	}
	t.Logf("%d transitions without backoff", len(s.trans))
}

// A brownout from 60 s to 180 s: the breaker trips on in-flight flags
// (a 30 s window at a 50% threshold needs about 15 s of slow calls), and
// fails back through every step once the provider is healthy again.
func TestBrownoutThenRecovery(t *testing.T) {
	s := &flapSim{b: mustNew(t, Config{}), lat: func(d time.Duration) time.Duration {
		if d >= time.Minute && d < 3*time.Minute {
			return 6 * time.Second
		}
		return 400 * time.Millisecond
	}}
	s.run(t, 10*time.Minute, 50*time.Millisecond)
	if len(s.trans) == 0 {
		t.Fatal("the brownout never tripped the breaker")
	}
	first := s.trans[0]
	if first.Reason != ReasonSlowRate || first.At.Sub(t0) > 78*time.Second {
		t.Errorf("first transition %s at %v, want a slow_rate trip by 78s", first.Reason, first.At.Sub(t0))
	}
	last := s.trans[len(s.trans)-1]
	if last.Reason != ReasonRecovered || last.At.Sub(t0) > 340*time.Second {
		t.Errorf("last transition %s at %v, want recovered by 340s: %s", last.Reason, last.At.Sub(t0), trail(s.trans))
	}
	var weights []float64
	for _, tr := range s.trans {
		if tr.Reason == ReasonStepUp || tr.Reason == ReasonRecovered {
			weights = append(weights, tr.Weight)
		}
	}
	if len(weights) != 3 || weights[0] != 0.25 || weights[1] != 0.5 || weights[2] != 1 {
		t.Errorf("fail-back weights %v, want [0.25 0.5 1]", weights)
	}
	t.Logf("%s", trail(s.trans))
	for _, tr := range s.trans {
		t.Logf("%v %s", tr.At.Sub(t0), tr.Reason)
	}
}
