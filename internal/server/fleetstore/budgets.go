package fleetstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluice-gw/sluice/internal/core/fleet"
	"github.com/sluice-gw/sluice/internal/core/quota"
)

// Bounds that keep every number the budget scripts compute with an exact
// integer in a Lua double (below 2^53). They are far above any provider's
// limits: a trillion tokens a minute, a burst of 10^15.
const (
	maxPerMinute = 1 << 40
	maxBurst     = 1 << 50
	// maxCost caps a cost sent to Redis. Any cost this large is above
	// every burst (Never) and saturates any charge, so the cap changes no
	// answer.
	maxCost = 1 << 51
)

// epoch is the zero of the scripts' clock: instants are microseconds
// since it, about 2·10^14 in 2026, far below 2^53 (reached in 2305).
var epoch = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

// Mode is where a Budgets' answers come from.
type Mode int32

const (
	// Shared: from Redis, exact across the fleet.
	Shared Mode = iota
	// Local: from this replica's own budgets, each a share of the limits,
	// while Redis is slow or unreachable.
	Local
)

func (m Mode) String() string {
	if m == Local {
		return "local"
	}
	return "shared"
}

// BudgetOptions configures a Budgets. The zero value is usable.
type BudgetOptions struct {
	// Prefix starts every key; default DefaultPrefix.
	Prefix string
	// Timeout bounds each call to Redis; default DefaultBudgetTimeout.
	// A call that takes longer is answered locally.
	Timeout time.Duration
	// NoFallback: return Redis's errors instead of answering locally
	// (for tools and tests; the gateway never sets it).
	NoFallback bool
	// Replicas is the live replica count (Members.Live): local budgets
	// get 1/Replicas() of each limit. Nil counts 1.
	Replicas func() int
	// OnKeyError, when set, hears each call Redis answered with an error
	// about one budget's key (KeyError: someone wrote another type
	// there), with the budget's name. Redis answers, so the mode stays
	// Shared: that budget alone is answered by this replica's share of
	// it (as while Redis is down, but owing nothing back, since its key
	// cannot be charged), the others stay the fleet's. It must not
	// block.
	OnKeyError func(name string, err error)
	// OnMode is called on each switch of mode, with the error that
	// caused a switch to Local (nil on the switch back). It must not
	// block; it may be called from any goroutine.
	OnMode func(m Mode, cause error)
	// HealthInterval is how often, in Local mode, Redis is pinged to
	// switch back; default fleet.Recheck (1 s).
	HealthInterval time.Duration
	// Allot: answer Takes from credit taken from the shared budgets
	// ahead of time, without a round trip, when it covers them (see
	// "Allotments" in the package comment). Off, every Take is a round
	// trip.
	Allot bool
	// AllotIdle is how long a budget's credit is held without a Take
	// before it goes back to Redis; default DefaultAllotIdle.
	AllotIdle time.Duration
}

// DefaultBudgetTimeout is the default bound on one budget call to Redis:
// config.DefaultFleetTimeout's 50 ms (see there why).
const DefaultBudgetTimeout = 50 * time.Millisecond

// DefaultPrefix starts every key and channel name the store uses.
const DefaultPrefix = "sluice:"

// Budgets is the fleet's per-minute budgets, shared through Redis, with
// the semantics of package quota (see the package comment). It is safe
// for concurrent use.
type Budgets struct {
	rdb    redis.UniversalClient
	o      BudgetOptions
	mode   atomic.Int32
	closed chan struct{}
	wg     sync.WaitGroup

	mu    sync.Mutex
	local map[string]*localBudget
	// seen is each budget as Redis last answered, so that a local budget
	// starts from its share of what was left, not from full: a blip of
	// Redis must not hand every replica a fresh burst.
	seen map[string]seenStatus
	// owed is what local budgets took (net of refunds) while Redis did
	// not answer: charged to the shared budgets when it answers again,
	// so an outage lends the fleet nothing it does not pay back.
	owed     map[string]*owing
	checking bool // the health loop runs

	// amu guards the allotments (Allot mode); tending: their loop runs.
	amu     sync.Mutex
	allots  map[string]*fleet.Credit
	tending bool

	// pin, when set (tests), fixes the scripts' clock instead of TIME.
	pin func() time.Time
	// now is the local budgets' clock.
	now func() time.Time
}

type owing struct {
	limits quota.Limits
	amt    [3]int64
}

type seenStatus struct {
	st [3]quota.Status
	at time.Time
}

type localBudget struct {
	b      *quota.Budget
	limits quota.Limits // the fleet's, undivided
	share  int          // the replica count they were divided by
}

// NewBudgets returns the fleet's budgets in Redis through rdb, which
// should honour context deadlines (NewClient's clients do).
func NewBudgets(rdb redis.UniversalClient, o BudgetOptions) *Budgets {
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultBudgetTimeout
	}
	if o.HealthInterval <= 0 {
		o.HealthInterval = fleet.Recheck
	}
	if o.AllotIdle <= 0 {
		o.AllotIdle = DefaultAllotIdle
	}
	return &Budgets{rdb: rdb, o: o, closed: make(chan struct{}), local: map[string]*localBudget{}, seen: map[string]seenStatus{}, owed: map[string]*owing{}, allots: map[string]*fleet.Credit{}, now: time.Now}
}

// Mode reports where answers come from now.
func (b *Budgets) Mode() Mode { return Mode(b.mode.Load()) }

// Close stops the health check, if it runs, and in Allot mode gives
// back every budget's credit and settles what is pending, one round trip
// each (bounded by Timeout). Calls after Close still work, and stay in
// whatever mode they were in; in Allot mode they go to Redis each time.
func (b *Budgets) Close() {
	b.mu.Lock()
	select {
	case <-b.closed:
	default:
		close(b.closed)
	}
	b.mu.Unlock()
	// No refill or loop starts once closed is seen under amu.
	b.amu.Lock()
	b.amu.Unlock()
	b.wg.Wait()
	if b.o.Allot {
		b.sweep(true)
	}
}

// Key is the Redis key holding budget name.
func (b *Budgets) Key(name string) string { return b.o.Prefix + "budget:" + name }

// Take takes cost from budget name, in every dimension or none, as
// quota.Budget.Take does, and returns the verdict with the budget's
// status after it, for the rate-limit headers. limits are the budget's;
// every replica must pass the same. The error is nil unless limits are
// invalid, ctx is done, or NoFallback is set and Redis failed.
func (b *Budgets) Take(ctx context.Context, name string, limits quota.Limits, cost quota.Cost) (quota.Verdict, [3]quota.Status, error) {
	return b.take(ctx, name, limits, cost, true)
}

// Check is Take's verdict without taking anything.
func (b *Budgets) Check(ctx context.Context, name string, limits quota.Limits, cost quota.Cost) (quota.Verdict, [3]quota.Status, error) {
	return b.take(ctx, name, limits, cost, false)
}

// Settle reconciles a request that ran, as quota.Budget.Settle: what was
// reserved and not used is refunded (never beyond full), what was used
// beyond the reservation is charged, into debt if need be. It returns
// the status after.
func (b *Budgets) Settle(ctx context.Context, name string, limits quota.Limits, reserved, actual quota.Cost) ([3]quota.Status, error) {
	return b.settle(ctx, name, limits, reserved, actual)
}

// Charge takes cost unconditionally, into debt if need be.
func (b *Budgets) Charge(ctx context.Context, name string, limits quota.Limits, cost quota.Cost) ([3]quota.Status, error) {
	return b.settle(ctx, name, limits, quota.Cost{}, cost)
}

// Refund returns all of a Take for a request that never ran.
func (b *Budgets) Refund(ctx context.Context, name string, limits quota.Limits, cost quota.Cost) ([3]quota.Status, error) {
	return b.settle(ctx, name, limits, cost, quota.Cost{})
}

// Status reports the budget's state, changing nothing.
func (b *Budgets) Status(ctx context.Context, name string, limits quota.Limits) ([3]quota.Status, error) {
	if err := validate(limits); err != nil {
		return [3]quota.Status{}, err
	}
	if limits == (quota.Limits{}) {
		return [3]quota.Status{}, nil
	}
	if b.Mode() == Shared {
		r, err := b.run(ctx, statusScript, true, name, limits, [3]int64{})
		if err == nil {
			if b.o.Allot {
				return b.adjust(name, statuses(r, limits)), nil
			}
			return statuses(r, limits), nil
		}
		if err := b.failed(ctx, name, err); err != nil {
			return [3]quota.Status{}, err
		}
	}
	var s [3]quota.Status
	b.withLocal(name, limits, func(q *quota.Budget, now time.Time) { s = q.Status(now) })
	return s, nil
}

func (b *Budgets) take(ctx context.Context, name string, limits quota.Limits, cost quota.Cost, commit bool) (quota.Verdict, [3]quota.Status, error) {
	if err := validate(limits); err != nil {
		return quota.Verdict{}, [3]quota.Status{}, err
	}
	if limits == (quota.Limits{}) {
		return quota.Verdict{OK: true}, [3]quota.Status{}, nil
	}
	if b.Mode() == Shared {
		amt := amounts(cost)
		if b.o.Allot {
			if v, st, ok := b.takeLocal(name, limits, amt, commit); ok {
				return v, st, nil
			}
		}
		s := checkScript
		if commit {
			s = takeScript
		}
		r, err := b.run(ctx, s, !commit, name, limits, amt)
		if err == nil {
			st := statuses(r, limits)
			b.remember(name, st)
			v := verdict(r)
			if b.o.Allot {
				st = b.tookShared(name, limits, amt, commit, v, st)
			}
			return v, st, nil
		}
		if err := b.failed(ctx, name, err); err != nil {
			return quota.Verdict{}, [3]quota.Status{}, err
		}
	}
	var v quota.Verdict
	var s [3]quota.Status
	owes := b.Mode() == Local // not a broken key in a store that answers
	b.withLocal(name, limits, func(q *quota.Budget, now time.Time) {
		if commit {
			v = q.Take(now, cost)
			if v.OK && owes {
				b.owe(name, limits, amounts(cost))
			}
		} else {
			v = q.Check(now, cost)
		}
		s = q.Status(now)
	})
	// Beyond this replica's share of the burst but not the fleet's: it
	// will pass once the shared budgets are back.
	return fleet.ShareVerdict(v, limits, cost, b.o.HealthInterval), s, nil
}

func (b *Budgets) settle(ctx context.Context, name string, limits quota.Limits, reserved, actual quota.Cost) ([3]quota.Status, error) {
	if err := validate(limits); err != nil {
		return [3]quota.Status{}, err
	}
	if limits == (quota.Limits{}) {
		return [3]quota.Status{}, nil
	}
	if b.Mode() == Shared {
		res, act := amounts(reserved), amounts(actual)
		if b.o.Allot {
			if st, ok := b.settleLocal(name, limits, res, act); ok {
				return st, nil
			}
		}
		r, err := b.run(ctx, settleScript, false, name, limits, [3]int64{act[0] - res[0], act[1] - res[1], act[2] - res[2]})
		if err == nil {
			st := statuses(r, limits)
			b.remember(name, st)
			return st, nil
		}
		if err := b.failed(ctx, name, err); err != nil {
			return [3]quota.Status{}, err
		}
	}
	var s [3]quota.Status
	owes := b.Mode() == Local
	b.withLocal(name, limits, func(q *quota.Budget, now time.Time) {
		q.Settle(now, reserved, actual)
		res, act := amounts(reserved), amounts(actual)
		if owes {
			b.owe(name, limits, [3]int64{act[0] - res[0], act[1] - res[1], act[2] - res[2]})
		}
		s = q.Status(now)
	})
	return s, nil
}

// owe notes amt taken (negative: given back) locally from name's budget;
// b.mu is held.
func (b *Budgets) owe(name string, limits quota.Limits, amt [3]int64) {
	o := b.owed[name]
	if o == nil || o.limits != limits {
		o = &owing{limits: limits}
		b.owed[name] = o
	}
	for d := range amt {
		o.amt[d] += amt[d]
	}
}

// pay charges the shared budgets what was taken locally while Redis did
// not answer, one round trip per budget; what cannot be paid now stays
// owed for the next time.
func (b *Budgets) pay() {
	b.mu.Lock()
	owed := b.owed
	b.owed = map[string]*owing{}
	b.mu.Unlock()
	for name, o := range owed {
		ctx, cancel := context.WithTimeout(context.Background(), b.o.Timeout)
		_, err := b.run(ctx, settleScript, false, name, o.limits, o.amt)
		cancel()
		if err != nil {
			b.mu.Lock()
			b.owe(name, o.limits, o.amt)
			b.mu.Unlock()
		}
	}
}

// run is one script call: one round trip, bounded by Timeout.
func (b *Budgets) run(ctx context.Context, s *redis.Script, readOnly bool, name string, limits quota.Limits, amt [3]int64) ([]int64, error) {
	now := ""
	if b.pin != nil {
		now = strconv.FormatInt(int64(b.pin().Sub(epoch)/time.Microsecond), 10)
	}
	args := make([]any, 0, 10)
	args = append(args, now)
	for _, l := range limits {
		args = append(args, l.PerMinute, l.EffectiveBurst())
	}
	args = append(args, amt[0], amt[1], amt[2])
	ctx, cancel := context.WithTimeout(ctx, b.o.Timeout)
	defer cancel()
	keys := []string{b.Key(name)}
	var cmd *redis.Cmd
	if readOnly {
		cmd = s.RunRO(ctx, b.rdb, keys, args...)
	} else {
		cmd = s.Run(ctx, b.rdb, keys, args...)
	}
	r, err := cmd.Int64Slice()
	if err == nil && len(r) != 10 {
		err = fmt.Errorf("store: budget script returned %d values, want 10", len(r))
	}
	return r, err
}

// failed handles a failed call on budget name: it returns the error to
// give the caller (ctx done, or NoFallback), or nil after switching to
// Local; or, when Redis answered that name's key is unusable
// (KeyError), nil after telling OnKeyError, leaving the mode alone.
func (b *Budgets) failed(ctx context.Context, name string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if b.o.NoFallback {
		return err
	}
	if KeyError(err) {
		if b.o.OnKeyError != nil {
			b.o.OnKeyError(name, err)
		}
		return nil
	}
	if b.mode.CompareAndSwap(int32(Shared), int32(Local)) {
		if b.o.OnMode != nil {
			b.o.OnMode(Local, err)
		}
		b.startHealth()
	}
	return nil
}

// startHealth starts the loop that pings Redis until it answers within
// Timeout, then switches back to Shared.
func (b *Budgets) startHealth() {
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-b.closed:
		return
	default:
	}
	if b.checking {
		return
	}
	b.checking = true
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		t := time.NewTicker(b.o.HealthInterval)
		defer t.Stop()
		for {
			select {
			case <-b.closed:
				b.mu.Lock()
				b.checking = false
				b.mu.Unlock()
				return
			case <-t.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), b.o.Timeout)
			err := b.rdb.Ping(ctx).Err()
			cancel()
			if err != nil {
				continue
			}
			b.pay()
			b.mu.Lock()
			b.checking = false
			clear(b.local)
			b.mu.Unlock()
			b.mode.Store(int32(Shared))
			if b.o.OnMode != nil {
				b.o.OnMode(Shared, nil)
			}
			return
		}
	}()
}

// withLocal runs f on name's local budget: this replica's share of the
// fleet's (fleet.Share) for the live replica count. A budget whose
// limits or share changed starts afresh.
func (b *Budgets) withLocal(name string, limits quota.Limits, f func(*quota.Budget, time.Time)) {
	n := 1
	if b.o.Replicas != nil {
		n = max(b.o.Replicas(), 1)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	lb := b.local[name]
	if lb == nil || lb.limits != limits || lb.share != n {
		// Start from this replica's share of what the fleet had left
		// when Redis last answered (none seen: full).
		seen := b.seen[name]
		q, err := fleet.Share(limits, n, seen.st, seen.at)
		if err != nil { // a share of valid limits is valid; just in case
			q = &quota.Budget{}
		}
		lb = &localBudget{b: q, limits: limits, share: n}
		b.local[name] = lb
	}
	f(lb.b, b.now())
}

// remember notes a budget's status as Redis answered it.
func (b *Budgets) remember(name string, st [3]quota.Status) {
	b.mu.Lock()
	b.seen[name] = seenStatus{st, b.now()}
	delete(b.local, name) // the next fallback starts from this, not from stale local state
	b.mu.Unlock()
}

// ErrLimits is wrapped by the error for limits the shared budgets cannot
// hold exactly.
var ErrLimits = errors.New("store: limits beyond what the shared budgets hold exactly")

func validate(l quota.Limits) error {
	if err := l.Validate(); err != nil {
		return err
	}
	for d, x := range l {
		if x.PerMinute > maxPerMinute || x.EffectiveBurst() > maxBurst {
			return fmt.Errorf("%w: %s: %d a minute, burst %d (at most 2^40 a minute, burst 2^50)", ErrLimits, quota.Dimension(d), x.PerMinute, x.Burst)
		}
	}
	return nil
}

func amounts(c quota.Cost) [3]int64 {
	clamp := func(n int64) int64 { return min(max(n, 0), maxCost) }
	return [3]int64{clamp(c.Requests), clamp(c.InputTokens), clamp(c.OutputTokens)}
}

func verdict(r []int64) quota.Verdict {
	return quota.Verdict{
		OK:         r[0] == 1,
		Dimension:  quota.Dimension(r[1]),
		RetryAfter: time.Duration(r[2]) * time.Microsecond,
		Never:      r[3] == 1,
	}
}

func statuses(r []int64, l quota.Limits) [3]quota.Status {
	var s [3]quota.Status
	for d, x := range l {
		if x.PerMinute == 0 {
			continue
		}
		s[d] = quota.Status{Limit: x.PerMinute, Burst: x.EffectiveBurst(), Remaining: r[4+2*d], Reset: time.Duration(r[5+2*d]) * time.Microsecond}
	}
	return s
}
