package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/breaker"
	fleetcore "github.com/sluice-gw/sluice/internal/core/fleet"
	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	"github.com/sluice-gw/sluice/internal/core/quota"
	"github.com/sluice-gw/sluice/internal/server/fleetstore"
	"github.com/sluice-gw/sluice/internal/server/metrics"
	"github.com/sluice-gw/sluice/internal/server/runner"
)

// A fleet is the replicas that name one store: in it, each key's budget
// is one budget across the fleet, taken in Redis (package store) in one
// round trip per decision, exact across replicas; the fixed concurrency
// limits are split between the live replicas (lifecycle/fleet.go). With
// Redis slow (past fleet.timeout) or gone, each replica decides alone
// with its share of every limit, says so in a log line and
// sluice_fleet_store_shared, and goes back to the shared budgets by
// itself when Redis answers again.
type fleet struct {
	rdb     *redis.Client
	budgets *fleetstore.Budgets
	members *fleetstore.Members
	// claims is this replica's part of the fleet's fixed concurrency
	// limits, which the engine admits by (lifecycle.Config.Parts); rn
	// is that engine's runner (startClaims).
	claims   *fleetstore.Claims
	rn       *runner.Runner
	channels *fleetstore.Channels
	leases   *fleetstore.Leases
	id       string
	// store and prefix name the fleet (a reload that keeps them keeps
	// this replica's place in it: inherit).
	store, prefix string
	timeout       time.Duration
	// evidenceEvery and probeLease are fleetcore.EvidenceEvery and
	// fleetcore.ProbeLease, times the config's time scale
	// (config.Config.TimeFactor): they follow the breaker's bucket width
	// and probe interval, which scale too.
	evidenceEvery, probeLease time.Duration
	// stop ends the subscription to the fleet's breaker verdicts.
	stop func()
	// status is the last budget status each key's Take saw, for
	// degrading on a nearly spent budget without another round trip.
	status sync.Map // key name -> [3]quota.Status
	// reachable: Redis answered the last heartbeat or budget call.
	reachable atomic.Bool
	log       *slog.Logger
	// errs counts the store's calls that failed by what and why
	// (sluice_fleet_store_errors_total); logged marks what was logged
	// last when, so a failing call logs once a minute.
	errs   *prometheus.CounterVec
	logged sync.Map // string -> time.Time
	// losses counts the store's losses of its data
	// (sluice_fleet_store_losses_total); lost is the last one this
	// replica's heartbeat saw, for /readyz.
	losses *prometheus.CounterVec
	lost   atomic.Pointer[storeLoss]
}

// storeLoss is a loss of the store's data a heartbeat saw: the fleet's
// epoch before and after, and when.
type storeLoss struct {
	old, new string
	at       time.Time
}

// sawLoss is the heartbeat finding the fleet's epoch missing or changed
// (fleetstore.EpochLost): Redis lost its data. It says so in the log,
// sluice_fleet_store_losses_total and /readyz. The run-time keys and
// spend see the same epoch and write back what this replica holds
// (packages keystore and spendstore) before acting on what Redis says.
func (f *fleet) sawLoss(old, new string) {
	f.lost.Store(&storeLoss{old: old, new: new, at: time.Now()})
	if f.losses != nil {
		f.losses.WithLabelValues("heartbeat").Inc()
	}
	f.log.Warn("shared store lost its data (the fleet's epoch changed): this replica writes back the run-time keys and the spend it holds; spend reservations wait for the fleet to do so, and key changes too. Run Redis with persistence (appendonly yes) and maxmemory-policy noeviction to keep it from happening",
		"epoch_was", old, "epoch", new)
}

// readyDetail is what /readyz adds about the fleet: the last loss of the
// store's data this replica saw, if any ("" outside a fleet or without
// one).
func (f *fleet) readyDetail() string {
	if f == nil {
		return ""
	}
	l := f.lost.Load()
	if l == nil {
		return ""
	}
	return fmt.Sprintf("shared store: lost its data %s ago (epoch %s, now %s); this replica wrote back what it held\n",
		time.Since(l.at).Round(time.Second), l.old, l.new)
}

// serveReady answers a /readyz that found the replica ready: ok, and
// what the fleet has to say (readyDetail).
func serveReady(w http.ResponseWriter, f *fleet) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write([]byte("ok\n" + f.readyDetail()))
}

// storeError counts a failed call to the store (op: heartbeat, budget,
// lease) and logs it, at most once a minute for each op and what it
// named: kind is "wrongtype" when Redis answered that a key holds
// another type (fleetstore.KeyError), "error" otherwise.
func (f *fleet) storeError(op, name string, err error, msg string, attrs ...any) {
	kind := "error"
	if fleetstore.KeyError(err) {
		kind = "wrongtype"
	}
	if f.errs != nil {
		f.errs.WithLabelValues(op, kind).Inc()
	}
	now := time.Now()
	if last, ok := f.logged.Load(op + "\x00" + name); ok && now.Sub(last.(time.Time)) < time.Minute {
		return
	}
	f.logged.Store(op+"\x00"+name, now)
	f.log.Warn(msg, append([]any{"op", op, "name", name, "kind", kind, "cause", err.Error()}, attrs...)...)
}

// ready reports whether this replica may report ready as one of the
// fleet: it has joined (fleetstore.Members.Joined: it knows the fleet
// and every other replica counts it) and holds a part of the fleet's
// concurrency limits (fleetstore.Claims.Ready: the others have given
// some back), or the store does not answer, so that there is nothing
// to learn and it decides alone (said in the log and in
// sluice_fleet_store_shared). Outside a fleet (f nil), /readyz may
// always say ready as far as the fleet goes.
func (f *fleet) ready() bool {
	return f == nil || (f.members.Joined() && f.claims.Ready()) || !f.reachable.Load()
}

// reach notes whether Redis answers, from a heartbeat or a budget call,
// and logs each change once.
func (f *fleet) reach(ok bool, cause error) {
	if f.reachable.Swap(ok) == ok {
		return
	}
	if !ok {
		msg := "unreachable"
		if cause != nil {
			msg = cause.Error()
		}
		f.log.Warn("shared store unreachable; deciding alone with this replica's share of the fleet's limits",
			"cause", msg, "replicas", f.members.Live())
		return
	}
	f.log.Info("shared store answering again; limits and verdicts are the fleet's")
}

// newFleet connects to the config's store and starts this replica's
// heartbeat, the first within the heartbeat's timeout, so that the
// replica knows the fleet's size before it admits anything. A store
// that does not answer yet means deciding locally, not refusing to
// start; it is logged at once, whatever else is configured, and shown
// in sluice_fleet_store_shared.
func newFleet(cfg *config.Config, log *slog.Logger, m *metrics.Metrics) (*fleet, error) {
	rdb, err := fleetstore.NewClientURL(cfg.Store)
	if err != nil {
		return nil, fmt.Errorf("store: not a Redis URL: %w", err)
	}
	id := cfg.Fleet.ID
	if id == "" {
		host, _ := os.Hostname()
		id = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	prefix := cfg.Fleet.Prefix
	f := &fleet{rdb: rdb, id: id, store: cfg.Store, prefix: prefix, timeout: cfg.Fleet.Timeout.D(), stop: func() {}, log: log}
	if m != nil {
		f.errs, f.losses = m.FleetStoreErrors, m.FleetStoreLosses
	}
	f.evidenceEvery = max(time.Millisecond, time.Duration(float64(fleetcore.EvidenceEvery)*cfg.TimeFactor()))
	f.probeLease = max(time.Millisecond, time.Duration(float64(fleetcore.ProbeLease)*cfg.TimeFactor()))
	f.reachable.Store(true) // said otherwise only once it is not
	f.channels = fleetstore.NewChannels(rdb, fleetstore.Options{Prefix: prefix})
	f.leases = fleetstore.NewLeases(rdb, fleetstore.Options{Prefix: prefix})
	f.members = fleetstore.NewMembers(rdb, fleetstore.MemberOptions{Prefix: prefix, ID: id, OnReach: f.reach,
		OnKeyError: func(err error) {
			f.storeError("heartbeat", prefix+"members", err, "shared store: the fleet's members key or its epoch key holds another type; keeping the last replica count (delete the key to repair it)",
				"replicas", f.members.Live())
		},
		// Every heartbeat that misses is counted, not only the first of
		// an outage: an outage that only the heartbeat sees (no budget
		// call failed) moves sluice_fleet_store_errors_total too, which
		// the shipped alert watches. The log says it once per outage
		// (reach).
		OnError: func(error) {
			if f.errs != nil {
				f.errs.WithLabelValues("heartbeat", "error").Inc()
			}
		},
		OnLoss: f.sawLoss,
	})
	f.claims = fleetstore.NewClaims(rdb, f.members, fleetstore.ClaimOptions{Prefix: prefix, ID: id,
		OnKeyError: func(err error) {
			f.storeError("claims", prefix+"claims", err, "shared store: the fleet's claims key holds another type; this replica decides alone with an equal share of the concurrency limits (delete the key to repair it)")
		}})
	f.budgets = fleetstore.NewBudgets(rdb, fleetstore.BudgetOptions{
		Prefix:  prefix,
		Timeout: f.timeout,
		// Decisions come from credit taken from Redis ahead of time
		// (a few microseconds), and go to Redis only when the credit
		// cannot cover them, so refusals stay exact (package store,
		// "Allotments").
		Allot:    true,
		Replicas: f.members.Live,
		OnMode: func(m fleetstore.Mode, cause error) {
			if m == fleetstore.Local && f.errs != nil {
				f.errs.WithLabelValues("budget", "error").Inc()
			}
			f.reach(m == fleetstore.Shared, cause)
		},
		OnKeyError: func(name string, err error) {
			f.storeError("budget", name, err, "shared store: a budget's key holds another type; this replica decides that budget alone with its share, the others stay shared (delete the key to repair it)")
		},
	})
	if err := f.members.Start(); err != nil && !fleetstore.KeyError(err) {
		f.reachable.Store(false)
		log.Warn("shared store unreachable at start; deciding alone, as a fleet of one, with the whole of every limit until it answers",
			"store", redactURL(cfg.Store), "cause", err.Error())
	}
	return f, nil
}

// redactURL is a store URL without its password.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(not a URL)"
	}
	return u.Redacted()
}

// inherit carries prev's place in the fleet over to f, the fleet of
// the configuration that replaces prev's (a reload): f need not join
// again, and takes over the claim on the fleet's limits, asking for
// what its engine counts, the calls prev still runs included
// (runner.Runner.Handover). A reload that names another store, prefix
// or ID joins afresh.
func (f *fleet) inherit(prev *fleet) {
	if f == nil || prev == nil || f.store != prev.store || f.prefix != prev.prefix || f.id != prev.id {
		return
	}
	// The claim first: f's claims ask only once its members have joined.
	f.claims.Inherit(prev.claims)
	f.members.Inherit(prev.members)
	// Ask now, so that the claim is this configuration's before prev's
	// is closed (prev's Close then leaves it alone).
	if f.rn != nil {
		f.claims.Step(f.rn.SharedLoads)
	}
}

// startClaims starts asking for this replica's part of the fleet's
// fixed limits, for rn's engine.
func (f *fleet) startClaims(rn *runner.Runner) {
	f.rn = rn
	f.claims.Start(rn.SharedLoads, rn.Pump)
}

func (f *fleet) close() {
	f.stop()
	f.claims.Close()
	f.members.Close()
	f.budgets.Close()
	f.rdb.Close()
}

// budgetName is a key's budget in the store.
func budgetName(k *virtualKey) string { return "key:" + k.name }

// shares reports whether a request's key budget lives in the store.
func (g *Gateway) shares(x *exchange) bool {
	return g.fleet != nil && x.key != nil && x.key.limits != (quota.Limits{})
}

// takeShared takes a request's reservation from its key's budget in the
// store, when the store keeps it, to be settled when the hop ends.
// Refused, it is answered (429, or 413 when no wait lets it through) and
// takeShared reports false.
func (h *hop) takeShared() bool {
	g, w, x, req := h.g, h.w, h.x, h.req
	if !g.shares(x) {
		return true
	}
	cost := g.runner.Reservation(req)
	ctx, cancel := context.WithTimeout(context.Background(), 4*g.fleet.timeout)
	defer cancel()
	v, st, _ := g.fleet.budgets.Take(ctx, budgetName(x.key), x.key.limits, cost)
	x.shared, x.haveShared, x.sharedStatus = true, true, st
	g.fleet.status.Store(x.key.name, st)
	if v.OK {
		x.sharedReserved = cost
		return true
	}
	x.shared = false // nothing held
	g.setRateHeaders(w.Header(), x)
	budgetRefused(g.metrics, w, x, &admission.Rejection{Reason: admission.ReasonKeyBudget, Priority: x.priority,
		RetryAfter: v.RetryAfter, Dimension: v.Dimension.String(), TooLarge: v.Never})
	return false
}

// settleShared settles what takeShared reserved: with what the request
// used, or whole when it never ran (was never admitted).
func (h *hop) settleShared() {
	g, x, req, ran := h.g, h.x, h.req, h.x.admitted
	if !x.shared {
		return
	}
	x.shared = false
	ctx, cancel := context.WithTimeout(context.Background(), 4*g.fleet.timeout)
	defer cancel()
	used := quota.Cost{}
	if ran {
		used = g.runner.Used(req, outcomeOf(x))
	}
	st, _ := g.fleet.budgets.Settle(ctx, budgetName(x.key), x.key.limits, x.sharedReserved, used)
	g.fleet.status.Store(x.key.name, st)
}

// sharedQuotas reads the keys' shared budgets for the metrics, with
// what this replica's requests hold of each (the engine keeps that, as
// it does for a budget of its own).
func (g *Gateway) sharedQuotas() []metrics.Quota {
	var out []metrics.Quota
	ctx, cancel := context.WithTimeout(context.Background(), 4*g.fleet.timeout)
	defer cancel()
	for _, k := range append(g.keys.list[:len(g.keys.list):len(g.keys.list)], g.keys.runtimeKeyList()...) {
		if k.limits == (quota.Limits{}) {
			continue
		}
		st, err := g.fleet.budgets.Status(ctx, budgetName(k), k.limits)
		if err != nil {
			continue
		}
		held := g.runner.KeyReserved(k.index)
		for d, s := range st {
			if s.Limit > 0 {
				out = append(out, metrics.Quota{Owner: "key", Name: k.name, Dimension: quota.Dimension(d).String(), Limit: s.Limit, Remaining: s.Remaining, Reserved: held[d]})
			}
		}
	}
	return out
}

// share is this replica's part of the fleet's fixed concurrency
// limits, from 0 to 1, for the metrics.
func (f *fleet) share() float64 {
	return float64(f.claims.Parts()) / float64(fleetcore.Whole)
}

// state reports the live replicas and whether budgets are shared now,
// for the metrics.
func (f *fleet) state() (int, bool) {
	return f.members.Live(), f.reachable.Load() && f.budgets.Mode() == fleetstore.Shared
}

// One decision for the fleet: a replica whose breaker trips, or whose
// probes find the provider back, tells the others on the store's
// "breaker" channel, and they adopt the verdict (breaker.Adopt), so a
// trip seen through one replica takes the provider out of rotation on
// all of them at once. Only one replica probes a provider: the holder
// of its probe lease, which another replica takes over when the holder
// stops renewing it (it died, or its breaker closed). With the store
// down, each replica probes and judges alone. The rules are package
// fleet's; this file carries them over Redis.

// verdict is a breaker transition as the fleet's channel carries it.
type verdict struct {
	From     string         `json:"from"`
	Provider string         `json:"provider"`
	To       breaker.State  `json:"to"`
	Step     int            `json:"step"`
	Reason   breaker.Reason `json:"reason"`
}

const verdictChannel = "breaker"

// evidence is one replica's breaker counts for one provider, as the
// fleet's evidence channel carries them.
type evidence struct {
	From     string             `json:"from"`
	Provider string             `json:"provider"`
	Buckets  []breaker.Evidence `json:"buckets"`
}

const evidenceChannel = "evidence"

// follow subscribes to the fleet's breaker verdicts and evidence,
// adopting the other replicas' verdicts and counting their calls into
// rn's breakers (providers by name, byScope by admission scope), and
// sends this replica's counts every evidenceEvery, until close.
func (f *fleet) follow(rn *runner.Runner, providers map[string]*provider, byScope []*provider) {
	rn.ShareEvidence()
	verdicts, stopV := f.channels.Subscribe(context.Background(), verdictChannel)
	counts, stopE := f.channels.Subscribe(context.Background(), evidenceChannel)
	done := make(chan struct{})
	f.stop = func() { stopV(); stopE(); close(done) }
	go func() {
		for m := range verdicts {
			var v verdict
			if json.Unmarshal(m, &v) != nil || v.From == f.id {
				continue
			}
			if p, ok := providers[v.Provider]; ok {
				rn.Adopt(p.scope, v.To, v.Step, v.Reason)
			}
		}
	}()
	go func() {
		for m := range counts {
			var ev evidence
			if json.Unmarshal(m, &ev) != nil || ev.From == f.id {
				continue
			}
			if p, ok := providers[ev.Provider]; ok {
				rn.AddEvidence(p.scope, ev.Buckets)
			}
		}
	}()
	go func() {
		t := time.NewTicker(f.evidenceEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			for s, ev := range rn.DrainEvidence() {
				if len(ev) == 0 {
					continue
				}
				msg, _ := json.Marshal(evidence{From: f.id, Provider: byScope[s].name, Buckets: ev})
				ctx, cancel := context.WithTimeout(context.Background(), 4*f.timeout)
				_ = f.channels.Publish(ctx, evidenceChannel, msg)
				cancel()
			}
		}
	}()
}

// announce tells the fleet of a breaker transition this replica made,
// if fleetcore.Announce says to; outside a fleet (f nil), nothing. It
// runs under the runner's lock, so the message goes out from a goroutine
// of its own.
func (f *fleet) announce(provider string, t lifecycle.Transition) {
	if f == nil || !fleetcore.Announce(t.To, t.Reason) {
		return
	}
	f.publishVerdict(provider, fleetcore.Verdict{To: t.To, Step: t.Step, Reason: t.Reason})
}

// publishVerdict sends a verdict on the fleet's channel, from a
// goroutine of its own.
func (f *fleet) publishVerdict(provider string, v fleetcore.Verdict) {
	msg, _ := json.Marshal(verdict{From: f.id, Provider: provider, To: v.To, Step: v.Step, Reason: v.Reason})
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = f.channels.Publish(ctx, verdictChannel, msg)
	}()
}

// mayProbe reports whether this replica probes provider p now
// (fleetcore.MayProbe): it holds (or takes) the provider's probe lease,
// or it is alone, or the store does not answer and it judges alone. A
// lease call that fails while the store is thought up does not probe
// (another replica may hold the lease); it is logged and counted. A
// lease key that holds another type is that lease's failure alone:
// every replica probes, as with the store down. Outside a fleet (f nil)
// it always probes.
func (f *fleet) mayProbe(ctx context.Context, p *provider) bool {
	if f == nil {
		return true
	}
	alone := !f.reachable.Load()
	ctx, cancel := context.WithTimeout(ctx, 4*f.timeout)
	defer cancel()
	held, err := f.leases.Lease(ctx, "probe:"+p.name, f.id, f.probeLease)
	if err != nil {
		alone = alone || fleetstore.KeyError(err)
		what := "skipping this probe round"
		if alone {
			what = "probing alone"
		}
		f.storeError("lease", "probe:"+p.name, err, "shared store: probe lease call failed; "+what, "provider", p.name)
	}
	return fleetcore.MayProbe(held, err, alone)
}

// probeFailed tells the fleet that this replica's probe of p failed
// (fleetcore.ProbeFailed): the replicas that do not probe hold requests for
// exactly this verdict. Outside a fleet (f nil), nothing.
func (f *fleet) probeFailed(p *provider) {
	if f == nil {
		return
	}
	f.publishVerdict(p.name, fleetcore.ProbeFailed())
}
