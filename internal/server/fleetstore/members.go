package fleetstore

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
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
}

// Members is the fleet's membership: each replica heartbeats an entry
// (its ID, scored with the time) in one sorted set, and counts the
// entries seen within 3 intervals. Scores are the replicas' own clocks,
// in milliseconds, so the count assumes clocks agree to well within an
// interval (NTP does that by orders of magnitude).
type Members struct {
	rdb      redis.UniversalClient
	key, id  string
	interval time.Duration
	timeout  time.Duration
	live     atomic.Int64
	reached  atomic.Bool // the last heartbeat answered
	onReach  func(bool, error)
	now      func() time.Time

	mu      sync.Mutex
	stop    chan struct{}
	wg      sync.WaitGroup
	running bool
}

// NewMembers returns this replica's membership. Live counts 1 until the
// first heartbeat answers; Start heartbeats in the background.
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
	m := &Members{rdb: rdb, key: o.Prefix + "members", id: o.ID, interval: o.Interval, timeout: o.Timeout, now: time.Now, onReach: o.OnReach}
	m.live.Store(1)
	return m
}

// Live is the number of live replicas, this one included, as of the last
// heartbeat that answered: the last known count while Redis is
// unreachable, and at least 1.
func (m *Members) Live() int { return int(max(m.live.Load(), 1)) }

// Reached reports whether the last heartbeat answered.
func (m *Members) Reached() bool { return m.reached.Load() }

// Beat is one heartbeat, one round trip (a MULTI/EXEC pipeline): refresh
// this replica's entry, drop entries older than 3 intervals, count the
// rest. It returns the count, or the error leaving Live as it was.
func (m *Members) Beat(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	now := m.now().UnixMilli()
	window := 3 * m.interval.Milliseconds()
	var card *redis.IntCmd
	_, err := m.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.ZAdd(ctx, m.key, redis.Z{Score: float64(now), Member: m.id})
		p.ZRemRangeByScore(ctx, m.key, "-inf", "("+strconv.FormatInt(now-window, 10))
		card = p.ZCard(ctx, m.key)
		p.PExpire(ctx, m.key, 2*time.Duration(window)*time.Millisecond)
		return nil
	})
	if err != nil {
		if m.reached.Swap(false) && m.onReach != nil {
			m.onReach(false, err)
		}
		return m.Live(), err
	}
	if !m.reached.Swap(true) && m.onReach != nil {
		m.onReach(true, nil)
	}
	n := max(card.Val(), 1)
	m.live.Store(n)
	return int(n), nil
}

// Start heartbeats every interval in the background, from now until
// Close. Errors leave Live as it was; the next beat tries again.
func (m *Members) Start() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.running {
		return
	}
	m.running = true
	m.stop = make(chan struct{})
	stop := m.stop
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		t := time.NewTicker(m.interval)
		defer t.Stop()
		for {
			m.Beat(context.Background())
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
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
