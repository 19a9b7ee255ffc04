package admission

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestTimeScaleIsInvariant runs one busy spell through two cores, one at
// real time and one at a quarter of every time with TimeScale 0.25: the
// scaled core's drain estimate and Retry-After must be a quarter of the
// real one's throughout, floor, fallback and drain window included.
func TestTimeScaleIsInvariant(t *testing.T) {
	const scale = 0.25
	epoch := time.Unix(1_700_000_000, 0)
	mk := func(ts float64) *Core {
		return NewCore(Config{Global: Fixed(8), MaxDepth: 50, MaxWait: time.Duration(float64(2*time.Second) * ts), Seed: 3, TimeScale: ts})
	}
	real, fast := mk(1), mk(scale)
	if got, want := fast.DrainTime(epoch, Interactive), time.Duration(float64(real.DrainTime(epoch, Interactive))*scale); got != want {
		t.Errorf("no evidence: scaled drain time %v, want %v", got, want)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	type held struct {
		real, fast Ticket
		until      time.Duration
	}
	var out []held
	for now := time.Duration(0); now < 2*time.Minute; now += time.Duration(20+rng.IntN(60)) * time.Millisecond {
		rt, ft := epoch.Add(now), epoch.Add(time.Duration(float64(now)*scale))
		keep := out[:0]
		for _, h := range out {
			if h.until <= now {
				real.Release(rt, h.real)
				fast.Release(ft, h.fast)
				continue
			}
			keep = append(keep, h)
		}
		out = keep
		r, f := real.Admit(rt, Request{Priority: Interactive, Scope: NoScope}), fast.Admit(ft, Request{Priority: Interactive, Scope: NoScope})
		if r.Verdict != f.Verdict {
			t.Fatalf("at %v: verdicts %v and %v", now, r.Verdict, f.Verdict)
		}
		if r.Verdict == Admitted {
			// Calls slow down over the spell: the drain rate falls.
			out = append(out, held{r.Ticket, f.Ticket, now + time.Duration(200+rng.IntN(200))*time.Millisecond*(1+now/(30*time.Second))})
		}
		if r.Verdict == Rejected {
			if want := time.Duration(float64(r.Refusal.RetryAfter) * scale); !nearNs(f.Refusal.RetryAfter, want) {
				t.Fatalf("at %v: scaled Retry-After %v, want %v", now, f.Refusal.RetryAfter, want)
			}
		}
		if want := time.Duration(float64(real.DrainTime(rt, Interactive)) * scale); !nearNs(fast.DrainTime(ft, Interactive), want) {
			t.Fatalf("at %v: scaled drain time %v, want %v", now, fast.DrainTime(ft, Interactive), want)
		}
	}
}

// nearNs allows the nanosecond that float rounding may cost.
func nearNs(a, b time.Duration) bool { return a-b <= 2 && b-a <= 2 }
