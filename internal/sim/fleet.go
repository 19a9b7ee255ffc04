package sim

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/breaker"
	fleetcore "github.com/sluice-gw/sluice/internal/core/fleet"
	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	"github.com/sluice-gw/sluice/internal/core/quota"
	"github.com/sluice-gw/sluice/internal/sim/report"
	"github.com/sluice-gw/sluice/internal/sim/scenario"
)

// A fleet (scenario.fleet) is several gateway replicas behind one load
// balancer, each with an engine of its own built from the policy's
// config. Without a store in that config each replica decides alone:
// its own breaker evidence, its own full key budgets, its own probes.
// With one, the simulator plays the store's part, in memory, and the
// rules of what is shared and when are package fleet's, which the
// gateway carries over Redis (gateway/fleet.go, package fleetstore):
//
//   - a replica's own breaker verdict (a trip, a fail-back step, the
//     close) reaches every other replica after the store's latency, and
//     they adopt it (Engine.Adopt);
//   - one replica probes a provider, the holder of its probe lease
//     (renewed by each probe, taken over once it lapses); the others
//     answer their probes at once as cancelled;
//   - each key's budget is one budget for the fleet: the simulator takes
//     a request's reservation from it before the engine sees the request
//     and settles it when the request leaves, with the engine's own
//     rules (Engine.Reservation, Engine.Used), through the replica's
//     credit on it when that covers it (fleet.Credit, credit.go);
//   - fixed concurrency limits are split between the live replicas
//     (lifecycle Config.Replicas), as each replica counts them: its
//     fleet.Census over the heartbeats the store keeps (members.go),
//     where replicas join and leave (scenario fleet.join, fleet.leave),
//     each admitting by its claim on them (fleet.Claim, Config.Parts),
//     which the store grants out of what the others leave.
//
// While the store is down (scenario fleet.store.down) nothing is shared:
// verdicts are not sent, every replica probes, and each takes from a
// budget of its own, its share of each key's (fleet.Share: the limits
// divided by its census's count when it was made, starting from its part
// of what the fleet's budget had spent). What the replicas took from
// their shares, net of refunds, is charged to the fleet's budget when
// the store is back, as the gateway pays what it owes.
type fleet struct {
	n      int
	shared bool
	spec   scenario.Fleet
	// random draws replicas for balance: random (nil: round robin).
	random *rand.Rand
	next   int
	// verdicts are the breaker verdicts sent to other replicas, indexed
	// by their evAdopt events' token.
	verdicts []verdict
	// evidence are the breaker counts sent to other replicas, indexed by
	// their evEvidence events' token.
	evidence []sentEvidence
	leases   []fleetcore.Lease // per scope
	// holders names each replica as a lease holder.
	holders []string
	// owed is, per key, what the replicas took from their shares (net
	// of refunds) while the store was down, to be charged to the
	// fleet's budget when it is back, at owedAt.
	owed   [][3]int64
	owedAt time.Duration
	// refills are the replicas' requests for credit, indexed by their
	// evRefill events' token (credit.go).
	refills []refillMsg
	// fromCredit and fromStore count the takes from key budgets
	// answered from a replica's credit and by the store.
	fromCredit, fromStore int
	// keys are the keys' shared budgets (nil: unlimited), limits their
	// limits, by key index from 0.
	keys   []*quota.Budget
	limits []quota.Limits
	// changes records every replica's providers going out of rotation
	// and back, in the order they happened.
	changes []rotation
	// serving are the replicas the load balancer sends requests to, in
	// index order (members.go).
	serving []*replica
	// beatEvery is the heartbeat interval; beats the store's members,
	// each replica's last heartbeat (-1: none yet).
	beatEvery time.Duration
	beats     []time.Duration
	// claims are the replicas' claims on the fixed limits, in the store.
	claims fleetcore.Claims
	// steps are the fleet's changes of size, in time order.
	steps []step
	// track: the fleet changes size, and measure notes its peaks in
	// flight (peaks, per fixed limit, admission's last) against its
	// whole fixed limits (fixed per scope, global), by phase.
	track  bool
	fixed  []int
	global int
	peaks  []int
	phases []report.FleetPhase
	// overSince is when the fleet went beyond each fixed limit (-1: it
	// is not); overFor how long it has been beyond it in the phase.
	overSince, overFor []time.Duration
}

type sentEvidence struct {
	scope   int
	buckets []breaker.Evidence
}

type verdict struct {
	scope, step int
	to          breaker.State
	why         breaker.Reason
}

type rotation struct {
	at         time.Duration
	scope, rep int
	out        bool
}

// replicaFleet is a replica's fleet bookkeeping.
type replicaFleet struct {
	out []bool // per scope: out of rotation (open or half-open)
	// opens counts its breakers' trips out of rotation (from closed or
	// recovering: a failed probe round re-opens, it does not trip),
	// adopted ones included; own those from its own evidence; flips its
	// providers' moves out of rotation and back.
	opens, own, flips int
	// local holds its key budgets while the store is down (window is the
	// down window they were made for, -1 none).
	local  []*quota.Budget
	window int
	// credit is its credit on each key's shared budget (credit.go),
	// nil until the store first answers for the key.
	credit []*fleetcore.Credit
	// census is its count of the live replicas (members.go); first is
	// its first heartbeat that reached the store (-1: none yet), beatGen
	// its heartbeats' generation (a crash or a leave stops the old ones).
	census  fleetcore.Census
	first   time.Duration
	beatGen uint32
	// claim is its part of the fleet's fixed limits (members.go);
	// member: fleet.Joined said it has joined, so it claims; reached:
	// its last heartbeat reached the store (else it decides alone).
	claim           fleetcore.Claim
	member, reached bool
	// present: its process runs (joining included); joined: the load
	// balancer sends it requests; left: it has left the fleet.
	present, joined, left bool
	// leaving: it drains, to stop once it holds nothing (members.go).
	leaving bool
}

// sharedHold is a request's reservation of its key's shared budget.
type sharedHold struct {
	key   int // index of the key's budget, from 0
	req   lifecycle.Request
	cost  quota.Cost
	usage [2]lifecycle.Outcome
	won   int
}

// commit notes the call whose answer the client got.
func (h *sharedHold) commit(attempt int) {
	if h != nil {
		h.won = attempt
	}
}

func newFleet(sc *scenario.Scenario, cfg *config.Config, n int) *fleet {
	f := &fleet{n: n, shared: cfg.Store != "", spec: sc.Fleet}
	if sc.Fleet.Balance == scenario.Random {
		f.random = rand.New(rand.NewPCG(sc.Seed^0xf1ee7, uint64(n)))
	}
	f.leases = make([]fleetcore.Lease, len(cfg.Providers))
	f.holders = make([]string, n)
	for i := range f.holders {
		f.holders[i] = "replica-" + strconv.Itoa(i)
	}
	return f
}

// configure adapts a replica's engine config to the fleet.
func (f *fleet) configure(r *run, rp *replica, ec *lifecycle.Config) {
	f.noteLimits(ec)
	if !f.shared {
		return
	}
	ec.Replicas = func() int { return f.replicas(r, rp) }
	ec.Parts = func() int64 { return rp.fl.claim.Parts(f.replicas(r, rp), !rp.fl.reached) }
	ec.Budgets.SharedKeys = true
	if f.keys == nil {
		f.limits = ec.Budgets.Keys
		f.keys = make([]*quota.Budget, len(f.limits))
		f.owed = make([][3]int64, len(f.limits))
		for k, l := range f.limits {
			if l != (quota.Limits{}) {
				f.keys[k], _ = quota.New(l)
			}
		}
	}
}

// live is the count of replicas up now, at least 1: what a replica of a
// fleet that shares nothing would count (it divides nothing by it).
func (f *fleet) live(r *run) int {
	live := 0
	for _, rp := range r.reps {
		if r.now >= rp.down {
			live++
		}
	}
	return max(1, live)
}

// start sets up the replicas' bookkeeping once they exist.
func (f *fleet) start(r *run) {
	for _, rp := range r.reps {
		rp.fl.out = make([]bool, len(r.ups))
		rp.fl.window = -1
	}
	f.startMembers(r)
	if f.shared {
		r.seq++
		r.events.push(event{at: r.quantise(fleetcore.EvidenceEvery), order: order(classEngine, r.seq), kind: evShare})
		if slices.ContainsFunc(f.keys, func(b *quota.Budget) bool { return b != nil }) {
			r.seq++
			r.events.push(event{at: r.quantise(fleetcore.CreditIdle / 3), order: order(classEngine, r.seq), kind: evSweep})
		}
	}
}

// share sends every replica's breaker counts since the last share to the
// others, arriving after the store's latency, as the gateway's replicas
// do on the store's evidence channel; with the store down, the counts
// are dropped and each replica judges its own.
func (f *fleet) share(r *run) {
	up := f.storeUp(r)
	at := r.quantise(r.now + f.spec.StoreLatency())
	for _, rp := range r.reps {
		for s, ev := range rp.eng.DrainEvidence() {
			if len(ev) == 0 || !up {
				continue
			}
			f.evidence = append(f.evidence, sentEvidence{scope: s, buckets: ev})
			f.toOthers(r, rp, at, evEvidence, len(f.evidence)-1)
		}
	}
	if next := r.now + fleetcore.EvidenceEvery; next < r.sc.Duration {
		r.seq++
		r.events.push(event{at: r.quantise(next), order: order(classEngine, r.seq), kind: evShare})
	}
}

// count delivers a replica's breaker counts to another.
func (f *fleet) count(r *run, e event) {
	ev := f.evidence[e.token]
	rp := r.reps[e.rep]
	r.apply(rp, rp.eng.AddEvidence(r.clock(r.now), ev.scope, ev.buckets))
}

// pick is the replica the load balancer sends an attempt to.
func (f *fleet) pick(r *run) *replica {
	n := len(f.serving)
	if f.random != nil {
		return f.serving[f.random.IntN(n)]
	}
	rp := f.serving[f.next%n]
	f.next = (f.next + 1) % n
	return rp
}

// storeUp reports whether the store answers now.
func (f *fleet) storeUp(r *run) bool { return f.spec.StoreUp(r.now) }

// transition accounts a replica's breaker transition and, in a fleet
// that shares, sends a verdict of its own to the other replicas.
func (f *fleet) transition(r *run, rp *replica, t lifecycle.Transition) {
	fl := &rp.fl
	if t.To == breaker.Open && (t.From == breaker.Closed || t.From == breaker.Recovering) {
		fl.opens++
		if t.Reason != breaker.ReasonFleet {
			fl.own++
		}
	}
	out := t.To == breaker.Open || t.To == breaker.HalfOpen
	if fl.out[t.Scope] != out {
		fl.out[t.Scope] = out
		fl.flips++
		f.changes = append(f.changes, rotation{at: max(0, t.At.Sub(origin)), scope: t.Scope, rep: rp.idx, out: out})
	}
	if !f.shared || !fleetcore.Announce(t.To, t.Reason) || !f.storeUp(r) {
		return
	}
	f.send(r, rp, verdict{scope: t.Scope, step: t.Step, to: t.To, why: t.Reason})
}

// send delivers a verdict from rp to every other replica after the
// store's latency.
func (f *fleet) send(r *run, rp *replica, v verdict) {
	f.verdicts = append(f.verdicts, v)
	f.toOthers(r, rp, r.quantise(r.now+f.spec.StoreLatency()), evAdopt, len(f.verdicts)-1)
}

// toOthers schedules event kind, carrying token, for every replica but
// rp, at at.
func (f *fleet) toOthers(r *run, rp *replica, at time.Duration, kind eventKind, token int) {
	for _, other := range r.reps {
		if other == rp || !other.fl.present {
			continue
		}
		r.seq++
		r.events.push(event{at: at, order: order(classEngine, r.seq), kind: kind, rep: uint16(other.idx), token: uint32(token)})
	}
}

// probeFailed tells the other replicas, in a fleet that shares, that
// rp's probe of scope failed (fleet.ProbeFailed).
func (f *fleet) probeFailed(r *run, rp *replica, scope int, o lifecycle.Outcome) {
	if !f.shared || !lifecycle.ProbeFailed(o) || !f.storeUp(r) {
		return
	}
	v := fleetcore.ProbeFailed()
	f.send(r, rp, verdict{scope: scope, step: v.Step, to: v.To, why: v.Reason})
}

// adopt delivers a verdict to a replica.
func (f *fleet) adopt(r *run, e event) {
	v := f.verdicts[e.token]
	rp := r.reps[e.rep]
	r.apply(rp, rp.eng.Adopt(r.clock(r.now), v.scope, v.to, v.step, v.why))
}

// errStoreDown is what asking the store gets while it is down.
var errStoreDown = errors.New("sim: store down")

// mayProbe reports whether a replica sends its probe of scope's
// provider: alone, or as fleet.MayProbe says (holding the probe lease,
// or with the store down).
func (f *fleet) mayProbe(r *run, rp *replica, scope int) bool {
	if !f.shared {
		return true
	}
	if !f.storeUp(r) {
		return fleetcore.MayProbe(false, errStoreDown, true)
	}
	return fleetcore.MayProbe(f.leases[scope].Acquire(f.holders[rp.idx], r.clock(r.now), fleetcore.ProbeLease), nil, false)
}

// take reserves an attempt's cost of its key's shared budget. Refused,
// the attempt is answered (429, or 413 for one no wait lets through),
// and take reports false.
func (f *fleet) take(r *run, q *request, req lifecycle.Request) bool {
	if !f.shared || req.Key < 1 || req.Key > len(f.keys) || f.keys[req.Key-1] == nil {
		return true
	}
	k := req.Key - 1
	cost := q.rep.eng.Reservation(req)
	var v quota.Verdict
	if f.storeUp(r) {
		f.pay(r, k)
		v = f.takeShared(r, q.rep, k, cost)
	} else {
		v = f.local(r, q.rep, k).Take(r.clock(r.now), cost)
		if v.OK {
			f.owe(r, k, quota.Cost{}, cost)
		}
		v = fleetcore.ShareVerdict(v, f.limits[k], cost, fleetcore.Recheck)
	}
	if !v.OK {
		r.refused(q, lifecycle.Arrival{Verdict: admission.Rejected, Budget: v,
			Refusal: admission.Refusal{Priority: q.pri, Reason: admission.ReasonKeyBudget, RetryAfter: v.RetryAfter}})
		return false
	}
	q.hold = &sharedHold{key: k, req: req, cost: cost}
	return true
}

// local is a replica's own budget for key k while the store is down: its
// share of the key's (fleet.Share), made once per down window for the
// replicas live then, from the fleet's budget as the store last had it.
func (f *fleet) local(r *run, rp *replica, k int) *quota.Budget {
	w := f.window(r)
	fl := &rp.fl
	if fl.window != w || fl.local == nil {
		fl.window, fl.local = w, make([]*quota.Budget, len(f.keys))
	}
	if b := fl.local[k]; b != nil {
		return b
	}
	now := r.clock(r.now)
	b, err := fleetcore.Share(f.limits[k], f.replicas(r, rp), f.keys[k].Status(now), now)
	if err != nil {
		return f.keys[k] // cannot happen for valid limits; share instead
	}
	fl.local[k] = b
	return b
}

// window is the index of the store's down window now, -1 none.
func (f *fleet) window(r *run) int {
	for i, d := range f.spec.Store.Down {
		if r.now >= d.Start && r.now < d.End {
			return i
		}
	}
	return -1
}

// owe notes what a replica's share of key k took (actual beyond
// reserved) or gave back (reserved beyond actual) while the store is
// down, to charge the fleet's budget with when it is back.
func (f *fleet) owe(r *run, k int, reserved, actual quota.Cost) {
	res, act := fleetcore.Units(reserved), fleetcore.Units(actual)
	for d := range f.owed[k] {
		f.owed[k][d] += act[d] - res[d]
	}
	if w := f.window(r); w >= 0 {
		f.owedAt = f.spec.Store.Down[w].End
	}
}

// pay charges key k's budget, now that the store answers, with what the
// replicas' shares owe it, at the end of the outage (nothing has taken
// from the fleet's budget since it began).
func (f *fleet) pay(r *run, k int) {
	o := f.owed[k]
	if o == ([3]int64{}) {
		return
	}
	f.owed[k] = [3]int64{}
	res, act := fleetcore.Settlement(o)
	f.keys[k].Settle(r.clock(min(f.owedAt, r.now)), res, act)
}

// settle settles what take reserved: with what the answer the client got
// used, or whole when no call was made. It is settled where the store's
// state puts it now, as the gateway's budgets do: the fleet's budget
// when the store answers, this replica's share (and what it owes)
// when not.
func (f *fleet) settle(r *run, q *request) {
	h := q.hold
	if h == nil {
		return
	}
	q.hold = nil
	now := r.clock(r.now)
	used := quota.Cost{}
	if q.calls[0] != nil || q.calls[1] != nil {
		used = q.rep.eng.Used(h.req, h.usage[h.won])
	}
	if f.storeUp(r) {
		f.pay(r, h.key)
		f.settleShared(r, q.rep, h.key, h.cost, used)
		return
	}
	f.local(r, q.rep, h.key).Settle(now, h.cost, used)
	f.owe(r, h.key, h.cost, used)
}

// restarted: a crashed replica's new engine has every breaker closed.
func (f *fleet) restarted(r *run, rp *replica) {
	for s, out := range rp.fl.out {
		if out {
			rp.fl.out[s] = false
			rp.fl.flips++
			f.changes = append(f.changes, rotation{at: r.now, scope: s, rep: rp.idx})
		}
	}
	rp.fl.local, rp.fl.window = nil, -1
	rp.fl.credit = nil // lost with the process
	if f.shared && rp.fl.present {
		// A new process: it counts afresh from its first heartbeat,
		// when it is back, and claims afresh once it has joined
		// (members.go); what the old one claimed lingers in the store
		// for the liveness window.
		rp.fl.census = fleetcore.Census{Hold: 3 * f.beatEvery}
		rp.fl.claim = fleetcore.Claim{Hold: 3 * f.beatEvery}
		rp.fl.member, rp.fl.reached = false, true
		rp.fl.beatGen++
		f.pushBeat(r, rp, rp.down)
	}
}

// finish writes the fleet's figures into the row.
func (f *fleet) finish(r *run) {
	fr := &report.Fleet{Replicas: f.n, Shared: f.shared}
	for _, rp := range r.reps {
		fr.Trips = append(fr.Trips, rp.fl.opens)
		fr.OwnTrips += rp.fl.own
		fr.Flips += rp.fl.flips
	}
	fr.Disagreement = f.disagreement(r)
	if f.track {
		f.endPhase(r)
		fr.Phases = f.phases
	}
	r.row.Fleet = fr
}

// disagreement is how long, summed over providers, some replica had a
// provider out of rotation (open or half-open) while another had it in
// (closed or recovering), up to the scenario's end.
func (f *fleet) disagreement(r *run) time.Duration {
	end := r.sc.Duration
	if r.sc.Drain {
		end = max(end, r.now)
	}
	ch := slices.Clone(f.changes)
	slices.SortStableFunc(ch, func(a, b rotation) int {
		switch {
		case a.at < b.at:
			return -1
		case a.at > b.at:
			return 1
		}
		return 0
	})
	var total time.Duration
	for s := range r.ups {
		out := make([]bool, f.n)
		nOut := 0
		var since time.Duration
		for _, c := range ch {
			if c.scope != s || c.at > end {
				continue
			}
			before := nOut > 0 && nOut < f.n
			if out[c.rep] != c.out {
				out[c.rep] = c.out
				if c.out {
					nOut++
				} else {
					nOut--
				}
			}
			after := nOut > 0 && nOut < f.n
			switch {
			case !before && after:
				since = c.at
			case before && !after:
				total += c.at - since
			}
		}
		if nOut > 0 && nOut < f.n {
			total += end - since
		}
	}
	return total
}
