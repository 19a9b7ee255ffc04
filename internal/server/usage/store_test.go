package usage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/server/redistest"
)

var (
	rowA = Row{Key: "search", Team: "core", Model: "gpt", Upstream: "gpt-4o"}
	rowB = Row{Key: "batch", Team: "data", Model: "claude", Upstream: "claude-sonnet-4-5"}
)

// A store adds what each flush brings to the day's totals, and reads a
// day back as one record per row; a batch added twice under one id is
// added once.
func TestStoreAddsAndReadsBack(t *testing.T) {
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			s := mk(t)
			ctx := context.Background()
			b1 := []Record{
				{Day: "2026-03-01", Row: rowA, Counts: Counts{1, 100, 50, 20, 700, 1}},
				{Day: "2026-03-01", Row: rowB, Counts: Counts{2, 10, 0, 5, 90, 2}},
				{Day: "2026-03-02", Row: rowA, Counts: Counts{1, 1, 1, 1, 1, 1}},
			}
			if err := s.Add(ctx, "b1", b1); err != nil {
				t.Fatal(err)
			}
			if err := s.Add(ctx, "b1", b1); err != nil { // the retry of a batch that landed
				t.Fatal(err)
			}
			if err := s.Add(ctx, "b2", []Record{{Day: "2026-03-01", Row: rowA, Counts: Counts{3, 1000, 0, 30, 5000, 3}}}); err != nil {
				t.Fatal(err)
			}
			got := readDay(t, s, "2026-03-01")
			want := []Record{
				{Day: "2026-03-01", Row: rowB, Counts: Counts{2, 10, 0, 5, 90, 2}},
				{Day: "2026-03-01", Row: rowA, Counts: Counts{4, 1100, 50, 50, 5700, 4}},
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("2026-03-01:\n got %+v\nwant %+v", got, want)
			}
			if got := readDay(t, s, "2026-03-02"); len(got) != 1 || got[0].Counts != (Counts{1, 1, 1, 1, 1, 1}) {
				t.Errorf("2026-03-02: %+v", got)
			}
			if got := readDay(t, s, "2026-03-03"); len(got) != 0 {
				t.Errorf("a day with nothing: %+v", got)
			}
		})
	}
}

// Prune deletes the days before the cut (the file and memory stores);
// Redis expires each day's hash retention days after the day ends.
func TestStoreRetention(t *testing.T) {
	ctx := context.Background()
	today := time.Now().UTC()
	old, kept := Day(today.AddDate(0, 0, -401)), Day(today.AddDate(0, 0, -2))
	recs := []Record{{Day: old, Row: rowA, Counts: Counts{Requests: 1}}, {Day: kept, Row: rowA, Counts: Counts{Requests: 1}}}
	for _, name := range []string{"memory", "file"} {
		t.Run(name, func(t *testing.T) {
			s := stores(t)[name](t)
			if err := s.Add(ctx, "b", recs); err != nil {
				t.Fatal(err)
			}
			if err := s.Prune(ctx, Day(today.AddDate(0, 0, -400))); err != nil {
				t.Fatal(err)
			}
			if got := readDay(t, s, old); len(got) != 0 {
				t.Errorf("%s, 401 days ago, survived a 400-day retention: %+v", old, got)
			}
			if got := readDay(t, s, kept); len(got) != 1 {
				t.Errorf("%s, 2 days ago, was pruned", kept)
			}
			if fs, ok := s.(*FileStore); ok {
				if _, err := os.Stat(fs.Path(old)); !os.IsNotExist(err) {
					t.Errorf("%s still exists: %v", fs.Path(old), err)
				}
			}
		})
	}
	t.Run("redis", func(t *testing.T) {
		c := redistest.Conn(t)
		s := NewRedisStore(c, redistest.Prefix(t, c), 400)
		if err := s.Add(ctx, "b", recs); err != nil {
			t.Fatal(err)
		}
		if n := c.Exists(ctx, s.DayKey(old)).Val(); n != 0 {
			t.Errorf("%s, past its retention when written, exists", s.DayKey(old))
		}
		ttl := c.TTL(ctx, s.DayKey(kept)).Val()
		want := time.Until(mustDay(t, kept).AddDate(0, 0, 401))
		if d := ttl - want; d < -5*time.Second || d > 5*time.Second {
			t.Errorf("%s expires in %v, want %v: 400 days after the day ends", s.DayKey(kept), ttl, want)
		}
	})
}

func mustDay(t *testing.T, s string) time.Time {
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Two replicas flushing to one Redis day add up exactly.
func TestRedisTwoReplicasOneDay(t *testing.T) {
	c := redistest.Conn(t)
	prefix := redistest.Prefix(t, c)
	day := Day(time.Now())
	var wg sync.WaitGroup
	for replica := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := NewRecorder(Options{Store: NewRedisStore(redistest.Conn(t), prefix, 400)})
			for i := range 500 {
				r.Add(time.Now(), rowA, Counts{Requests: 1, Input: 10, Output: int64(replica + 1), Cost: 3})
				if i%50 == 49 {
					if err := r.Flush(context.Background()); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	got := readDay(t, NewRedisStore(c, prefix, 400), day)
	if len(got) != 1 || got[0].Counts != (Counts{Requests: 1000, Input: 10000, Output: 500*1 + 500*2, Cost: 3000}) {
		t.Errorf("two replicas' day: %+v", got)
	}
}

// A store that refuses keeps the records waiting, and they land, once,
// when it takes them again; requests added meanwhile are kept too.
func TestRecorderRetriesAFailedFlush(t *testing.T) {
	fs := &flaky{Store: NewMemoryStore()}
	r := NewRecorder(Options{Store: fs})
	now := time.Date(2026, 5, 1, 23, 59, 59, 0, time.UTC)
	r.Add(now, rowA, Counts{Requests: 1, Cost: 10})
	fs.fail(errors.New("down"))
	if err := r.Flush(context.Background()); err == nil {
		t.Fatal("the flush to a store that is down reported no error")
	}
	r.Add(now.Add(2*time.Second), rowA, Counts{Requests: 1, Cost: 5}) // the next day
	if n := r.Pending(); n != 2 {
		t.Errorf("%d rows waiting, want 2 (the failed batch and the new day's)", n)
	}
	fs.fail(nil)
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := readDay(t, fs, "2026-05-01"); len(got) != 1 || got[0].Counts != (Counts{Requests: 1, Cost: 10}) {
		t.Errorf("2026-05-01: %+v", got)
	}
	if got := readDay(t, fs, "2026-05-02"); len(got) != 1 || got[0].Counts != (Counts{Requests: 1, Cost: 5}) {
		t.Errorf("2026-05-02: %+v", got)
	}
	if r.Pending() != 0 {
		t.Errorf("%d rows still waiting", r.Pending())
	}
}

// Memory is bounded: past MaxRows rows waiting, a new row is dropped
// and counted, while rows already waiting go on adding up.
func TestRecorderBoundsMemory(t *testing.T) {
	r := NewRecorder(Options{MaxRows: 3})
	now := time.Now()
	for i := range 5 {
		r.Add(now, Row{Key: string(rune('a' + i))}, Counts{Requests: 1})
	}
	r.Add(now, Row{Key: "a"}, Counts{Requests: 1})
	if r.Dropped() != 2 || r.Pending() != 3 {
		t.Errorf("dropped %d, waiting %d; want 2 and 3", r.Dropped(), r.Pending())
	}
	r.Flush(context.Background())
	if got := readDay(t, r.Store(), Day(now)); len(got) != 3 || got[0].Key != "a" || got[0].Requests != 2 {
		t.Errorf("after the flush: %+v", got)
	}
}

// A file that ends in a torn line (the process died mid-write) reads
// without it; the file is compacted once it holds many lines a row.
func TestFileStoreTornLineAndCompaction(t *testing.T) {
	dir := t.TempDir()
	s, err := NewFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range compactMin + 10 {
		if err := s.Add(ctx, "b"+string(rune(i)), []Record{{Day: "2026-04-01", Row: rowA, Counts: Counts{Requests: 1, Cost: 2}}}); err != nil {
			t.Fatal(err)
		}
	}
	data, _ := os.ReadFile(s.Path("2026-04-01"))
	if n := strings.Count(string(data), "\n"); n > compactMin {
		t.Errorf("%d lines for one row: not compacted", n)
	}
	f, _ := os.OpenFile(s.Path("2026-04-01"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"key":"search","team":"core","model":"gpt","upstream_model":"gpt-4o","requests":10`)
	f.Close()
	s2, _ := NewFileStore(dir) // a restart
	if got := readDay(t, s2, "2026-04-01"); len(got) != 1 || got[0].Counts != (Counts{Requests: compactMin + 10, Cost: 2 * (compactMin + 10)}) {
		t.Errorf("after compaction and a torn line: %+v", got)
	}
	// The next flush starts a line of its own.
	if err := s2.Add(ctx, "after", []Record{{Day: "2026-04-01", Row: rowA, Counts: Counts{Requests: 1, Cost: 2}}}); err != nil {
		t.Fatal(err)
	}
	if got := readDay(t, s2, "2026-04-01"); len(got) != 1 || got[0].Requests != compactMin+11 {
		t.Errorf("a flush after the torn line: %+v", got)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".usage-*")); len(m) > 0 {
		t.Errorf("temporary files left: %v", m)
	}
}

// flaky is a store that fails while told to.
type flaky struct {
	Store
	mu  sync.Mutex
	err error
}

func (f *flaky) fail(err error) { f.mu.Lock(); f.err = err; f.mu.Unlock() }

func (f *flaky) Add(ctx context.Context, id string, recs []Record) error {
	f.mu.Lock()
	err := f.err
	f.mu.Unlock()
	if err != nil {
		return err
	}
	return f.Store.Add(ctx, id, recs)
}

// Top is the day's keys by cost, from the store and what waits to be
// flushed, a key's models added up; keys that spent nothing and other
// days are left out.
func TestTopSpenders(t *testing.T) {
	r := NewRecorder(Options{})
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	r.Add(now, Row{Key: "a", Team: "x", Model: "m1"}, Counts{Requests: 1, Cost: 100})
	r.Add(now, Row{Key: "b", Team: "y", Model: "m1"}, Counts{Requests: 1, Cost: 300})
	r.Add(now.AddDate(0, 0, -1), Row{Key: "c", Team: "y", Model: "m1"}, Counts{Requests: 1, Cost: 1000})
	r.Add(now, Row{Key: "free", Team: "y", Model: "m1"}, Counts{Requests: 5})
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.Add(now, Row{Key: "a", Team: "x", Model: "m2"}, Counts{Requests: 2, Cost: 250}) // not flushed yet
	if err := r.RefreshTop(context.Background(), now); err != nil {
		t.Fatal(err)
	}
	want := []Spender{{Key: "a", Team: "x", Requests: 3, Cost: 350}, {Key: "b", Team: "y", Requests: 1, Cost: 300}}
	if got := r.Top(); !reflect.DeepEqual(got, want) {
		t.Errorf("top: %+v, want %+v", got, want)
	}
}

// Requests add while flushes run; every one lands, once.
func TestRecorderConcurrentAddAndFlush(t *testing.T) {
	r := NewRecorder(Options{})
	now := time.Now()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	flushed := make(chan struct{})
	go func() {
		defer close(flushed)
		for {
			select {
			case <-stop:
				return
			default:
				r.Flush(context.Background())
			}
		}
	}()
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				r.Add(now, Row{Key: string(rune('a' + g)), Model: string(rune('m' + i%3))}, Counts{Requests: 1, Cost: 2})
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-flushed
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	var n, cost int64
	for _, rec := range readDay(t, r.Store(), Day(now)) {
		n += rec.Requests
		cost += rec.Cost
	}
	if n != 8000 || cost != 16000 {
		t.Errorf("%d requests costing %d landed, want 8000 and 16000", n, cost)
	}
}

// A batch large enough to go in several chunks, whose first chunks
// landed before an error, is completed exactly by its retry.
func TestRedisPartialBatchRetried(t *testing.T) {
	c := redistest.Conn(t)
	s := NewRedisStore(c, redistest.Prefix(t, c), 400)
	ctx := context.Background()
	var recs []Record
	for i := range 2*chunkRows + 100 {
		recs = append(recs, Record{Day: "2026-07-01", Row: Row{Key: fmt.Sprintf("k%05d", i)}, Counts: Counts{Requests: 1, Cost: 3}})
	}
	if err := s.Add(ctx, "big", recs[:2*chunkRows]); err != nil { // two chunks landed, the third did not
		t.Fatal(err)
	}
	if err := s.Add(ctx, "big", recs); err != nil { // the retry
		t.Fatal(err)
	}
	if err := s.Add(ctx, "big", recs); err != nil { // and again, its reply lost
		t.Fatal(err)
	}
	var n, cost int64
	for _, r := range readDay(t, s, "2026-07-01") {
		n += r.Requests
		cost += r.Cost
	}
	if n != int64(len(recs)) || cost != 3*int64(len(recs)) {
		t.Errorf("%d requests costing %d, want %d and %d: each row once", n, cost, len(recs), 3*len(recs))
	}
}
