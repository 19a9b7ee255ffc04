package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

const ms = time.Millisecond

// rampSteps: 20/s for a second, then a one-second ramp to 60/s, held. Over
// 3 s that is 20 + 40 + 60 = 120 requests.
var rampSteps = []Step{{At: 0, RPS: 20}, {At: time.Second, RPS: 60, Ramp: time.Second}}

func TestScheduleBoundaries(t *testing.T) {
	type at struct {
		t    time.Duration
		rate float64
	}
	for _, c := range []struct {
		name  string
		steps []Step
		rs    float64 // rps scale (default 1)
		ts    float64 // time scale (default 1)
		want  []at
	}{
		{name: "no steps: no traffic", want: []at{{0, 0}, {time.Hour, 0}}},
		{name: "zero before the first step, its rate from its At on",
			steps: []Step{{At: 2 * time.Second, RPS: 10}},
			want:  []at{{0, 0}, {2*time.Second - 1, 0}, {2 * time.Second, 10}, {time.Hour, 10}}},
		{name: "a step without a ramp applies at exactly its At",
			steps: []Step{{RPS: 20}, {At: time.Second, RPS: 5}},
			want:  []at{{time.Second - 1, 20}, {time.Second, 5}}},
		{name: "a ramp starts from the previous rate and holds its target",
			steps: rampSteps,
			want:  []at{{0, 20}, {999 * ms, 20}, {time.Second, 20}, {1500 * ms, 40}, {2 * time.Second, 60}, {time.Hour, 60}}},
		{name: "a first-step ramp starts from zero",
			steps: []Step{{RPS: 100, Ramp: 10 * time.Second}},
			want:  []at{{0, 0}, {5 * time.Second, 50}, {10 * time.Second, 100}}},
		{name: "a step cuts short the ramp it interrupts",
			steps: []Step{{At: time.Second, RPS: 10}, {At: 2 * time.Second, RPS: 50, Ramp: 2 * time.Second}, {At: 3 * time.Second, RPS: 0}},
			want:  []at{{500 * ms, 0}, {1500 * ms, 10}, {2500 * ms, 20}, {3*time.Second - 1, 30}, {3 * time.Second, 0}, {3500 * ms, 0}}},
		{name: "overlapping ramps: the second starts where the first stands",
			steps: []Step{{RPS: 100, Ramp: 10 * time.Second}, {At: 5 * time.Second, RPS: 0, Ramp: 10 * time.Second}},
			want:  []at{{5 * time.Second, 50}, {10 * time.Second, 25}, {15 * time.Second, 0}, {time.Hour, 0}}},
		{name: "steps sharing an At apply in order",
			steps: []Step{{RPS: 10}, {RPS: 30, Ramp: 2 * time.Second}},
			want:  []at{{0, 10}, {time.Second, 20}, {2 * time.Second, 30}}},
		{name: "scaled: times ×0.5, rates ×2/0.5",
			steps: rampSteps, rs: 2, ts: 0.5,
			want: []at{{499 * ms, 80}, {750 * ms, 160}, {time.Second, 240}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rs, ts := c.rs, c.ts
			if rs == 0 {
				rs = 1
			}
			if ts == 0 {
				ts = 1
			}
			s := NewSchedule(c.steps, rs, ts)
			for _, w := range c.want {
				if got := s.Rate(w.t); math.Abs(got-w.rate) > 1e-6 {
					t.Errorf("Rate(%v) = %v, want %v", w.t, got, w.rate)
				}
			}
		})
	}
}

func TestScheduleIntegral(t *testing.T) {
	s := NewSchedule(rampSteps, 1, 1)
	for _, c := range []struct {
		a, b time.Duration
		want float64
	}{
		{0, time.Second, 20},
		{time.Second, 2 * time.Second, 40},
		{0, 3 * time.Second, 120},
		{1500 * ms, 2500 * ms, 25 + 30}, // half a ramp from 40 to 60, half a second at 60
		{time.Second, time.Second, 0},
	} {
		if got := s.Integral(c.a, c.b); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("Integral(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
	if got := NewSchedule(rampSteps, 2, 0.5).Integral(0, 1500*ms); math.Abs(got-240) > 1e-9 {
		t.Errorf("scaled integral = %v, want 240: half the time, twice the requests", got)
	}
}

// all drains a run's arrivals.
func all(a *Arrivals) []time.Duration {
	var out []time.Duration
	for {
		t, ok := a.Next()
		if !ok {
			return out
		}
		out = append(out, t)
	}
}

func even(steps []Step, end time.Duration) []time.Duration {
	return all(NewArrivals(NewSchedule(steps, 1, 1), end, Even, nil))
}

func near(got, want time.Duration) bool { return (got - want).Abs() <= time.Microsecond }

func TestEvenArrivals(t *testing.T) {
	for _, c := range []struct {
		name  string
		steps []Step
		end   time.Duration
		n     int
		check map[int]time.Duration // arrival index (from 1) → time
	}{
		{name: "the first after one request's worth, the last on the end",
			steps: []Step{{RPS: 20}}, end: time.Second, n: 20,
			check: map[int]time.Duration{1: 50 * ms, 20: time.Second}},
		{name: "an end short of an arrival excludes it",
			steps: []Step{{RPS: 20}}, end: 999 * ms, n: 19},
		{name: "rounding cannot lose the arrival on the end",
			steps: []Step{{RPS: 3}}, end: 2 * time.Second, n: 6},
		{name: "a ramp follows the integral",
			// The 40th (the 20th in the ramp) lands where 20t + 20t² = 20.
			steps: rampSteps, end: 3 * time.Second, n: 120,
			check: map[int]time.Duration{40: time.Second + time.Duration((math.Sqrt(5)-1)/2*float64(time.Second)), 120: 3 * time.Second}},
		{name: "a fraction carries across a step",
			// 1.5 by 1 s; the second arrival when 1.5 + 3(t−1) = 2.
			steps: []Step{{RPS: 1.5}, {At: time.Second, RPS: 3}}, end: 1200 * ms, n: 2,
			check: map[int]time.Duration{1: 666667 * time.Microsecond, 2: 1166667 * time.Microsecond}},
		{name: "a gap with no traffic is skipped",
			steps: []Step{{RPS: 10}, {At: time.Second, RPS: 0}, {At: 5 * time.Second, RPS: 10}}, end: time.Hour, n: -1,
			check: map[int]time.Duration{10: time.Second, 11: 5100 * ms}},
		{name: "a ramp from zero",
			steps: []Step{{RPS: 100, Ramp: 10 * time.Second}}, end: 10 * time.Second, n: 500,
			// 5t² = 1 at t = √0.2.
			check: map[int]time.Duration{1: time.Duration(math.Sqrt(0.2) * float64(time.Second))}},
		{name: "a schedule that ends at zero runs out",
			steps: []Step{{RPS: 10}, {At: time.Second, RPS: 0}}, end: time.Hour, n: 10},
		{name: "no steps, no arrivals", end: time.Hour, n: 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := even(c.steps, c.end)
			if c.n >= 0 && len(got) != c.n {
				t.Errorf("%d arrivals, want %d", len(got), c.n)
			}
			for i, want := range c.check {
				if i > len(got) {
					t.Errorf("no arrival %d", i)
				} else if !near(got[i-1], want) {
					t.Errorf("arrival %d at %v, want %v", i, got[i-1], want)
				}
			}
			for i := 1; i < len(got); i++ {
				if got[i] < got[i-1] {
					t.Fatalf("arrival %d at %v comes before %v", i+1, got[i], got[i-1])
				}
			}
		})
	}
}

func poisson(steps []Step, end time.Duration, seed uint64) []time.Duration {
	return all(NewArrivals(NewSchedule(steps, 1, 1), end, Poisson, rand.New(rand.NewPCG(seed, 1))))
}

func count(ts []time.Duration, a, b time.Duration) int {
	n := 0
	for _, t := range ts {
		if t >= a && t < b {
			n++
		}
	}
	return n
}

func TestPoissonArrivals(t *testing.T) {
	ramp := []Step{{RPS: 1000, Ramp: 10 * time.Second}}
	for _, c := range []struct {
		name   string
		steps  []Step
		a, b   time.Duration
		expect float64 // the integral over [a, b)
	}{
		{"a held rate", []Step{{RPS: 200}}, 0, 50 * time.Second, 10000},
		{"the slow half of a ramp", ramp, 0, 5 * time.Second, 1250},
		{"the fast half of a ramp", ramp, 5 * time.Second, 10 * time.Second, 3750},
		{"a step up", []Step{{RPS: 10}, {At: 10 * time.Second, RPS: 1000}}, 10 * time.Second, 11 * time.Second, 1000},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Averaged over seeds, the count in [a, b) is the integral,
			// within five standard errors.
			const seeds = 20
			sum := 0
			for seed := range uint64(seeds) {
				sum += count(poisson(c.steps, c.b, seed), c.a, c.b)
			}
			mean := float64(sum) / seeds
			if se := math.Sqrt(c.expect / seeds); math.Abs(mean-c.expect) > 5*se {
				t.Errorf("mean count %.1f, want %.0f ± %.1f", mean, c.expect, 5*se)
			}
		})
	}
	t.Run("a gap drawn at a low rate does not leap over a step up", func(t *testing.T) {
		for seed := range uint64(20) {
			got := poisson([]Step{{RPS: 0.01}, {At: time.Second, RPS: 1000}}, time.Minute, seed)
			if len(got) == 0 || got[0] > 1100*ms {
				t.Fatalf("seed %d: first arrival at %v; at 1000/s from 1 s it comes within milliseconds", seed, got[0])
			}
		}
	})
	t.Run("seeded", func(t *testing.T) {
		a, b, c := poisson(ramp, 10*time.Second, 42), poisson(ramp, 10*time.Second, 42), poisson(ramp, 10*time.Second, 43)
		if len(a) != len(b) || a[len(a)/2] != b[len(b)/2] {
			t.Error("the same seed gave different arrivals")
		}
		if a[10] == c[10] {
			t.Error("different seeds gave the same arrivals")
		}
	})
}

func TestPerTick(t *testing.T) {
	for _, c := range []struct {
		name  string
		steps []Step
		ticks int
		want  []int
	}{
		{"whole arrivals per tick", []Step{{RPS: 20}}, 4, []int{2, 2, 2, 2}},
		{"a fraction carries to the next tick", []Step{{RPS: 15}}, 4, []int{1, 2, 1, 2}},
		{"0.1 s × 10/s is one, not 0.999…", []Step{{RPS: 10}}, 3, []int{1, 1, 1}},
		// The integral over each tick (100t² at 200/s²), not the rate at
		// its start, which would give 0, 2, 4, 6.
		{"a ramp accrues its integral", []Step{{RPS: 80, Ramp: 400 * ms}}, 4, []int{1, 3, 5, 7}},
		{"a step inside a tick", []Step{{RPS: 10}, {At: 150 * ms, RPS: 30}}, 3, []int{1, 2, 3}},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := NewArrivals(NewSchedule(c.steps, 1, 1), time.Hour, Even, nil)
			var got []int
			for i := range c.ticks {
				got = append(got, a.PerTick(time.Duration(i)*100*ms, 100*ms))
			}
			for i := range c.want {
				if got[i] != c.want[i] {
					t.Fatalf("per tick %v, want %v", got, c.want)
				}
			}
		})
	}
}

// TestPerTickSeed: seed 000 carries arrivals as a float sum of
// rate × tick / 1000 and admits while it holds a whole 1; at 20 req/s and
// 70 ms ticks the sum stands at 1.9999999999999996 at the fifth tick, so
// the seed admits one there and three at the sixth, where the integral
// gives two and two.
func TestPerTickSeed(t *testing.T) {
	sched := NewSchedule([]Step{{RPS: 20}}, 1, 1)
	seed := NewArrivals(sched, time.Hour, Even, nil)
	exact := NewArrivals(sched, time.Hour, Even, nil)
	var gotSeed, gotExact []int
	due, n := 0.0, 0
	for i := range 200 {
		at := time.Duration(i) * 70 * ms
		gotSeed = append(gotSeed, seed.PerTickSeed(at, 70*ms))
		gotExact = append(gotExact, exact.PerTick(at, 70*ms))
		// The seed's own loop.
		k := 0
		for due += 20.0 * 70 / 1000; due >= 1; due-- {
			k++
		}
		if gotSeed[i] != k {
			t.Fatalf("tick %d: %d arrivals, the seed's loop %d", i, gotSeed[i], k)
		}
		n += k
	}
	if gotSeed[4] != 1 || gotExact[4] != 2 {
		t.Errorf("fifth tick: seed %d (want 1), exact %d (want 2)", gotSeed[4], gotExact[4])
	}
	total := 0
	for _, k := range gotExact {
		total += k
	}
	if total != 280 || n > 280 || n < 279 {
		t.Errorf("200 ticks of 1.4: exact %d (want 280), seed %d", total, n)
	}
	// A ramp has no rate × tick: its integral is carried instead.
	ramp := NewArrivals(NewSchedule([]Step{{RPS: 80, Ramp: 400 * ms}}, 1, 1), time.Hour, Even, nil)
	var got []int
	for i := range 4 {
		got = append(got, ramp.PerTickSeed(time.Duration(i)*100*ms, 100*ms))
	}
	if fmt.Sprint(got) != "[1 3 5 7]" {
		t.Errorf("ramp: %v, want [1 3 5 7]", got)
	}
}

func TestParseSpacing(t *testing.T) {
	for in, want := range map[string]Spacing{"": Even, "even": Even, "poisson": Poisson} {
		if got, ok := ParseSpacing(in); !ok || got != want {
			t.Errorf("ParseSpacing(%q) = %v, %v", in, got, ok)
		}
	}
	if _, ok := ParseSpacing("bursty"); ok {
		t.Error("an unknown spacing parsed")
	}
}
