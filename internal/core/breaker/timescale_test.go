package breaker

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestTimeScaleIsInvariant drives two breakers through one story of
// calls: one at real time, one with every time and latency a quarter as
// long and TimeScale 0.25, both on their defaults. The scaled one must
// make the same transitions with the same evidence at a quarter of the
// times: its defaults, bucket width and baseline marks are all scaled,
// so it cannot tell the replay from the scenario. (A quarter keeps every
// product exact in nanoseconds.)
func TestTimeScaleIsInvariant(t *testing.T) {
	for _, steady := range []bool{true, false} {
		t.Run(fmt.Sprintf("steady=%v", steady), func(t *testing.T) {
			const scale = 0.25
			real := mustNew(t, Config{Steady: steady})
			fast := mustNew(t, Config{Steady: steady, TimeScale: scale})
			sc := func(d time.Duration) time.Duration { return time.Duration(float64(d) * scale) }
			if got, want := fast.cfg.Window, sc(DefaultWindow); got != want {
				t.Fatalf("scaled window %v, want %v", got, want)
			}
			rng := rand.New(rand.NewPCG(7, 7))
			// 40 minutes: healthy, an error burst, a brownout, a drift
			// slower than BaselineMemory, healthy again; a call every
			// 50-150 ms.
			for now := time.Duration(0); now < 40*time.Minute; now += time.Duration(50+rng.IntN(101)) * time.Millisecond {
				lat := time.Duration(150+rng.IntN(100)) * time.Millisecond
				kind := OK
				switch {
				case now > 2*time.Minute && now < 3*time.Minute && rng.IntN(2) == 0:
					kind = Error
				case now > 5*time.Minute && now < 8*time.Minute:
					lat *= 40
				case now > 10*time.Minute && now < 35*time.Minute:
					lat += time.Duration(float64(lat) * float64(now-10*time.Minute) / float64(5*time.Minute))
				}
				for _, c := range []struct {
					b     *Breaker
					now   time.Duration
					o     Outcome
					scale float64
				}{{real, now, Outcome{Kind: kind, Latency: lat}, 1}, {fast, sc(now), Outcome{Kind: kind, Latency: sc(lat)}, scale}} {
					if tk, err := c.b.Allow(at(c.now)); err == nil {
						c.b.Done(at(c.now), tk, c.o)
					}
				}
			}
			want, got := real.Transitions(), fast.Transitions()
			if len(want) < 3 {
				t.Fatalf("the story made only %d transitions: %s", len(want), trail(want))
			}
			render := func(ts []Transition, scale float64) string {
				var b strings.Builder
				for _, tr := range ts {
					fmt.Fprintf(&b, "%v %s>%s:%s step %d calls %d err %.3f slow %.3f\n",
						time.Duration(float64(tr.At.Sub(t0))/scale), tr.From, tr.To, tr.Reason, tr.Step, tr.Calls, tr.ErrorRate, tr.SlowRate)
				}
				return b.String()
			}
			if w, g := render(want, 1), render(got, scale); w != g {
				t.Errorf("scaled breaker diverged:\nreal time:\n%s\nscaled, times ÷ %v:\n%s", w, scale, g)
			}
		})
	}
}
