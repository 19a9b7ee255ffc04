package fleetstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-gw/sluice/internal/core/fleet"
)

// ClaimOptions configures Claims.
type ClaimOptions struct {
	// Prefix starts the key; default DefaultPrefix.
	Prefix string
	// ID is this replica's name in the fleet, as its Members'.
	ID string
	// Interval is the heartbeat's (Members.Interval, the default). A claim is
	// asked for once an interval, every tenth of one while it is not
	// settled, and counts for 3 intervals after it was last asked for.
	Interval time.Duration
	// Timeout bounds one ask; default Interval/2 (asks are off the
	// request path).
	Timeout time.Duration
	// OnKeyError, when set, hears each ask Redis answered with an error
	// about the claims key itself (KeyError): the replica then decides
	// alone, with an equal part. It must not block.
	OnKeyError func(err error)
}

// Claims is this replica's claim on the fleet's fixed concurrency
// limits, kept in Redis (fleet.Claim; the rule is package fleet's).
// Every replica's claim is a field of one hash, <prefix>claims, holding
// its part of fleet.Whole, the time of its last ask on Redis's clock,
// and the instance that asked (a configuration's Claims: a reload runs
// two for one replica, side by side, and the old one's Close must not
// drop what the new one holds). One script answers an ask, in one round
// trip: it drops the claims not asked for within 3 intervals (a replica
// that died), grants what the others leave (fleet.Grant), and reads the
// fleet's epoch (EpochLua), granting no more than was held when the
// epoch changed since this replica last read it.
//
// The loop (Start) asks only once the replica has joined (Members.Joined)
// and does so under the lock the replica's decisions take (the loads
// function Start is given), so that no call is admitted between reading
// the calls in flight and giving part of the claim back.
type Claims struct {
	rdb        redis.UniversalClient
	m          *Members
	key        string
	epochKey   string
	id         string
	instance   string
	interval   time.Duration
	timeout    time.Duration
	onKeyError func(error)
	now        func() time.Time

	// asking serialises Step: one ask at a time.
	asking sync.Mutex
	// mu guards the fields below it.
	mu    sync.Mutex
	claim fleet.Claim
	// epoch is the fleet's epoch as the last answer read it.
	epoch string
	// asked is when the last ask was answered, retry when the next may
	// be tried after one that was not.
	asked, retry time.Time
	// broken: the last ask found the claims key holding another type.
	broken bool
	// ready: a part was granted once, or the replica decided alone.
	ready bool
	// last is the part Parts gave at the last tick, to hear it grow.
	last int64

	run     sync.Mutex // guards stop and running
	stop    chan struct{}
	wg      sync.WaitGroup
	running bool
}

// NewClaims returns this replica's claim, counted by m. It holds
// nothing until Start has asked for a part.
func NewClaims(rdb redis.UniversalClient, m *Members, o ClaimOptions) *Claims {
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if o.Interval <= 0 {
		o.Interval = m.Interval()
	}
	if o.Timeout <= 0 {
		o.Timeout = o.Interval / 2
	}
	var b [6]byte
	rand.Read(b[:])
	c := &Claims{rdb: rdb, m: m, key: o.Prefix + "claims", epochKey: EpochKey(o.Prefix), id: o.ID,
		instance: hex.EncodeToString(b[:]), interval: o.Interval, timeout: o.Timeout,
		onKeyError: o.OnKeyError, now: time.Now}
	c.claim.Hold = 3 * o.Interval
	return c
}

// Key is the claims hash.
func (c *Claims) Key() string { return c.key }

// Parts is the part of the fleet's fixed limits this replica admits by
// now (fleet.Claim.Parts): what Redis granted, at most an equal part of
// the fleet it counts; nothing before a grant, unless it decides alone
// (Redis does not answer its heartbeat, or the claims key is broken).
// It is read on every admission decision.
func (c *Claims) Parts() int64 {
	live, alone := c.m.Live(), !c.m.Reached()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.claim.Parts(live, alone || c.broken)
}

// Ready reports whether this replica may report ready as far as its
// claim goes: Redis granted it a part once, or it decides alone. A
// replica that joins a loaded fleet is ready only once the others have
// given it something back, so that a load balancer checking readiness
// sends it nothing it would only queue.
func (c *Claims) Ready() bool {
	alone := !c.m.Reached()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ready || alone || c.broken
}

// Held is the part Redis last granted, as lowered since (fleet.Claim.Held).
func (c *Claims) Held() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.claim.Held()
}

// Start asks for this replica's part every tenth of an interval while
// its claim is not settled and once an interval otherwise, until Close.
// loads calls its function with the replica's shared limits and the
// calls under each, under the lock its admission decisions take
// (runner.Runner.SharedLoads); grew hears that the part grew, so that
// the replica starts the requests waiting for it (runner.Runner.Pump).
// Neither may be nil.
func (c *Claims) Start(loads func(func([]fleet.Load)), grew func()) {
	c.run.Lock()
	defer c.run.Unlock()
	if c.running {
		return
	}
	c.running = true
	c.stop = make(chan struct{})
	stop := c.stop
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		t := time.NewTicker(c.interval / 10)
		defer t.Stop()
		for {
			c.Step(loads)
			if p := c.Parts(); p > c.lastParts(p) {
				grew()
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
}

// lastParts swaps the part the last tick saw for p.
func (c *Claims) lastParts(p int64) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	last := c.last
	c.last = p
	return last
}

// Step asks Redis for this replica's part once, if the claim calls for
// it now (it is not settled, or an interval has passed since the last
// ask), and takes the answer.
func (c *Claims) Step(loads func(func([]fleet.Load))) {
	c.asking.Lock()
	defer c.asking.Unlock()
	if !c.m.Joined() {
		return
	}
	live := c.m.Live()
	var want, held int64
	var known string
	ask := false
	loads(func(l []fleet.Load) {
		c.mu.Lock()
		defer c.mu.Unlock()
		now := c.now()
		switch {
		case now.Before(c.retry):
		case c.claim.Settled(now, live, l) && now.Sub(c.asked) < c.interval:
		default:
			want, ask = c.claim.Ask(now, live, l), true
			held, known = c.claim.Held(), c.epoch
		}
	})
	if !ask {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	res, err := claimScript.Run(ctx, c.rdb, []string{c.key, c.epochKey}, c.id, c.instance, want, held,
		(3 * c.interval).Milliseconds(), fleet.Whole, NewEpochName(), known).Slice()
	cancel()
	var grant int64
	var id string
	if err == nil && len(res) == 2 {
		s, _ := res[0].(string)
		id, _ = res[1].(string)
		grant, err = strconv.ParseInt(s, 10, 64)
	}
	c.mu.Lock()
	now := c.now()
	if err != nil {
		c.broken = KeyError(err)
		c.claim.Missed()
		c.retry = now.Add(c.interval / 2)
		c.mu.Unlock()
		if KeyError(err) && c.onKeyError != nil {
			c.onKeyError(err)
		}
		return
	}
	c.broken = false
	c.claim.Granted(now, grant, EpochLost(known, id))
	c.epoch, c.asked = id, now
	c.ready = c.ready || grant > 0
	c.mu.Unlock()
}

// Inherit takes prev's claim over, and stops prev asking: a reload
// replaces a replica's Claims with one of a new configuration, whose
// engine counts the calls the old one still runs (runner.Runner.Handover),
// so the new one asks for what both need from now on. prev goes on
// admitting by the part it held until it is closed, and its Close leaves
// the claim alone once the new one has asked. Call it before c's loop
// has asked (before the new configuration serves).
func (c *Claims) Inherit(prev *Claims) {
	prev.halt()
	prev.mu.Lock()
	claim, epoch, ready := prev.claim, prev.epoch, prev.ready
	prev.mu.Unlock()
	c.mu.Lock()
	c.claim, c.epoch, c.ready = claim, epoch, ready
	c.asked = time.Time{}
	c.mu.Unlock()
}

// halt stops the loop.
func (c *Claims) halt() {
	c.run.Lock()
	if c.running {
		close(c.stop)
		c.running = false
	}
	c.run.Unlock()
	c.wg.Wait()
}

// Close stops asking and gives this replica's claim back, unless
// another instance of it (a reload's) asked since.
func (c *Claims) Close() error {
	c.halt()
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	return unclaimScript.Run(ctx, c.rdb, []string{c.key}, c.id, c.instance).Err()
}

// claimScript answers an ask: KEYS[1] the claims hash, KEYS[2] the
// fleet's epoch; ARGV[1] the replica, ARGV[2] its instance, ARGV[3] the
// part it wants, ARGV[4] the part it holds, ARGV[5] the liveness window
// (ms), ARGV[6] fleet.Whole, ARGV[7] a new epoch name, ARGV[8] the epoch
// it knew. A claim is "<parts>:<ms on Redis's clock>:<instance>". It
// returns {granted, epoch}.
var claimScript = redis.NewScript(EpochLua + `
local epoch, _, now = fleetEpoch(KEYS[2], ARGV[7], ARGV[8])
local want, held = tonumber(ARGV[3]), tonumber(ARGV[4])
local window, whole = tonumber(ARGV[5]), tonumber(ARGV[6])
if ARGV[8] ~= '' and ARGV[8] ~= epoch and held < want then
  want = held
end
local others = 0
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  if all[i] ~= ARGV[1] then
    local p, at = string.match(all[i + 1], '^(%d+):(%d+):')
    p, at = tonumber(p), tonumber(at)
    if not p or not at or at < now - window then
      redis.call('HDEL', KEYS[1], all[i])
    else
      others = others + p
    end
  end
end
local grant = math.min(want, whole - others)
if grant < 0 then grant = 0 end
if grant > 0 then
  redis.call('HSET', KEYS[1], ARGV[1], string.format('%.0f:%.0f:%s', grant, now, ARGV[2]))
else
  redis.call('HDEL', KEYS[1], ARGV[1])
end
redis.call('PEXPIRE', KEYS[1], 2 * window)
return {string.format('%.0f', grant), epoch}
`)

// unclaimScript drops KEYS[1]'s field ARGV[1] if instance ARGV[2] wrote
// it last.
var unclaimScript = redis.NewScript(`
local v = redis.call('HGET', KEYS[1], ARGV[1])
if v and string.match(v, '^%d+:%d+:(.*)$') == ARGV[2] then
  redis.call('HDEL', KEYS[1], ARGV[1])
end
return 0
`)
