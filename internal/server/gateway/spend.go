package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/core/price"
	"github.com/sluice-gw/sluice/internal/core/spend"
	"github.com/sluice-gw/sluice/internal/policy"
	"github.com/sluice-gw/sluice/internal/server/fleetstore"
	"github.com/sluice-gw/sluice/internal/server/metrics"
	"github.com/sluice-gw/sluice/internal/server/spendstore"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// Spend limits in dollars (package spend has the rules; docs/SPEND.md
// the guide). A request whose key or team has one reserves its maximum
// cost (spend.MaxCost over its model's targets) after its tokens are
// counted and before any upstream call, in the store (spendstore):
// Redis with store:, else state.dir's journal. Refused, it gets 429 in
// its dialect with Retry-After until the reset and x-should-retry:
// false. Each upstream call is billed for what it used, as the ledger
// records it (ledger.go), which every other book reads too:
//
//   - the call that answered, at its provider's reported usage (or what
//     was relayed of a stream cut short), plus each continuation call of
//     a broken stream at its own input and output;
//   - a hedge, a rescue or a first-token second call reserves its own
//     maximum on its target before it launches, and does not launch when
//     the limit is spent; the call that loses the race is billed its
//     input and what it had generated (a whole answer's usage, or a
//     token per choice for a stream cut at its first token; its input
//     alone when it was cancelled before answering);
//   - a call that failed (an error status, no connection) costs nothing.
//
// A reservation that is never settled (the process died) stays charged
// whole (spendstore).

// spendShared is the spend store a Host's configurations share, so
// that a reload keeps what the store remembers (spendstore.Redis) and
// one journal stays open (spendstore.File).
type spendShared struct {
	mu    sync.Mutex
	where string
	store spendstore.Store
	// closers release what open made (the store, its Redis client).
	closers []func() error
	// redis is store when it is Redis's: the serving configuration's
	// fleet tells it the live replica count (countReplicas).
	redis *spendstore.Redis
}

// countReplicas points a Redis spend store at the fleet's live replica
// count, which a replica deciding alone divides the headroom by (the
// configuration serving now's census: a reload's gateway takes over).
func (s *spendShared) countReplicas(live func() int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.redis != nil && live != nil {
		s.redis.CountReplicas(live)
	}
}

// close releases the store.
func (s *spendShared) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.closers {
		c()
	}
	s.closers, s.store, s.redis = nil, nil, nil
}

// open returns the store cfg names, opening it the first time.
func (s *spendShared) open(cfg *config.Config, log *slog.Logger, m *metrics.Metrics) (spendstore.Store, error) {
	where := "memory"
	switch {
	case cfg.Store != "":
		where = "redis " + cfg.Store + " " + cfg.Fleet.Prefix
	case cfg.State.Dir != "":
		where = "file " + cfg.State.Dir
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.store != nil && s.where == where {
		return s.store, nil
	}
	if s.store != nil {
		log.Warn("spend: the store changed on reload; the new one is used, the old one's spend stays where it is")
	}
	var st spendstore.Store
	switch {
	case cfg.Store != "":
		rdb, err := fleetstore.NewClientURL(cfg.Store)
		if err != nil {
			return nil, fmt.Errorf("store: not a Redis URL: %w", err)
		}
		var mu sync.Mutex
		var last time.Time
		r := spendstore.NewRedis(rdb, spendstore.RedisOptions{Prefix: cfg.Fleet.Prefix, Timeout: max(4*cfg.Fleet.Timeout.D(), 100*time.Millisecond),
			OnError: func(err error) {
				if m != nil {
					m.FleetStoreErrors.WithLabelValues("spend", "error").Inc()
				}
				mu.Lock()
				defer mu.Unlock()
				if time.Since(last) < time.Minute {
					return
				}
				last = time.Now()
				log.Warn("spend: the store did not answer; deciding spend limits alone, on this replica's share of what was left, until it does", "cause", err.Error())
			},
			OnLoss: func(old, new string) {
				if m != nil {
					m.FleetStoreLosses.WithLabelValues("spend").Inc()
				}
				log.Warn("spend: the shared store lost its data; this replica re-seeds the totals it last saw, and reservations wait for the fleet to do so",
					"epoch_was", old, "epoch", new)
			}})
		st, s.redis = r, r
		s.closers = append(s.closers, st.Close, rdb.Close)
	case cfg.State.Dir != "":
		f, err := spendstore.OpenFile(cfg.State.Dir)
		if err != nil {
			return nil, err
		}
		st = f
		s.closers = append(s.closers, f.Close)
	default:
		log.Warn("spend: neither store: nor state.dir is set; spend is kept in memory and a restart forgets it")
		st = spendstore.NewMemory()
	}
	s.where, s.store = where, st
	return st, nil
}

// spender is a configuration's spend limits.
type spender struct {
	store spendstore.Store
	loc   *time.Location
	// limits are every key's limits (its team's included) and every
	// team's, for the metrics.
	limits [][]spend.Limit
	prices map[string]price.Price
	log    *slog.Logger
	// now is the gateway's clock; metrics count refusals.
	now     func() time.Time
	metrics *metrics.Metrics
	// own is the store this gateway opened for itself, closed with it;
	// shared the one it uses (own, or its host's).
	own, shared *spendShared
}

// newSpender returns cfg's spend limits, or nil when there are none.
func newSpender(cfg *config.Config, shared *spendShared, injected spendstore.Store, log *slog.Logger, now func() time.Time, m *metrics.Metrics) (*spender, error) {
	if !cfg.HasSpendLimits() {
		return nil, nil
	}
	s := &spender{loc: cfg.Spend.Location(), prices: policy.Prices(cfg), log: log, store: injected, now: now, metrics: m}
	for i := range cfg.Keys {
		s.limits = append(s.limits, policy.SpendLimits(cfg, &cfg.Keys[i]))
	}
	for _, t := range cfg.Teams { // for the metrics: teams of run-time keys alone too
		s.limits = append(s.limits, policy.SpendLimits(cfg, &config.Key{Tenant: t.Name}))
	}
	if s.store == nil {
		if shared == nil {
			// A gateway of its own (not a Host's): it closes the store.
			shared = &spendShared{}
			s.own = shared
		}
		st, err := shared.open(cfg, log, m)
		if err != nil {
			return nil, err
		}
		s.store, s.shared = st, shared
	}
	return s, nil
}

// countReplicas tells a Redis spend store the fleet's live replica count
// (fleet.go); nothing for another store, or without spend limits.
func (s *spender) countReplicas(live func() int) {
	if s != nil && s.shared != nil {
		s.shared.countReplicas(live)
	}
}

// limitsOf are x's key's spend limits, its team's included, for a key
// of the file's or one made at run time.
func (s *spender) limitsOf(x *exchange) []spend.Limit {
	if s == nil || x.key == nil {
		return nil
	}
	return x.key.spend
}

// reserve takes amount from every limit, or says which refused.
func (s *spender) reserve(limits []spend.Limit, amount price.Micros, now time.Time) (*spendHold, spend.Totals, []spend.Need, *spend.Refusal) {
	needs := spend.Plan(limits, now, s.loc)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tot, r, err := s.store.Reserve(ctx, needs, amount)
	if err != nil {
		// A journal that could not be written: the reservation holds in
		// memory, and the request goes on.
		s.log.Warn("spend: a reservation was not journalled", "cause", err.Error())
	}
	if r != nil {
		return nil, tot, needs, r
	}
	h := &spendHold{store: s.store, log: s.log, reserved: amount}
	for _, n := range needs {
		h.buckets = append(h.buckets, n.Reserve)
	}
	return h, tot, needs, nil
}

// reserveSpend reserves req's maximum cost on m from its key's and
// team's spend limits. Refused, the request is answered and
// reserveSpend reports false. Past a soft threshold, the answer carries
// X-Sluice-Spend-Warning.
func (h *hop) reserveSpend() bool {
	g, w, x, m, req := h.g, h.w, h.x, h.m, h.req
	limits := g.spend.limitsOf(x)
	if len(limits) == 0 {
		return true
	}
	prices := make([]price.Price, 0, len(m.targets))
	for _, t := range m.targets {
		prices = append(prices, g.spend.prices[t.model])
	}
	r := spend.Request{Input: req.InputTokens, Choices: req.Choices, MaxOutput: req.MaxOutput, DefaultOutput: req.DefaultOutput}
	cost := spend.MaxCost(r, prices)
	now := g.now()
	hold, tot, needs, ref := g.spend.reserve(limits, cost, now)
	if ref != nil {
		g.spend.refused(w, x, ref, now)
		return false
	}
	hold.input, hold.choices, hold.output = req.InputTokens, max(req.Choices, 1), r.Output()
	x.spendHold, x.spendBase = hold, hold
	if wn, ok := spend.Warn(needs, tot); ok {
		w.Header().Set("X-Sluice-Spend-Warning", wn.Header())
	}
	return true
}

// spendRefused answers a request a spend limit refused: 429 in the
// client's dialect (OpenAI: insufficient_quota, code
// spend_limit_exceeded; Anthropic: rate_limit_error), Retry-After until
// the reset, and x-should-retry: false, which the official SDKs obey:
// no retry helps before the reset.
func (s *spender) refused(w http.ResponseWriter, x *exchange, r *spend.Refusal, now time.Time) {
	s.metrics.SpendRefusals.WithLabelValues(r.Limit.Scope, r.Limit.Name, r.Limit.WindowName()).Inc()
	w.Header().Set("X-Should-Retry", "false")
	x.fail(w, protocol.SpendLimited, outcomeClientError, "spend_limit", r.Message(s.loc), r.RetryAfter(now))
}

// holdSecond reserves a second call's own maximum (a hedge, a rescue, a
// first-token call) on its target, reporting false when the key's spend
// limit refuses it: the call is then not made.
func (s *spender) holdSecond(x *exchange, a *attempt) bool {
	limits := s.limitsOf(x)
	f := x.spendBase
	if len(limits) == 0 || f == nil {
		return true
	}
	// The first call's reservation was for its input and output on the
	// dearest target; the second's is the same request on its own.
	p := s.prices[a.t.model]
	cost := p.Cost(price.Usage{Input: f.input, Output: f.choices * f.output})
	h, _, _, ref := s.reserve(limits, cost, s.now())
	if ref != nil {
		s.metrics.SpendRefusals.WithLabelValues(ref.Limit.Scope, ref.Limit.Name, ref.Limit.WindowName()).Inc()
		return false
	}
	h.input, h.choices, h.output = f.input, f.choices, f.output
	a.hold = h
	return true
}

// settleSpend settles what x's calls reserved and did not settle: the
// answering call's with what its record and its continuations' cost
// (ledger.go), a reservation never handed to a call with nothing. A
// call the client did not get settles its own when it is recorded
// (calls.recordDiscarded).
func (h *hop) settleSpend() {
	x := h.x
	cost := x.tally.answerSettled()
	if h := x.spendHold; h != nil {
		x.spendHold = nil
		h.settle(0) // the request never reached a provider
	}
	if h := x.spendWinner; h != nil {
		x.spendWinner = nil
		h.settle(cost)
	}
}

// spendMetrics reads every key's and team's spend for the metrics.
func (s *spender) spendMetrics() []metrics.Spend {
	if s == nil {
		return nil
	}
	seen := map[string]bool{}
	var limits []spend.Limit
	for _, ls := range s.limits {
		for _, l := range ls {
			id := l.Scope + "\x00" + l.Name + "\x00" + l.WindowName()
			if !seen[id] {
				seen[id] = true
				limits = append(limits, l)
			}
		}
	}
	needs := spend.Plan(limits, s.now(), s.loc)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	tot, _ := s.store.Read(ctx, needs)
	out := make([]metrics.Spend, 0, len(needs))
	for i, n := range needs {
		var v price.Micros
		if i < len(tot) {
			v = tot.Sum(i)
		}
		out = append(out, metrics.Spend{Scope: n.Limit.Scope, Name: n.Limit.Name, Window: n.Limit.WindowName(),
			Spent: v.Dollars(), Limit: n.Limit.Amount.Dollars()})
	}
	return out
}
