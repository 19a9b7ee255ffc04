package fleetstore

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-gw/sluice/internal/core/fleet"
)

// MemberOptions configures a Members.
type MemberOptions struct {
	// Prefix starts the key; default DefaultPrefix.
	Prefix string
	// ID is this replica's name in the fleet; it must be unique.
	ID string
	// Interval between heartbeats; default 1 s. A replica counts as live
	// while its last heartbeat is within 3 intervals.
	Interval time.Duration
	// Timeout bounds one heartbeat; default Interval/2.
	Timeout time.Duration
	// OnReach, when set, hears each change of whether heartbeats reach
	// Redis, with the error of the first that did not. It must not
	// block.
	OnReach func(reached bool, err error)
	// OnKeyError, when set, hears each heartbeat Redis answered with an
	// error about the members key itself (KeyError: someone wrote
	// another type there). Redis answers, so OnReach does not hear it;
	// the count stays as it was. It must not block.
	OnKeyError func(err error)
	// OnError, when set, hears each heartbeat that did not reach Redis
	// (not only the first of an outage, as OnReach does), so that an
	// outage only the heartbeat sees is counted. It must not block.
	OnError func(err error)
	// OnLoss, when set, hears each heartbeat that found the fleet's
	// epoch (EpochKey) missing or changed since the last one read:
	// Redis lost its data. old is the epoch known before, new the one
	// Redis holds now. It must not block.
	OnLoss func(old, new string)
}

// Members is the fleet's membership: each replica heartbeats an entry
// (its ID, scored with the time) in one sorted set, and counts the
// entries seen within 3 intervals. Scores are the replicas' own clocks,
// in milliseconds, so the count assumes clocks agree to well within an
// interval (NTP does that by orders of magnitude); an entry scored more
// than 3 intervals ahead of a replica's clock is not trusted: it is
// neither counted nor kept (a replica whose clock runs that far ahead,
// or an entry written by hand, would otherwise count for ever).
//
// Live is not the last heartbeat's count but the census's
// (fleet.Census, held for the 3 intervals): the largest count seen
// within them, so a count that falls is believed only once every live
// replica has heartbeated again.
type Members struct {
	rdb        redis.UniversalClient
	key, id    string
	interval   time.Duration
	timeout    time.Duration
	reached    atomic.Bool // the last heartbeat answered
	onReach    func(bool, error)
	onKeyError func(error)
	onError    func(error)
	onLoss     func(old, new string)
	now        func() time.Time
	epochKey   string

	// emu guards epoch, the fleet's epoch as the last heartbeat read it
	// ("" before any).
	emu   sync.Mutex
	epoch string

	// cmu guards census and joined.
	cmu    sync.Mutex
	census fleet.Census
	// joined is when this replica's first entry was written (zero: not
	// yet), for Joined.
	joined time.Time
	// settled: every other live replica has heartbeated since joined.
	settled bool

	mu      sync.Mutex
	stop    chan struct{}
	wg      sync.WaitGroup
	running bool
}

// NewMembers returns this replica's membership. Live counts 1 until the
// first heartbeat answers; Start heartbeats (the first at once, within
// Timeout, before it returns) and goes on in the background.
func NewMembers(rdb redis.UniversalClient, o MemberOptions) *Members {
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = o.Interval / 2
	}
	m := &Members{rdb: rdb, key: o.Prefix + "members", id: o.ID, interval: o.Interval, timeout: o.Timeout, now: time.Now,
		onReach: o.OnReach, onKeyError: o.OnKeyError, onError: o.OnError, onLoss: o.OnLoss, epochKey: EpochKey(o.Prefix)}
	m.census.Hold = 3 * o.Interval
	return m
}

// Live is the number of live replicas to divide the fleet's limits by,
// this one included (fleet.Census): the largest count a heartbeat saw
// within the last 3 intervals, the last known while Redis is
// unreachable and for 3 intervals after it answers again; at least 1.
func (m *Members) Live() int {
	m.cmu.Lock()
	defer m.cmu.Unlock()
	return m.census.Count(m.now())
}

// Seen is the count the last heartbeat that answered saw (0 before
// any).
func (m *Members) Seen() int {
	m.cmu.Lock()
	defer m.cmu.Unlock()
	return m.census.Latest()
}

// Joined reports whether this replica knows the fleet and the fleet
// knows it: a heartbeat of its own reached Redis at least an interval
// ago (replicas started together have all written theirs by then), and
// every other replica live now has heartbeated since it did (so each
// counts this one), or 3 intervals have passed (those that have not are
// not live). Until then a replica should not report ready: it would
// take a share the others do not leave it, or, first of several
// started together, the whole of every limit.
func (m *Members) Joined() bool {
	m.cmu.Lock()
	defer m.cmu.Unlock()
	return m.settled
}

// Interval is the time between heartbeats.
func (m *Members) Interval() time.Duration { return m.interval }

// Inherit carries prev's knowledge of the fleet over to m: the census,
// whether and when it joined, the epoch. A replica that replaces its
// membership (a reload builds a new one under the same ID) is the same
// member of the fleet, and need not join again. Call it before m
// serves.
func (m *Members) Inherit(prev *Members) {
	prev.cmu.Lock()
	census, joined, settled := prev.census.Clone(), prev.joined, prev.settled
	prev.cmu.Unlock()
	m.cmu.Lock()
	m.census, m.joined, m.settled = census, joined, settled
	m.cmu.Unlock()
	epoch := prev.Epoch()
	m.emu.Lock()
	if m.epoch == "" || m.epoch == epoch {
		m.epoch = epoch
	}
	m.emu.Unlock()
}

// Reached reports whether the last heartbeat answered.
func (m *Members) Reached() bool { return m.reached.Load() }

// Epoch is the fleet's epoch as the last heartbeat that reached Redis
// read it ("" before any).
func (m *Members) Epoch() string {
	m.emu.Lock()
	defer m.emu.Unlock()
	return m.epoch
}

// Beat is one heartbeat, one round trip (a MULTI/EXEC pipeline): refresh
// this replica's entry, drop entries older than 3 intervals or more
// than 3 intervals in the future, count the rest, and read the fleet's
// epoch (making it when missing; OnLoss hears it changed). It returns
// the count it saw (which Live takes into the census), or the error
// leaving Live as it was.
func (m *Members) Beat(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	at := m.now()
	now := at.UnixMilli()
	window := 3 * m.interval.Milliseconds()
	var card *redis.IntCmd
	var others *redis.ZSliceCmd
	var ep *redis.Cmd
	m.cmu.Lock()
	joining := !m.settled
	m.cmu.Unlock()
	known := m.Epoch()
	_, err := m.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		ep = p.Eval(ctx, epochScript, []string{m.epochKey}, NewEpochName(), known)
		p.ZAdd(ctx, m.key, redis.Z{Score: float64(now), Member: m.id})
		p.ZRemRangeByScore(ctx, m.key, "-inf", "("+strconv.FormatInt(now-window, 10))
		p.ZRemRangeByScore(ctx, m.key, "("+strconv.FormatInt(now+window, 10), "+inf")
		card = p.ZCard(ctx, m.key)
		if joining {
			others = p.ZRangeWithScores(ctx, m.key, 0, -1)
		}
		p.PExpire(ctx, m.key, 2*time.Duration(window)*time.Millisecond)
		return nil
	})
	if err != nil && card != nil && card.Err() == nil && KeyError(ep.Err()) {
		// Only the epoch key is wrong (someone wrote another type
		// there): the count stands; the epoch is not known this beat.
		if m.onKeyError != nil {
			m.onKeyError(ep.Err())
		}
		err = nil
		ep = nil
	}
	if err != nil {
		m.cmu.Lock()
		m.census.Lost(at)
		m.cmu.Unlock()
		if KeyError(err) {
			// Redis answers; only the members key is wrong.
			if m.onKeyError != nil {
				m.onKeyError(err)
			}
			return m.Live(), err
		}
		if m.onError != nil {
			m.onError(err)
		}
		if m.reached.Swap(false) && m.onReach != nil {
			m.onReach(false, err)
		}
		return m.Live(), err
	}
	if ep != nil {
		m.learnEpoch(known, ep)
	}
	if !m.reached.Swap(true) && m.onReach != nil {
		m.onReach(true, nil)
	}
	m.cmu.Lock()
	m.census.Observe(at, int(card.Val()))
	if joining {
		m.settle(at, others.Val())
	}
	m.cmu.Unlock()
	return int(max(card.Val(), 1)), nil
}

// learnEpoch takes the epoch a heartbeat read (ep, fleetEpoch's answer)
// after knowing known, and tells OnLoss when it changed.
func (m *Members) learnEpoch(known string, ep *redis.Cmd) {
	res, err := ep.Slice()
	if err != nil || len(res) < 1 {
		return
	}
	id, _ := res[0].(string)
	if id == "" {
		return
	}
	m.emu.Lock()
	if m.epoch != known {
		// Another beat learnt a newer one meanwhile.
		m.emu.Unlock()
		return
	}
	m.epoch = id
	m.emu.Unlock()
	if EpochLost(known, id) && m.onLoss != nil {
		m.onLoss(known, id)
	}
}

// settle notes whether this replica has joined the fleet (Joined), from
// the entries its heartbeat at now found; m.cmu is held.
func (m *Members) settle(now time.Time, entries []redis.Z) {
	if m.joined.IsZero() {
		m.joined = now
	}
	// Scores are milliseconds: compare them with the first heartbeat's.
	first := time.UnixMilli(m.joined.UnixMilli())
	others := make([]time.Time, 0, len(entries))
	for _, z := range entries {
		if z.Member != m.id {
			others = append(others, time.UnixMilli(int64(z.Score)))
		}
	}
	m.settled = fleet.Joined(first, now, m.interval, others)
}

// Start heartbeats once, at once (bounded by Timeout), so that Live is
// the fleet's count before anything is admitted, and then every
// interval in the background, until Close; it returns the first
// heartbeat's error. Errors leave Live as it was; the next beat tries
// again. While this replica has not joined (Joined), it heartbeats
// every tenth of an interval, to see the others' heartbeats soon after
// they land.
func (m *Members) Start() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.running {
		return nil
	}
	_, first := m.Beat(context.Background())
	m.running = true
	m.stop = make(chan struct{})
	stop := m.stop
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		for !m.Joined() {
			select {
			case <-stop:
				return
			case <-time.After(m.interval / 10):
			}
			m.Beat(context.Background())
		}
		t := time.NewTicker(m.interval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			m.Beat(context.Background())
		}
	}()
	return first
}

// Close stops the heartbeats and removes this replica's entry, so the
// others count it out at their next heartbeat rather than 3 intervals
// later.
func (m *Members) Close() error {
	m.mu.Lock()
	if m.running {
		close(m.stop)
		m.running = false
	}
	m.mu.Unlock()
	m.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), m.timeout)
	defer cancel()
	return m.rdb.ZRem(ctx, m.key, m.id).Err()
}
