package fleet

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestSlots(t *testing.T) {
	for _, c := range []struct {
		limit int
		parts int64
		live  int
		want  int
	}{
		{10, Whole, 1, 10},
		{10, Target(2), 2, 5},
		{10, Target(3), 3, 3},
		{10, 0, 1, 0},              // nothing granted: nothing admitted
		{10, Whole * 3 / 10, 2, 3}, // a joiner holding what one replica gave back
		{10, Whole*3/10 - 1, 2, 2}, // a hair less is a call less
		{2, Target(3), 3, 1},       // a limit below the live count: one each
		{2, Target(3) - 1, 3, 0},   // but only for the whole target
		{17, Target(17), 17, 1},    // beyond 16 replicas the target is rounded,
		{34, Target(17), 17, 2},    // and still gives the divided limit
		{1 << 40, Target(3), 3, (1 << 40) / 3},
		{1 << 40, Whole / 7, 3, int((1 << 40) / 7)},
	} {
		if got := Slots(c.limit, c.parts, c.live); got != c.want {
			t.Errorf("Slots(%d, %d, %d) = %d, want %d", c.limit, c.parts, c.live, got, c.want)
		}
	}
}

func TestNeed(t *testing.T) {
	for _, c := range []struct {
		name  string
		loads []Load
		live  int
		want  int64
	}{
		{"nothing in flight", []Load{{10, 0}}, 2, 0},
		{"within the target", []Load{{10, 4}, {128, 40}}, 2, Whole * 4 / 10},
		{"beyond it", []Load{{10, 7}}, 2, Whole * 7 / 10},
		{"the limit that needs most", []Load{{10, 2}, {4, 3}}, 1, Whole * 3 / 4},
		{"beyond the limit itself", []Load{{10, 12}}, 1, Whole},
		{"the one-call floor needs only the target", []Load{{2, 1}}, 3, Target(3)},
		{"unlimited is no load", []Load{{0, 50}}, 1, 0},
	} {
		if got := Need(c.loads, c.live); got != c.want {
			t.Errorf("%s: Need(%v, %d) = %d, want %d", c.name, c.loads, c.live, got, c.want)
		}
	}
}

// A second replica joins a loaded one, step by step: it admits nothing
// until it is granted a part, and it gets only what the first gives back
// as its calls end, so the two never hold more than the limit.
func TestClaimJoinTakesWhatIsGivenBack(t *testing.T) {
	const limit = 10
	store := Claims{Window: 3 * time.Second}
	a, b := &Claim{Hold: 3 * time.Second}, &Claim{Hold: 3 * time.Second}
	now := t0
	ask := func(id string, c *Claim, live, inFlight int) {
		w := c.Ask(now, live, []Load{{limit, inFlight}})
		c.Granted(now, store.Claim(id, w, c.Held(), now), false)
	}
	ask("a", a, 1, 0)
	if got := Slots(limit, a.Parts(1, false), 1); got != 10 {
		t.Fatalf("alone: %d slots, want 10", got)
	}
	if got := b.Parts(2, false); got != 0 {
		t.Fatalf("a joiner granted nothing holds %d parts", got)
	}
	// b counts two; a holds 10 calls and counts two as well: its share
	// drops to 5 at once, but it cannot give back what its calls hold.
	ask("b", b, 2, 0)
	if got := Slots(limit, b.Parts(2, false), 2); got != 0 {
		t.Fatalf("the joiner got %d slots while the other held all 10 calls", got)
	}
	if got := Slots(limit, a.Parts(2, false), 2); got != 5 {
		t.Fatalf("the loaded replica admits up to %d, want its new share, 5", got)
	}
	for inFlight := 10; inFlight >= 4; inFlight-- {
		now = now.Add(100 * time.Millisecond)
		ask("a", a, 2, inFlight)
		ask("b", b, 2, 0)
		bs := Slots(limit, b.Parts(2, false), 2)
		if inFlight+bs > limit {
			t.Fatalf("a holds %d calls and b may start %d: over %d", inFlight, bs, limit)
		}
		if want := min(5, limit-inFlight); bs != want {
			t.Fatalf("a holds %d calls: b may start %d, want %d", inFlight, bs, want)
		}
	}
	if !a.Settled(now, 2, []Load{{limit, 4}}) || !b.Settled(now, 2, nil) {
		t.Errorf("not settled at equal parts: a %d, b %d", a.Held(), b.Held())
	}
}

// After the store lost its data, or after a replica could not reach it,
// the replica re-asserts its part and asks for no more for Hold: the
// others have not written theirs back yet.
func TestClaimSettlesAfterALoss(t *testing.T) {
	c := &Claim{Hold: 3 * time.Second}
	now := t0
	c.Granted(now, Target(3), false)
	// A replica left: the target rises, but the store has lost its data
	// (the script found the epoch changed, and granted only what was
	// held); for Hold the claim asks for what it holds.
	c.Granted(now, Grant(Target(2), c.Held(), 0, true), true)
	if w := c.Ask(now.Add(time.Second), 2, nil); w != Target(3) {
		t.Fatalf("within Hold of a loss it asks for %d, want what it held, %d", w, Target(3))
	}
	if w := c.Ask(now.Add(3*time.Second), 2, nil); w != Target(2) {
		t.Fatalf("after Hold it asks for %d, want the target %d", w, Target(2))
	}
	// Unanswered: the held part stands, and it asks for no more until
	// Hold after the store answers again.
	c.Missed()
	if c.Settled(now, 2, nil) {
		t.Error("a claim the store did not answer is settled")
	}
	if w := c.Ask(now.Add(4*time.Second), 1, nil); w != Target(3) {
		t.Fatalf("cut off, it asks for %d, want what it held", w)
	}
	c.Granted(now.Add(5*time.Second), Target(3), false)
	if w := c.Ask(now.Add(7*time.Second), 1, nil); w != Target(3) {
		t.Fatalf("2 s after the store answered again it asks for %d, want what it held", w)
	}
	if w := c.Ask(now.Add(8*time.Second), 1, nil); w != Whole {
		t.Fatalf("Hold after it answered again it asks for %d, want all", w)
	}
}

// A replica that never reached the store decides alone with an equal
// part of the fleet it counts; one that reached it admits nothing until
// granted.
func TestClaimPartsBeforeAGrant(t *testing.T) {
	var c Claim
	if p := c.Parts(1, true); p != Whole {
		t.Errorf("alone, counting one: %d parts, want all", p)
	}
	if p := c.Parts(3, false); p != 0 {
		t.Errorf("reaching the store, before a grant: %d parts, want none", p)
	}
	c.Granted(t0, Target(2), false)
	if p := c.Parts(3, true); p != Target(3) {
		t.Errorf("granted half, counting three: %d parts, want a third", p)
	}
}

// Forty fleets of replicas that join, leave, crash and lose answers at
// random under random load never hold more calls than a limit, and,
// once a fleet stops changing, every replica holds an equal part and
// may use it. (A rule that divides the limits, or grants what is asked,
// or gives back what calls still hold, fails three fleets in four.)
func TestClaimsFleetNeverExceedsTheLimits(t *testing.T) {
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runClaimsFleet(t, seed) })
	}
}

// modelReplica is one replica of runClaimsFleet: its census, claim and
// calls in flight under each limit (when each ends).
type modelReplica struct {
	id string
	// up: it takes requests; gone: it crashed or has drained and left.
	up, gone bool
	joined   time.Time // zero: not yet
	census   Census
	claim    Claim
	calls    [][]time.Time
	nextAsk  time.Time
}

func runClaimsFleet(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0xc1a1))
	const interval = time.Second
	window := 3 * interval
	limits := []int{10, 7, 128}
	store := Claims{Window: window}
	members := map[string]time.Time{} // the store's heartbeats
	var reps []*modelReplica
	now := t0
	start := func() {
		r := &modelReplica{id: fmt.Sprint("r", len(reps)), up: true, calls: make([][]time.Time, len(limits))}
		r.census.Hold, r.claim.Hold = window, window
		members[r.id] = now
		reps = append(reps, r)
	}
	live := func() int {
		n := 0
		for _, at := range members {
			if now.Sub(at) <= window {
				n++
			}
		}
		return n
	}
	start()
	const changing, settled = 60 * time.Second, 15 * time.Second
	for step := 0; now.Sub(t0) < changing+settled; step++ {
		now = now.Add(10 * time.Millisecond)
		calm := now.Sub(t0) >= changing
		up := 0
		for _, r := range reps {
			if r.up {
				up++
			}
		}
		switch x := rng.IntN(1000); {
		case calm:
		case x < 4 && up < 4:
			start()
		case x < 6 && up > 1: // a graceful leave: it drains, then goes
			r := reps[rng.IntN(len(reps))]
			if r.up {
				r.up = false
			}
		case x < 7 && up > 1: // a crash: its calls end with it, and its heartbeat and claim linger
			r := reps[rng.IntN(len(reps))]
			if r.up {
				r.up, r.gone = false, true
				for i := range r.calls {
					r.calls[i] = nil
				}
			}
		}
		for _, r := range reps {
			if r.gone {
				continue
			}
			for i := range r.calls {
				r.calls[i] = slices.DeleteFunc(r.calls[i], func(end time.Time) bool { return !now.Before(end) })
			}
			if !r.up && slices.IndexFunc(r.calls, func(c []time.Time) bool { return len(c) > 0 }) < 0 {
				r.gone = true // drained: it leaves
				delete(members, r.id)
				store.Drop(r.id)
				continue
			}
			if !r.up && r.joined.IsZero() {
				continue
			}
			// Heartbeats: every interval, every tenth while joining.
			beat := interval
			if r.joined.IsZero() {
				beat = interval / 10
			}
			if now.Sub(members[r.id]) >= beat {
				members[r.id] = now
				r.census.Observe(now, live())
				if r.joined.IsZero() {
					r.joined = now.Add(interval) // Joined's first interval
				}
			}
			n := r.census.Count(now)
			loads := make([]Load, len(limits))
			for i, l := range limits {
				loads[i] = Load{l, len(r.calls[i])}
			}
			if !r.joined.IsZero() && !now.Before(r.joined) && (!now.Before(r.nextAsk) || !r.claim.Settled(now, n, loads)) {
				w := r.claim.Ask(now, n, loads)
				switch {
				case !calm && rng.IntN(20) == 0:
					r.claim.Missed()
				case !calm && rng.IntN(20) == 0:
					store.Claim(r.id, w, r.claim.Held(), now) // the answer is lost
				default:
					r.claim.Granted(now, store.Claim(r.id, w, r.claim.Held(), now), false)
				}
				r.nextAsk = now.Add(interval)
			}
			if !r.up {
				continue
			}
			p := r.claim.Parts(n, false)
			for i, l := range limits {
				for len(r.calls[i]) < Slots(l, p, n) && rng.IntN(4) > 0 {
					r.calls[i] = append(r.calls[i], now.Add(time.Duration(200+rng.IntN(3000))*time.Millisecond))
				}
			}
		}
		for i, l := range limits {
			sum := 0
			for _, r := range reps {
				sum += len(r.calls[i])
			}
			if sum > l {
				t.Fatalf("%v in: %d calls under a limit of %d (live %d, claims %d of %d)", now.Sub(t0), sum, l, live(), store.Total(now), Whole)
			}
		}
	}
	n := live()
	for _, r := range reps {
		if !r.up {
			continue
		}
		if p := r.claim.Parts(r.census.Count(now), false); p != Target(n) {
			t.Errorf("%s holds %d parts after the fleet settled, want an equal part of %d: %d", r.id, p, n, Target(n))
		}
	}
}
