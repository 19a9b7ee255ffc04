package usage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Store is where usage records live. Every method is safe for
// concurrent use.
type Store interface {
	// Add adds recs to the stored counts. id names the batch: a batch
	// added again under the same id (a retried flush whose first try
	// may or may not have landed), before any other, is added once. On
	// an error, the part of the batch that landed is remembered under
	// id, so retrying the whole batch completes it exactly. A batch that
	// failed must be retried, whole and in the same order, before
	// another is added.
	Add(ctx context.Context, id string, recs []Record) error
	// Read calls fn with each of day's records, one per row, its counts
	// whole, in no particular order. It holds at most that day's
	// records in memory.
	Read(ctx context.Context, day string, fn func(Record) error) error
	// Prune deletes the days before before (YYYY-MM-DD).
	Prune(ctx context.Context, before string) error
	// Where says where records are kept, for the log.
	Where() string
}

// Options configure a Recorder.
type Options struct {
	Store Store
	// Retention is how many days a day's records are kept after it ends.
	Retention int
	// Interval is how often records are flushed (default 1s).
	Interval time.Duration
	// MaxRows bounds the rows (day, key, team, model, upstream model)
	// waiting to be flushed (default DefaultMaxRows). A failed flush is
	// held for retry beside them, so at most twice this is held; past
	// it, a call on a row not already waiting is not recorded, and
	// is counted (Dropped).
	MaxRows int
	Log     *slog.Logger
	// OnFlush, if set, is told each flush's outcome (nil: it landed).
	OnFlush func(error)
}

// DefaultMaxRows bounds the rows waiting to be flushed: about 20 MB.
// Rows are per day, so only a store down for long, with that many
// distinct (day, key, model) rows in the meantime, reaches it.
const DefaultMaxRows = 100_000

// Recorder aggregates usage records in memory and flushes them to its
// store. Add is all the request path calls; Run flushes.
type Recorder struct {
	o Options

	mu      sync.Mutex
	pending map[Record]*Counts // keyed by day and row, counts zero
	dropped int64
	// day caches Day for the current UTC day (dayStart..dayEnd).
	day            string
	dayStart, dayN int64

	flushMu sync.Mutex   // serialises flushes
	retry   *batch       // a failed flush, retried first
	retryN  atomic.Int64 // len(retry.recs), read without flushMu
	failing atomic.Bool

	top atomic.Pointer[[]Spender]
}

// syncer is a store with work of its own between batches, done at
// every flush that has none: RedisStore checks the fleet's epoch, and
// writes back what Redis lost.
type syncer interface {
	Sync(ctx context.Context) error
}

type batch struct {
	id   string
	recs []Record
}

// NewRecorder returns a recorder over o.Store (a MemoryStore when nil).
func NewRecorder(o Options) *Recorder {
	if o.Store == nil {
		o.Store = NewMemoryStore()
	}
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	if o.MaxRows <= 0 {
		o.MaxRows = DefaultMaxRows
	}
	if o.Retention <= 0 {
		o.Retention = 400
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Recorder{o: o, pending: map[Record]*Counts{}}
}

// Store is the recorder's store.
func (r *Recorder) Store() Store { return r.o.Store }

// Add records c for row at now. It never blocks on the store.
func (r *Recorder) Add(now time.Time, row Row, c Counts) {
	row = row.clean()
	sec := now.Unix()
	r.mu.Lock()
	defer r.mu.Unlock()
	if sec < r.dayStart || sec >= r.dayStart+86400 || r.day == "" {
		r.day = Day(now)
		r.dayStart = sec - ((sec%86400)+86400)%86400
	}
	k := Record{Day: r.day, Row: row}
	cur, ok := r.pending[k]
	if !ok {
		if len(r.pending) >= r.o.MaxRows {
			r.dropped++
			return
		}
		cur = &Counts{}
		r.pending[k] = cur
	}
	cur.Add(c)
}

// Dropped is how many calls were not recorded because MaxRows rows
// were already waiting.
func (r *Recorder) Dropped() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dropped
}

// Pending is how many rows wait to be flushed, the retried batch's
// included.
func (r *Recorder) Pending() int {
	r.mu.Lock()
	n := len(r.pending)
	r.mu.Unlock()
	return n + int(r.retryN.Load())
}

// Flush sends what is waiting to the store: first a batch an earlier
// flush failed to send, then what was added since. On an error the
// batch is kept for the next flush; rows go on being added meanwhile.
func (r *Recorder) Flush(ctx context.Context) error {
	r.flushMu.Lock()
	defer r.flushMu.Unlock()
	if r.retry != nil {
		if err := r.o.Store.Add(ctx, r.retry.id, r.retry.recs); err != nil {
			return err
		}
		r.retry = nil
		r.retryN.Store(0)
	}
	r.mu.Lock()
	p := r.pending
	if len(p) == 0 {
		r.mu.Unlock()
		if s, ok := r.o.Store.(syncer); ok {
			return s.Sync(ctx)
		}
		return nil
	}
	r.pending = make(map[Record]*Counts, len(p))
	r.mu.Unlock()
	b := &batch{id: newID(), recs: make([]Record, 0, len(p))}
	for k, c := range p {
		k.Counts = *c
		b.recs = append(b.recs, k)
	}
	// One order for the batch, so a retry splits it as the first try did.
	sort.Slice(b.recs, func(i, j int) bool { return less(b.recs[i], b.recs[j]) })
	if err := r.o.Store.Add(ctx, b.id, b.recs); err != nil {
		r.retry = b
		r.retryN.Store(int64(len(b.recs)))
		return err
	}
	return nil
}

func less(a, b Record) bool {
	if a.Day != b.Day {
		return a.Day < b.Day
	}
	return a.Row.field() < b.Row.field()
}

func newID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Run flushes every Interval until ctx ends, then once more (for up to
// 3 s); it deletes the days past the retention at start and every hour,
// and refreshes the top spenders of the day every 10 s. A store that
// fails is logged once, and again when it recovers.
func (r *Recorder) Run(ctx context.Context) {
	t := time.NewTicker(r.o.Interval)
	defer t.Stop()
	var lastPrune, lastTop time.Time
	for {
		now := time.Now()
		if now.Sub(lastPrune) >= time.Hour {
			lastPrune = now
			r.prune(ctx, now)
		}
		r.flushOnce(ctx)
		if now.Sub(lastTop) >= 10*time.Second {
			lastTop = now
			r.refreshTop(ctx, now)
		}
		select {
		case <-ctx.Done():
			last, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			if err := r.Flush(last); err != nil {
				r.o.Log.Error("usage: records not flushed at shutdown; the last second's requests are missing from them", "store", r.o.Store.Where(), "rows", r.Pending(), "err", err)
			}
			return
		case <-t.C:
		}
	}
}

func (r *Recorder) flushOnce(ctx context.Context) {
	fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	err := r.Flush(fctx)
	cancel()
	if r.o.OnFlush != nil {
		r.o.OnFlush(err)
	}
	switch {
	case err != nil && ctx.Err() == nil && !r.failing.Swap(true):
		r.o.Log.Warn("usage: the store does not take records; keeping them in memory and retrying every flush", "store", r.o.Store.Where(), "max_rows", r.o.MaxRows, "err", err)
	case err == nil && r.failing.Swap(false):
		r.o.Log.Info("usage: the store takes records again; the held ones are flushed", "store", r.o.Store.Where())
	}
}

func (r *Recorder) prune(ctx context.Context, now time.Time) {
	before := Day(now.AddDate(0, 0, -r.o.Retention))
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := r.o.Store.Prune(pctx, before); err != nil && ctx.Err() == nil {
		r.o.Log.Warn("usage: days past the retention not deleted; retrying in an hour", "store", r.o.Store.Where(), "before", before, "err", err)
	}
}

// Spender is one key's spending today (UTC).
type Spender struct {
	Key      string `json:"key"`
	Team     string `json:"team"`
	Requests int64  `json:"requests"`
	Cost     int64  `json:"cost_micros"`
}

// TopSpenders is how many keys Top keeps.
const TopSpenders = 10

// Top is today's top spenders by cost (keys that spent nothing left
// out), most first, as of the last
// refresh (every 10 s while Run runs): what the store holds for today,
// fleet-wide with a shared store, plus this replica's unflushed rows.
func (r *Recorder) Top() []Spender {
	if p := r.top.Load(); p != nil {
		return *p
	}
	return nil
}

// RefreshTop recomputes Top now.
func (r *Recorder) RefreshTop(ctx context.Context, now time.Time) error {
	return r.refreshTop(ctx, now)
}

func (r *Recorder) refreshTop(ctx context.Context, now time.Time) error {
	day := Day(now)
	type who struct{ key, team string }
	by := map[who]*Spender{}
	add := func(rec Record) {
		w := who{rec.Key, rec.Team}
		s := by[w]
		if s == nil {
			s = &Spender{Key: rec.Key, Team: rec.Team}
			by[w] = s
		}
		s.Requests += rec.Requests
		s.Cost += rec.Cost
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := r.o.Store.Read(rctx, day, func(rec Record) error { add(rec); return nil }); err != nil {
		return err
	}
	r.mu.Lock()
	for k, c := range r.pending {
		if k.Day == day {
			k.Counts = *c
			add(k)
		}
	}
	r.mu.Unlock()
	out := make([]Spender, 0, len(by))
	for _, s := range by {
		if s.Cost > 0 {
			out = append(out, *s)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Cost != out[j].Cost {
			return out[i].Cost > out[j].Cost
		}
		return out[i].Key < out[j].Key
	})
	if len(out) > TopSpenders {
		out = out[:TopSpenders]
	}
	r.top.Store(&out)
	return nil
}
