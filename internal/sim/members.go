package sim

import (
	"cmp"
	"slices"
	"time"

	"github.com/sluice-gw/sluice/internal/core/admission"
	fleetcore "github.com/sluice-gw/sluice/internal/core/fleet"
	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	"github.com/sluice-gw/sluice/internal/sim/report"
)

// A fleet's replicas count each other as the gateway's do
// (fleetstore.Members): each heartbeats into the store every
// fleet.heartbeat (1 s by default), the store keeps each replica's last
// heartbeat, and a heartbeat counts the replicas whose last one is
// within the liveness window (3 heartbeats). Each replica divides its
// fixed limits, and makes its store-down shares, by its fleet.Census of
// those counts: the largest seen within the window, the last known while
// the store is down and for the window after it is back.
//
// The run starts with its fleet settled: the scenario's replicas have
// all heartbeated at 0 and count fleet.replicas from the start, and
// beat after that at phases spread over the interval. A replica that
// joins (fleet.join) heartbeats at once, then every tenth of an
// interval until it has joined (fleet.Joined: it knows the fleet and
// every other live replica has heartbeated since its first) and the
// store has granted it a part of the fleet's fixed limits (fleet.Claim,
// asked for with each heartbeat once it has joined, and every tenth of
// an interval while the claim is not settled, out of what the others
// give back as their calls end), and only then does the load balancer
// send it requests, as the gateway reports ready only then; with the
// store down as it joins, it serves at once, alone, as the gateway
// does. A replica that leaves (fleet.leave, the
// latest to have joined first) drains, as the gateway's Shutdown does:
// the load balancer sends it no more requests, what it holds (queued
// ones included) runs to its end, and it heartbeats meanwhile (the
// gateway closes its membership only after the drain); then it stops
// and its entry and claim go (fleetstore.Members.Close, Claims.Close),
// so the others count it out at their next heartbeat and believe the
// smaller count, and claim the larger part, a window after that. With the store down as it closes, its entry stays until
// it is older than the window. A replica restarted after a crash
// is a new process: it counts afresh from its first heartbeat, when it
// is back, and is sent requests at once (the simulator's load balancer
// checks no readiness after a crash), which wait until it has joined
// and been granted a part; the crashed process's claim counts in the
// store until it is older than the window. The heartbeat's round trip is not modelled:
// a heartbeat reaches the store, and counts, as it is sent.

// step is one change of the fleet's size, in time order.
type step struct {
	at    time.Duration
	delta int // replicas that start (> 0) or stop (< 0)
}

// startMembers sets up the store's membership and the replicas'
// censuses, and schedules the heartbeats and the changes.
func (f *fleet) startMembers(r *run) {
	every := f.spec.HeartbeatEvery()
	f.beatEvery = every
	f.claims.Window = 3 * every
	f.beats = make([]time.Duration, len(r.reps))
	size := f.spec.Size()
	for i, rp := range r.reps {
		rp.fl.census.Hold = 3 * every
		rp.fl.claim.Hold = 3 * every
		rp.fl.reached = true
		if i >= size {
			f.beats[i], rp.fl.first = -1, -1
			continue
		}
		rp.fl.present, rp.fl.joined = true, true
		f.serving = append(f.serving, rp)
		if !f.shared {
			continue
		}
		f.beats[i] = 0
		rp.fl.census.Observe(origin, size)
		rp.fl.member = true
		rp.fl.claim.Granted(origin, f.claims.Claim(f.holders[i], fleetcore.Target(size), 0, origin), false)
		f.pushBeat(r, rp, every*time.Duration(i+1)/time.Duration(size))
	}
	for _, j := range f.spec.Join {
		f.steps = append(f.steps, step{j.At, j.Replicas})
	}
	for _, l := range f.spec.Leave {
		f.steps = append(f.steps, step{l.At, -l.Replicas})
	}
	// Joins before leaves at one instant, as scenario validation counts.
	slices.SortStableFunc(f.steps, func(a, b step) int {
		if a.at != b.at {
			return cmp.Compare(a.at, b.at)
		}
		return cmp.Compare(b.delta, a.delta)
	})
	for i, s := range f.steps {
		r.seq++
		r.events.push(event{at: r.quantise(s.at), order: order(classEngine, r.seq), kind: evMember, token: uint32(i)})
	}
	if f.spec.Changes() {
		f.track = true
		f.phases = []report.FleetPhase{{Replicas: size}}
	}
}

// pushBeat schedules rp's next heartbeat at at, if within the run.
func (f *fleet) pushBeat(r *run, rp *replica, at time.Duration) {
	if at >= r.sc.Duration {
		return
	}
	r.seq++
	r.events.push(event{at: r.quantise(at), order: order(classEngine, r.seq), kind: evBeat, rep: uint16(rp.idx), token: rp.fl.beatGen})
}

// replicas is the count rp divides by now (its census's).
func (f *fleet) replicas(r *run, rp *replica) int {
	if !f.shared {
		return f.live(r)
	}
	return rp.fl.census.Count(r.clock(r.now))
}

// beat is one heartbeat of a replica: with the store up, its entry is
// refreshed and the live entries counted into its census (and, while it
// is joining, whether it has joined decided); with the store down, its
// census holds what it knew.
func (f *fleet) beat(r *run, e event) {
	rp := r.reps[e.rep]
	fl := &rp.fl
	if !fl.present || e.token != fl.beatGen {
		return // stopped, or a crashed process's
	}
	now := r.clock(r.now)
	window := 3 * f.beatEvery
	before := fl.claim.Parts(fl.census.Count(now), !fl.reached)
	if f.storeUp(r) {
		fl.reached = true
		f.beats[rp.idx] = r.now
		n := 0
		var others []time.Time
		for j, at := range f.beats {
			if at < 0 || r.now-at > window {
				continue
			}
			n++
			if j != rp.idx {
				others = append(others, r.clock(at))
			}
		}
		fl.census.Observe(now, n)
		if fl.first < 0 {
			fl.first = r.now
		}
		fl.member = fl.member || fleetcore.Joined(r.clock(fl.first), now, f.beatEvery, others)
		if fl.member {
			f.ask(r, rp, now)
		}
		if !fl.joined && fl.member && fl.claim.Held() > 0 {
			f.serve(r, rp)
		}
	} else {
		fl.reached = false
		fl.census.Lost(now)
		fl.claim.Missed()
		if !fl.joined {
			f.serve(r, rp) // nothing to learn: it decides alone
		}
	}
	if fl.claim.Parts(fl.census.Count(now), !fl.reached) > before {
		r.apply(rp, rp.eng.Pump(now))
	}
	next := f.beatEvery
	if !fl.joined || (f.storeUp(r) && fl.member && !fl.claim.Settled(now, fl.census.Count(now), rp.eng.SharedLoads())) {
		next /= 10
	}
	f.pushBeat(r, rp, r.now+next)
}

// ask is a replica's claim on the fleet's fixed limits, asked of the
// store with its heartbeat (the gateway asks beside it, as often).
func (f *fleet) ask(r *run, rp *replica, now time.Time) {
	fl := &rp.fl
	want := fl.claim.Ask(now, fl.census.Count(now), rp.eng.SharedLoads())
	fl.claim.Granted(now, f.claims.Claim(f.holders[rp.idx], want, fl.claim.Held(), now), false)
}

// serve puts a replica that has joined into the load balancer's
// rotation.
func (f *fleet) serve(r *run, rp *replica) {
	rp.fl.joined = true
	f.serving = append(f.serving, rp)
	slices.SortFunc(f.serving, func(a, b *replica) int { return cmp.Compare(a.idx, b.idx) })
}

// member carries out a change of the fleet's size.
func (f *fleet) member(r *run, e event) {
	s := f.steps[e.token]
	f.endPhase(r)
	if s.delta > 0 {
		for range s.delta {
			i := slices.IndexFunc(r.reps, func(rp *replica) bool { return !rp.fl.present && rp.fl.first < 0 && !rp.fl.left })
			if i < 0 {
				break
			}
			f.join(r, r.reps[i])
		}
	} else {
		for range -s.delta {
			i := -1
			for j, rp := range r.reps {
				if rp.fl.present && !rp.fl.leaving {
					i = j // the latest to have joined
				}
			}
			if i < 0 {
				break
			}
			f.leave(r, r.reps[i])
		}
	}
	f.phases = append(f.phases, report.FleetPhase{From: r.now, Replicas: f.present(r)})
}

// join starts a replica: it heartbeats at once and serves once it has
// joined (at once in a fleet that shares nothing).
func (f *fleet) join(r *run, rp *replica) {
	rp.fl.present = true
	if !f.shared {
		f.serve(r, rp)
		return
	}
	f.beat(r, event{rep: uint16(rp.idx), token: rp.fl.beatGen})
}

// leave starts a replica's drain: no more requests; it stops once what
// it holds has ended (drained).
func (f *fleet) leave(r *run, rp *replica) {
	rp.fl.leaving = true
	f.serving = slices.DeleteFunc(f.serving, func(x *replica) bool { return x == rp })
	if !rp.fl.joined {
		f.stop(r, rp) // joining: it holds nothing
	}
}

// drained stops the leaving replicas that hold nothing more.
func (f *fleet) drained(r *run) {
	for _, rp := range r.reps {
		if rp.fl.leaving && rp.fl.present && rp.byID.len() == 0 && len(rp.probes) == 0 {
			f.stop(r, rp)
		}
	}
}

// stop ends a replica's process: no more heartbeats, and its entry
// removed if the store answers; its credit is not given back (the
// fleet admits less, never more).
func (f *fleet) stop(r *run, rp *replica) {
	rp.fl.present, rp.fl.left = false, true
	rp.fl.beatGen++
	if f.shared && f.storeUp(r) {
		f.beats[rp.idx] = -1
		f.claims.Drop(f.holders[rp.idx])
	}
	rp.fl.credit = nil
}

// present counts the replicas running now, joining ones included,
// leaving ones not.
func (f *fleet) present(r *run) int {
	n := 0
	for _, rp := range r.reps {
		if rp.fl.present && !rp.fl.leaving {
			n++
		}
	}
	return n
}

// limits notes the fleet's fixed concurrency limits, whole, from a
// replica's engine config before it is split.
func (f *fleet) noteLimits(ec *lifecycle.Config) {
	if f.fixed != nil {
		return
	}
	f.fixed = make([]int, len(ec.Scopes))
	for i, sc := range ec.Scopes {
		if sc.Limit == nil && sc.Pool == nil {
			f.fixed[i] = sc.Fixed
		}
	}
	if g, ok := ec.Admission.Global.(admission.Fixed); ok {
		f.global = int(g)
	}
}

// measure notes, in a run whose fleet changes size, the requests the
// whole fleet holds in flight against each fixed limit, for the
// current phase's peaks.
func (f *fleet) measure(r *run) {
	if f.peaks == nil {
		f.peaks = make([]int, len(f.fixed)+1) // the last: admission's
		f.overSince = make([]time.Duration, len(f.peaks))
		f.overFor = make([]time.Duration, len(f.peaks))
		for i := range f.overSince {
			f.overSince[i] = -1
		}
	}
	now := r.clock(r.now)
	var sum [64]int
	inFlight := sum[:0]
	if len(f.peaks) > len(sum) {
		inFlight = make([]int, 0, len(f.peaks))
	}
	inFlight = inFlight[:len(f.peaks)]
	for _, rp := range r.reps {
		s := rp.eng.Snapshot(now)
		inFlight[len(f.fixed)] += s.InFlight
		for i, n := range s.ScopeInFlight {
			if i < len(f.fixed) {
				inFlight[i] += n
			}
		}
	}
	for i, n := range inFlight {
		f.peaks[i] = max(f.peaks[i], n)
		over := n > f.limitOf(i)
		switch {
		case over && f.overSince[i] < 0:
			f.overSince[i] = r.now
		case !over && f.overSince[i] >= 0:
			f.overFor[i] += r.now - f.overSince[i]
			f.overSince[i] = -1
		}
	}
	f.drained(r)
}

// limitOf is fixed limit i, whole: a scope's, or admission's (the last).
func (f *fleet) limitOf(i int) int {
	if i < len(f.fixed) {
		if f.fixed[i] > 0 {
			return f.fixed[i]
		}
		return int(^uint(0) >> 1)
	}
	if f.global > 0 {
		return f.global
	}
	return int(^uint(0) >> 1)
}

// endPhase closes the current phase: its figure is the limit the
// fleet's peak came closest to or went furthest beyond.
func (f *fleet) endPhase(r *run) {
	if len(f.phases) == 0 {
		return
	}
	p := &f.phases[len(f.phases)-1]
	for i, peak := range f.peaks {
		limit, name := f.global, "admission"
		if i < len(f.fixed) {
			limit, name = f.fixed[i], r.cfg.Providers[i].Name
		}
		if f.overSince[i] >= 0 {
			f.overFor[i] += r.now - f.overSince[i]
			f.overSince[i] = r.now
		}
		if limit > 0 && (p.Name == "" || peak-limit > p.Peak-p.Limit) {
			p.Name, p.Limit, p.Peak, p.Over = name, limit, peak, f.overFor[i]
		}
	}
	clear(f.peaks)
	clear(f.overFor)
}
