package lifecycle

import (
	"time"

	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/quota"
)

// Tokens, not requests, are what a provider meters and bills. The engine
// keeps per-minute budgets (package quota) in requests, input tokens and
// output tokens for each virtual key, for the large-context lane as a
// whole, and for each provider and upstream model (the account's quota),
// and charges every request against them:
//
//   - A request reserves {1 request, its input tokens, its max_tokens}
//     when it arrives, from its key and (if large) the lane. Refused
//     there, it is answered at once (429 for its key, with the exact
//     wait; 503 for the lane) and never queues.
//   - A provider or model whose budget cannot take the reservation is
//     passed over, as a paused one is; with every target out, the
//     request is refused with the wait for the first to come back.
//     Each call (a hedge, a rescue or a retry too) is charged to its
//     provider when it starts, into debt if the budget moved meanwhile:
//     the call is going out either way, and the debt makes the next
//     ones wait.
//   - When the request ends, every reservation is settled with what was
//     used (the provider's usage, or the host's count of what it
//     relayed), so a key that asked for 4,000 tokens and got 300 pays
//     for 300. A request that never started is refunded whole.

// DefaultMaxOutput is the output cap of each answer of a request that
// names no max_tokens, on a model with no default_max_tokens
// (Route.DefaultOutput): what it reserves of its budgets, how long its
// answer may take to generate before it is slow (inFlightAllowance), and
// where its host cuts what it relays (OutputLimit). It is the max_tokens
// translation gives an Anthropic request whose client named none, and
// what spend limits reserve for it, so one number holds throughout.
// Settlement charges what was used either way.
const DefaultMaxOutput = 4096

// NoOutput is Request.MaxOutput for an endpoint that generates no output
// tokens (embeddings): it reserves none and is charged none.
const NoOutput = -1

// Budgets configures the engine's token budgets. Zero limits are none.
type Budgets struct {
	// Keys[k-1] is the budget of key k (Request.Key).
	Keys []quota.Limits
	// LargeMinInput: requests with at least this many input tokens join
	// the large-context lane, admission lane 1 (Admission.Lanes[0]), and
	// take from Large, its budget across keys. Zero: no lane.
	LargeMinInput int64
	Large         quota.Limits
	// Scopes[s] is provider s's budget across its models; Models[s] maps
	// an upstream model on provider s to its own.
	Scopes []quota.Limits
	Models []map[string]quota.Limits
	// OutputReserve replaces DefaultMaxOutput when positive.
	OutputReserve int64
	// SharedKeys: the keys' budgets are kept by the host, in the fleet's
	// shared store; the engine does not take from them, and reads Keys
	// only to size reservations (Engine.Reservation).
	SharedKeys bool
}

// books holds the budgets themselves. A nil budget is no limit.
type books struct {
	keys []*quota.Budget
	// limits are each key's limits, as keys' budgets were built from;
	// shared: Budgets.SharedKeys.
	limits []quota.Limits
	shared bool
	// outCap is, per key, its output budget's burst (0: none): a request
	// that names no max_tokens reserves no more than it.
	outCap []int64
	// reserved is, per key, what requests in the gateway hold of its
	// budget now: taken at arrival, given back when they settle.
	reserved [][3]int64
	large    *quota.Budget
	largeMin int64
	scopes   []*quota.Budget
	models   []map[string]*quota.Budget
	reserve  int64
	// replicas, in a fleet, is the live replica count: this replica's
	// share of a provider's or model's budget is 1/replicas of it, which
	// it keeps by charging each call replicas times over (so a change in
	// the count applies at once, with nothing rebuilt).
	replicas func() int
}

// share is the multiplier of provider and model charges: the live
// replica count in a fleet, else 1.
func (bk *books) share() int64 {
	if bk.replicas == nil {
		return 1
	}
	return int64(max(1, bk.replicas()))
}

// times is c charged n times over.
func times(c quota.Cost, n int64) quota.Cost {
	return quota.Cost{Requests: c.Requests * n, InputTokens: c.InputTokens * n, OutputTokens: c.OutputTokens * n}
}

// budgetOf builds a budget, or nil for limits that limit nothing. The
// limits were validated with the config, so New cannot fail on them;
// should it, the budget is left out rather than the engine refused.
func budgetOf(l quota.Limits) *quota.Budget {
	if l == (quota.Limits{}) {
		return nil
	}
	b, err := quota.New(l)
	if err != nil {
		return nil
	}
	return b
}

func newBooks(c Budgets) books {
	bk := books{large: budgetOf(c.Large), largeMin: c.LargeMinInput, reserve: c.OutputReserve, shared: c.SharedKeys}
	if bk.reserve <= 0 {
		bk.reserve = DefaultMaxOutput
	}
	for i, l := range c.Keys {
		bk.setKey(i+1, l)
	}
	for _, l := range c.Scopes {
		bk.scopes = append(bk.scopes, budgetOf(l))
	}
	for _, ms := range c.Models {
		m := make(map[string]*quota.Budget, len(ms))
		for name, l := range ms {
			if b := budgetOf(l); b != nil {
				m[name] = b
			}
		}
		bk.models = append(bk.models, m)
	}
	return bk
}

// setKey sets key k's limits, adding keys up to k. A key whose limits
// are unchanged keeps its budget and what it holds; one whose limits
// changed gets a full budget of the new limits.
func (bk *books) setKey(k int, l quota.Limits) {
	if k < 1 {
		return
	}
	for len(bk.keys) < k {
		bk.keys = append(bk.keys, nil)
		bk.limits = append(bk.limits, quota.Limits{})
		bk.outCap = append(bk.outCap, 0)
		bk.reserved = append(bk.reserved, [3]int64{})
	}
	i := k - 1
	if bk.limits[i] == l && (bk.keys[i] != nil || bk.shared || l == (quota.Limits{})) {
		return
	}
	bk.limits[i] = l
	bk.keys[i] = nil
	if !bk.shared {
		bk.keys[i] = budgetOf(l)
	}
	o := l[quota.OutputTokens]
	bk.outCap[i] = max(o.Burst, o.PerMinute)
}

// SetKey sets key k's budget (from 1, as Request.Key) and tenant (as
// Config.KeyTenants), adding keys up to k: a host whose keys change
// while it runs (keys made through an admin API) numbers them after the
// configured ones and calls SetKey for each, again whenever its limits
// change. Unchanged limits keep the budget's state; changed ones start
// a full budget. A key that is gone keeps its number (requests in
// flight may hold it), with no limits set by its last SetKey.
func (e *Engine) SetKey(k int, l quota.Limits, tenant int) {
	if k < 1 {
		return
	}
	e.books.setKey(k, l)
	for len(e.keyTenants) < k {
		e.keyTenants = append(e.keyTenants, 0)
	}
	e.keyTenants[k-1] = tenant
}

// key returns key k's budget, or nil.
func (bk *books) key(k int) *quota.Budget {
	if k >= 1 && k <= len(bk.keys) {
		return bk.keys[k-1]
	}
	return nil
}

// large reports whether r belongs to the large-context lane.
func (bk *books) isLarge(r Request) bool {
	return bk.largeMin > 0 && r.InputTokens >= bk.largeMin
}

// lane is r's admission lane: 1 for large-context work, else none.
func (bk *books) lane(r Request) int {
	if bk.isLarge(r) {
		return 1
	}
	return 0
}

// cost is what r reserves: its output cap (perAnswer) once for each
// answer it asks for (Choices: n = 10 with max_tokens 100 may well use
// 1,000), which is more than its key's whole budget when n answers of
// the cap are (refused then, as Never: a 413).
func (bk *books) cost(r Request) quota.Cost {
	return quota.Cost{Requests: 1, InputTokens: max(r.InputTokens, 0), OutputTokens: choices(bk.perAnswer(r), r.Choices)}
}

// perAnswer is the output cap of each of r's answers: its max_tokens,
// or, when it names none, its route's default (Route.DefaultOutput),
// else the engine's (DefaultMaxOutput), but never more than its key's
// whole output budget, so that a key whose minute holds less than the
// default can still be asked without max_tokens (and gets at most its
// minute's worth). 0 for an endpoint that generates none. Leaving
// max_tokens out is asking for this cap: it is reserved, it sets how
// long the answer may take to generate, and the host cuts what it
// relays at it (OutputLimit).
func (bk *books) perAnswer(r Request) int64 {
	switch {
	case r.MaxOutput == NoOutput:
		return 0
	case r.MaxOutput > 0:
		return r.MaxOutput
	}
	out := bk.reserve
	if r.DefaultOutput > 0 {
		out = r.DefaultOutput
	}
	if k := r.Key - 1; k >= 0 && k < len(bk.outCap) && bk.outCap[k] > 0 {
		out = min(out, bk.outCap[k])
	}
	return out
}

// OutputMargin is how far past its cap a request's relayed output may
// go before its host cuts it (OutputLimit): 1/32 of the cap, at least
// 16 tokens. A host counts what it relays from the stream's events
// (about a token an event), never more than a provider that keeps to
// max_tokens generates; the margin is room for a count that differs by
// a few tokens, never for a provider that ignores the cap.
func OutputMargin(cap int64) int64 {
	if cap <= 0 {
		return 0
	}
	return min(max(16, cap/32), maxReserve)
}

// OutputLimit is how much output a host relays for r, whatever its
// provider sends: r's output cap for all its answers (its reservation)
// plus OutputMargin; 0 for an endpoint that generates none. Past it,
// the host ends the answer as a length stop in the client's dialect,
// and settles it with what it relayed: no count past the limit is
// charged (used).
func (e *Engine) OutputLimit(r Request) int64 { return e.books.limit(r) }

// OutputLimitOf is OutputLimit of request id, as it arrived; 0 for an
// id the engine does not hold.
func (e *Engine) OutputLimitOf(id ID) int64 {
	if q, ok := e.reqs.Get(id); ok {
		return e.books.limit(q.req)
	}
	return 0
}

// limit: see OutputLimit.
func (bk *books) limit(r Request) int64 {
	c := bk.cost(r).OutputTokens
	return c + OutputMargin(c)
}

// maxReserve bounds one request's output reservation, so that a huge
// max_tokens times a huge n cannot overflow: far past any budget.
const maxReserve = 1 << 50

// choices is an allowance of out tokens for each of n answers.
func choices(out, n int64) int64 {
	if n <= 1 {
		return out
	}
	if out > maxReserve/n {
		return maxReserve
	}
	return out * n
}

// targetBudgets returns the budgets of target i of r: its provider's and
// its upstream model's, either nil.
func (bk *books) targetBudgets(r Request, i int) (prov, model *quota.Budget) {
	ts := targets(r)
	if i < 0 || i >= len(ts) {
		return nil, nil
	}
	s := ts[i]
	if s >= 0 && s < len(bk.scopes) {
		prov = bk.scopes[s]
	}
	if s >= 0 && s < len(bk.models) && i < len(r.Models) {
		model = bk.models[s][r.Models[i]]
	}
	return prov, model
}

// targetWait is how long until target i's budgets take r's reservation:
// zero if they do now.
func (bk *books) targetWait(now time.Time, r Request, i int) time.Duration {
	var wait time.Duration
	prov, model := bk.targetBudgets(r, i)
	for _, b := range [2]*quota.Budget{prov, model} {
		if b == nil {
			continue
		}
		if v := b.Check(now, times(bk.cost(r), bk.share())); !v.OK {
			if v.Never {
				return time.Hour // no wait lets it through; others may
			}
			wait = max(wait, v.RetryAfter)
		}
	}
	return wait
}

// reserve takes r's reservation from its key and, if large, the lane,
// in both or neither. The refusal says which refused, with its verdict.
func (bk *books) reserveFor(now time.Time, r Request) (admission.Refusal, quota.Verdict, bool) {
	c := bk.cost(r)
	kb := bk.key(r.Key)
	if kb != nil {
		if v := kb.Take(now, c); !v.OK {
			return admission.Refusal{Priority: r.Priority, Reason: admission.ReasonKeyBudget, RetryAfter: v.RetryAfter}, v, false
		}
	}
	if bk.isLarge(r) && bk.large != nil {
		if v := bk.large.Take(now, c); !v.OK {
			if kb != nil {
				kb.Refund(now, c)
			}
			return admission.Refusal{Priority: r.Priority, Reason: admission.ReasonLaneBudget, RetryAfter: v.RetryAfter}, v, false
		}
	}
	bk.hold(r, c, 1)
	return admission.Refusal{}, quota.Verdict{OK: true}, true
}

// hold adds sign·c to what r's key holds reserved: of its own budget,
// or, with SharedKeys, of the fleet's (this replica's requests only).
func (bk *books) hold(r Request, c quota.Cost, sign int64) {
	if r.Key < 1 || r.Key > len(bk.reserved) {
		return
	}
	h := &bk.reserved[r.Key-1]
	h[quota.Requests] += sign * c.Requests
	h[quota.InputTokens] += sign * c.InputTokens
	h[quota.OutputTokens] += sign * c.OutputTokens
}

// refund returns r's reservation to its key and lane: it never ran.
func (bk *books) refund(now time.Time, r Request) {
	c := bk.cost(r)
	if kb := bk.key(r.Key); kb != nil {
		kb.Refund(now, c)
	}
	bk.hold(r, c, -1)
	if bk.isLarge(r) && bk.large != nil {
		bk.large.Refund(now, c)
	}
}

// charge takes a call's reservation from target i's budgets as it
// starts, into debt if need be, and returns the multiplier it charged
// with (share), for its settlement.
func (bk *books) charge(now time.Time, r Request, i int) int64 {
	n := bk.share()
	prov, model := bk.targetBudgets(r, i)
	for _, b := range [2]*quota.Budget{prov, model} {
		if b != nil {
			b.Charge(now, times(bk.cost(r), n))
		}
	}
	return n
}

// used is what a call that ended with o used, for settlement. Its
// input is the provider's count when it gave one (Outcome.InputTokens),
// else the request's estimate. Its output is the provider's count when
// it gave one; else what the host counted of the answer, however the
// call ended (a stream cut after 20 tokens used 20); else, for an answer
// with nothing counted, the whole output reservation (nothing less can
// be assumed); else, a call that failed before answering, nothing but
// the request and the input the provider said it read.
func (bk *books) used(r Request, o Outcome) quota.Cost {
	c := bk.cost(r)
	u := quota.Cost{Requests: 1, OutputTokens: int64(o.OutputTokens)}
	in := c.InputTokens
	if o.InputTokens > 0 {
		in = o.InputTokens
	}
	switch {
	case o.UsageKnown || o.OutputTokens > 0:
		u.InputTokens = in // it was read: the answer began
	case o.Kind == OK:
		u.InputTokens, u.OutputTokens = in, c.OutputTokens
	case o.InputTokens > 0:
		u.InputTokens = in
	}
	// No answer is longer than its host relays (OutputLimit: its cap,
	// n answers n times it, and the margin): a count past it is the
	// provider's error, not the key's cost.
	u.OutputTokens = min(u.OutputTokens, bk.limit(r))
	return u
}

// settleCall settles one call's charge on target i, made with
// multiplier n, with what it used.
func (bk *books) settleCall(now time.Time, r Request, i int, o Outcome, n int64) {
	prov, model := bk.targetBudgets(r, i)
	for _, b := range [2]*quota.Budget{prov, model} {
		if b != nil {
			b.Settle(now, times(bk.cost(r), n), times(bk.used(r, o), n))
		}
	}
}

// settleRequest settles the reservations of a request that ran: its
// key's and lane's with what the answer the client got used.
func (bk *books) settleRequest(now time.Time, r Request, o Outcome) {
	c, u := bk.cost(r), bk.used(r, o)
	if kb := bk.key(r.Key); kb != nil {
		kb.Settle(now, c, u)
	}
	bk.hold(r, c, -1)
	if bk.isLarge(r) && bk.large != nil {
		bk.large.Settle(now, c, u)
	}
}

// BudgetStat is one budget's state in one dimension, for metrics.
type BudgetStat struct {
	// Owner is "key", "provider" or "lane"; Index the key's position
	// from 1, or the provider's scope, or 0 for the large-context lane.
	Owner     string
	Index     int
	Dimension quota.Dimension
	quota.Status
	// Reserved is what requests in the gateway hold now (keys only).
	Reserved int64
}

// BudgetStats reports every budget's state in every limited dimension.
func (e *Engine) BudgetStats(now time.Time) []BudgetStat {
	var out []BudgetStat
	add := func(owner string, i int, b *quota.Budget, reserved *[3]int64) {
		if b == nil {
			return
		}
		for d, s := range b.Status(now) {
			if s.Limit == 0 {
				continue
			}
			st := BudgetStat{Owner: owner, Index: i, Dimension: quota.Dimension(d), Status: s}
			if reserved != nil {
				st.Reserved = reserved[d]
			}
			out = append(out, st)
		}
	}
	for k, b := range e.books.keys {
		add("key", k+1, b, &e.books.reserved[k])
	}
	for s, b := range e.books.scopes {
		add("provider", s, b, nil)
	}
	add("lane", 0, e.books.large, nil)
	return out
}

// Reservation is what r reserves of its budgets, and Used what a
// request that ended with o used of them: the rules the engine's own
// budgets follow, for a host that keeps a key's budget in a shared
// store. Both read only the keys' limits (SetKey changes them).
func (e *Engine) Reservation(r Request) quota.Cost { return e.books.cost(r) }

// Used: see Reservation.
func (e *Engine) Used(r Request, o Outcome) quota.Cost { return e.books.used(r, o) }

// KeyReserved is what requests in this gateway hold of key k's budget
// now, in each dimension (indexed by quota.Dimension): with SharedKeys,
// of the fleet's shared budget, which BudgetStats does not report.
func (e *Engine) KeyReserved(k int) (r [3]int64) {
	if k >= 1 && k <= len(e.books.reserved) {
		r = e.books.reserved[k-1]
	}
	return r
}

// BudgetLow reports whether a budget's status has less than below of its
// burst left in some limited dimension (ShouldDegrade's test).
func BudgetLow(st [3]quota.Status, below float64) bool {
	for _, s := range st {
		if s.Limit > 0 && float64(s.Remaining) < below*float64(s.Burst) {
			return true
		}
	}
	return false
}

// KeyStatus reports key k's budget in each dimension (indexed by
// quota.Dimension), for the rate-limit headers of its answers; ok is
// false if the key has no budget.
func (e *Engine) KeyStatus(now time.Time, k int) (s [3]quota.Status, ok bool) {
	if kb := e.books.key(k); kb != nil {
		return kb.Status(now), true
	}
	return s, false
}

// Degradation says how a model's background requests are served under
// pressure: see Degrade.
type Degradation struct {
	// To is the client-facing model to serve them with (empty: the
	// same model).
	To string
	// MaxTokens caps max_tokens (0: no cap); TrimTo trims the input to
	// this many tokens (0: no trim). The host applies both.
	MaxTokens, TrimTo int64
	// QueueAge and BudgetBelow define pressure (ShouldDegrade).
	QueueAge    time.Duration
	BudgetBelow float64
}

// ShouldDegrade reports whether the engine is under pressure for r, a
// background request of a model with Degradation d (Degrade asks it):
// when the oldest waiter has waited d.QueueAge, when r would be refused
// at once, or when its key has less than d.BudgetBelow of its budget
// left in some dimension (or not enough for r). Degrading is cheaper
// than refusing: the client gets an answer, from a smaller model or with
// a shorter allowance, that the degraded headers mark as such.
func (e *Engine) ShouldDegrade(now time.Time, r Request, d Degradation) bool {
	if r.Priority != admission.Background {
		return false
	}
	if d.QueueAge > 0 && e.adm.OldestWait(now) >= d.QueueAge {
		return true
	}
	probe := r
	probe.Scope = targets(r)[0]
	if _, refused := e.Check(now, probe); refused {
		return true
	}
	kb := e.books.key(r.Key)
	if kb == nil {
		return false
	}
	if v := kb.Check(now, e.books.cost(r)); !v.OK {
		return true
	}
	return BudgetLow(kb.Status(now), d.BudgetBelow)
}

// closed reports whether target i of r takes no calls for now: its
// provider asked for a pause, its budgets cannot take r, or it is a pool
// with no replica taking calls.
func (e *Engine) closed(now time.Time, r Request, i int) bool {
	ts := targets(r)
	return e.isPaused(now, ts[i]) || e.books.targetWait(now, r, i) > 0 || e.poolOut(now, ts[i])
}

// settleBudgets settles a finished request's charges: each call's on its
// target, and the request's on its key and lane, with the usage of the
// call whose answer the client got (the first, if none was committed).
func (e *Engine) settleBudgets(now time.Time, q *request) {
	for call, t := range q.charged {
		if t > 0 {
			e.books.settleCall(now, q.req, t-1, q.usage[call], q.chargedN[call])
		}
	}
	won := q.usage[0]
	if q.committed == 1 {
		won = q.usage[1]
	}
	e.books.settleRequest(now, q.req, won)
}
