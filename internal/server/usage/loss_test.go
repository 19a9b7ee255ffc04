package usage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-gw/sluice/internal/server/fleetstore"
	"github.com/sluice-gw/sluice/internal/server/redistest"
)

// logBuf is a log a test reads while the code under test writes it.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// writerOn is a writer on prefix in c's Redis, its ledger in dir ("":
// memory), its log in log (nil: none).
func writerOn(t *testing.T, c redis.UniversalClient, prefix, name, dir string, log *logBuf) *RedisStore {
	t.Helper()
	o := RedisOptions{Prefix: prefix, Retention: 400, Name: name, Dir: dir, Settle: time.Millisecond}
	if log != nil {
		o.Log = slog.New(slog.NewTextHandler(log, nil))
	}
	s, err := OpenRedisStore(c, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// daysAgo is the UTC day n days before today.
func daysAgo(n int) string { return Day(time.Now().AddDate(0, 0, -n)) }

func mustAdd(t *testing.T, s Store, id string, recs ...Record) {
	t.Helper()
	if err := s.Add(context.Background(), id, recs); err != nil {
		t.Fatalf("add %s: %v", id, err)
	}
}

func mustSync(t *testing.T, s *RedisStore) {
	t.Helper()
	if err := s.Sync(context.Background()); err != nil {
		t.Fatalf("sync %s: %v", s.label, err)
	}
}

// total is day's counts in s, every row added up.
func total(t *testing.T, s Store, day string) Counts {
	t.Helper()
	var c Counts
	for _, r := range readDay(t, s, day) {
		c.Add(r.Counts)
	}
	return c
}

func gapsNow(t *testing.T, s *RedisStore) []Window {
	t.Helper()
	g, err := s.Gaps(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return windows(g, "0000-00-00", "9999-99-99")
}

// Redis loses its data (every key under the prefix gone at once, the
// fleet's epoch with them): each writer finds it at its next write or
// sync and writes back the totals it holds, so every day reads as
// before; until a writer has, its days are marked, and then they are
// not. Before, the records were gone and nothing said so.
func TestRedisLossWritesBack(t *testing.T) {
	c, prefix := redistest.Client(t)
	var logA logBuf
	a := writerOn(t, c, prefix, "replica-a", "", &logA)
	b := writerOn(t, c, prefix, "replica-b", "", nil)
	d1, d2 := daysAgo(1), daysAgo(0)
	mustAdd(t, a, "a1", Record{Day: d1, Row: rowA, Counts: Counts{1, 100, 50, 20, 700, 1}}, Record{Day: d2, Row: rowA, Counts: Counts{2, 10, 0, 5, 90, 2}})
	mustAdd(t, b, "b1", Record{Day: d2, Row: rowA, Counts: Counts{3, 30, 3, 3, 30, 3}}, Record{Day: d2, Row: rowB, Counts: Counts{1, 1, 1, 1, 1, 1}})
	mustSync(t, a) // a reads the registry: b is in it
	want1, want2 := total(t, a, d1), total(t, a, d2)
	if want2 != (Counts{6, 41, 4, 9, 121, 6}) {
		t.Fatalf("before the loss, %s reads %+v", d2, want2)
	}

	if n := redistest.FlushCount(c, prefix); n == 0 {
		t.Fatal("nothing under the test's prefix to lose")
	}
	if got := total(t, a, d2); got != (Counts{}) {
		t.Fatalf("after the loss %s still reads %+v", d2, got)
	}
	mustSync(t, a)
	if a.Losses() != 1 {
		t.Errorf("a found %d losses, want 1", a.Losses())
	}
	// a has written back; b has not yet: b's day is marked.
	if got := gapsNow(t, a); !reflect.DeepEqual(got, []Window{{d2, d2}}) {
		t.Errorf("marks with b not yet back: %v, want %s (b's day)", got, d2)
	}
	if got := total(t, a, d1); got != want1 {
		t.Errorf("%s after a wrote back: %+v, want %+v", d1, got, want1)
	}
	// b writes back at its next flush, new records or none.
	mustAdd(t, b, "b2", Record{Day: d2, Row: rowB, Counts: Counts{Requests: 1, Calls: 1}})
	want2.Add(Counts{Requests: 1, Calls: 1})
	if got := total(t, a, d2); got != want2 {
		t.Errorf("%s after both wrote back: %+v, want %+v", d2, got, want2)
	}
	if got := gapsNow(t, b); len(got) != 0 {
		t.Errorf("marks after every writer wrote back: %v", got)
	}
	mustSync(t, a)
	mustSync(t, b)
	if a.IncompleteDays() != 0 || strings.Contains(logA.String(), "are missing") {
		t.Errorf("a says %d days incomplete, log:\n%s", a.IncompleteDays(), logA.String())
	}
	if !strings.Contains(logA.String(), "the shared store lost its data") || !strings.Contains(logA.String(), "wrote back this replica's usage records") {
		t.Errorf("a's log does not tell the loss and the write-back:\n%s", logA.String())
	}
	// Totals written again, late or twice, change nothing.
	a.mu.Lock()
	days, _ := a.own.list()
	a.restore = &restore{days: days, since: time.Now()}
	a.mu.Unlock()
	mustSync(t, a)
	if got := total(t, a, d2); got != want2 {
		t.Errorf("%s after a wrote everything again: %+v, want %+v", d2, got, want2)
	}
}

// Records that no running writer holds are marked, never silently
// missing: a writer gone with its ledger in memory stays marked; one
// with its ledger in a state.dir is marked until it runs again, finds
// the loss it missed and writes back. The export carries the marks: a
// JSON field, a CSV first line, a header; the log says so, and the
// gauge counts the days.
func TestRedisLossMarksWhatNoWriterHolds(t *testing.T) {
	c, prefix := redistest.Client(t)
	var logA logBuf
	dir := t.TempDir()
	gone := writerOn(t, c, prefix, "replica-gone", "", nil)
	durable := writerOn(t, c, prefix, "replica-disk", dir, nil)
	a := writerOn(t, c, prefix, "replica-a", "", &logA)
	dGone, dA, dDisk := daysAgo(3), daysAgo(2), daysAgo(1)
	mustAdd(t, gone, "g", Record{Day: dGone, Row: rowA, Counts: Counts{Requests: 5, Cost: 50}})
	mustAdd(t, durable, "d", Record{Day: dDisk, Row: rowB, Counts: Counts{Requests: 7, Cost: 70}})
	mustAdd(t, a, "a", Record{Day: dA, Row: rowA, Counts: Counts{Requests: 1, Cost: 10}})
	// gone and durable stop (durable's state stays in dir); Redis loses
	// everything.
	redistest.Flush(c, prefix)
	waitFor(t, 5*time.Second, "a to log the missing records", func() bool {
		mustSync(t, a) // the marks read back, and stood for the settling time
		return strings.Contains(logA.String(), "are missing")
	})
	want := []Window{{dGone, dGone}, {dDisk, dDisk}}
	if got := gapsNow(t, a); !reflect.DeepEqual(got, want) {
		t.Fatalf("marks: %v, want %v", got, want)
	}
	if a.IncompleteDays() != 2 {
		t.Errorf("a counts %d incomplete days, want 2", a.IncompleteDays())
	}
	if log := logA.String(); !strings.Contains(log, "are missing and no running replica has written them back") ||
		!strings.Contains(log, dGone+".."+dGone) || !strings.Contains(log, "replica-gone (memory only)") || !strings.Contains(log, "replica-disk (state.dir") {
		t.Errorf("a's log does not name the missing days and writers:\n%s", log)
	}
	r := NewRecorder(Options{Store: a})
	code, h, body := get(t, r, "from="+dGone+"&to="+dDisk+"&format=csv")
	if code != 200 || h.Get(IncompleteHeader) != dGone+".."+dGone+", "+dDisk+".."+dDisk {
		t.Errorf("export: %d, %s: %q", code, IncompleteHeader, h.Get(IncompleteHeader))
	}
	if first, _, _ := strings.Cut(body, "\n"); !strings.HasPrefix(first, "# incomplete: records from "+dGone+" to "+dGone+", "+dDisk+" to "+dDisk+" may be missing") {
		t.Errorf("the CSV's first line: %q", first)
	}
	_, _, body = get(t, r, "from="+dA+"&to="+dDisk)
	var v struct{ Incomplete []Window }
	if err := json.Unmarshal([]byte(body), &v); err != nil || !reflect.DeepEqual(v.Incomplete, []Window{{dDisk, dDisk}}) {
		t.Errorf("JSON from %s: incomplete %v (%v), want only %s:\n%s", dA, v.Incomplete, err, dDisk, body)
	}

	// The durable writer runs again: it finds the epoch it knew gone,
	// writes back its ledger and clears its mark.
	again := writerOn(t, c, prefix, "replica-disk", dir, nil)
	if again.Writer() != durable.Writer() {
		t.Errorf("the writer's name changed across a restart: %s, then %s", durable.Writer(), again.Writer())
	}
	mustSync(t, again)
	if got := total(t, a, dDisk); got != (Counts{Requests: 7, Cost: 70}) {
		t.Errorf("%s after the durable writer ran again: %+v", dDisk, got)
	}
	if got := gapsNow(t, a); !reflect.DeepEqual(got, []Window{{dGone, dGone}}) {
		t.Errorf("marks after the durable writer wrote back: %v, want only %s", got, dGone)
	}
	mustSync(t, a)
	if a.IncompleteDays() != 1 {
		t.Errorf("a counts %d incomplete days, want 1", a.IncompleteDays())
	}
	// A second loss keeps what the first marked: a remembers it.
	redistest.Flush(c, prefix)
	mustSync(t, a)
	mustSync(t, again)
	if got := gapsNow(t, a); !reflect.DeepEqual(got, []Window{{dGone, dGone}}) {
		t.Errorf("marks after a second loss: %v, want %s still", got, dGone)
	}
	if got := total(t, a, dA); got != (Counts{Requests: 1, Cost: 10}) {
		t.Errorf("%s after a second loss: %+v", dA, got)
	}
}

// A writer with a ledger on disk keeps its records until Redis has
// them: a batch Redis did not take is in the ledger, and the writer
// started again on the same directory writes it.
func TestRedisDurableLedgerKeepsWhatRedisDidNotTake(t *testing.T) {
	c, prefix := redistest.Client(t)
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := ln.Addr().String()
	ln.Close()
	down := fleetstore.NewClient(refused)
	defer down.Close()
	w := writerOn(t, down, prefix, "replica-disk", dir, nil)
	day := daysAgo(0)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := w.Add(ctx, "b", []Record{{Day: day, Row: rowA, Counts: Counts{Requests: 4, Cost: 44}}}); err == nil {
		t.Fatal("Add to a Redis that refuses connections reported no error")
	}
	// The process ends here, its batch never taken. Started again:
	again := writerOn(t, c, prefix, "replica-disk", dir, nil)
	mustSync(t, again)
	if got := total(t, again, day); got != (Counts{Requests: 4, Cost: 44}) {
		t.Errorf("%s after the restart: %+v, want the batch Redis did not take", day, got)
	}
	// And once: another restart writes the same totals, no more.
	third := writerOn(t, c, prefix, "replica-disk", dir, nil)
	mustAdd(t, third, "c", Record{Day: day, Row: rowA, Counts: Counts{Requests: 1, Cost: 1}})
	if got := total(t, third, day); got != (Counts{Requests: 5, Cost: 45}) {
		t.Errorf("%s after a second restart and a batch: %+v, want 5 requests costing 45", day, got)
	}
}

// A ledger in memory is bounded: past its rows, its oldest days are
// forgotten, and after a loss they stay marked as this writer's gap
// (the days it still holds are written back).
func TestRedisMemoryLedgerBoundedAndMarked(t *testing.T) {
	c, prefix := redistest.Client(t)
	s, err := OpenRedisStore(c, RedisOptions{Prefix: prefix, Name: "small", MaxLedgerRows: 2, Settle: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for i := 4; i >= 0; i-- {
		mustAdd(t, s, fmt.Sprint(i), Record{Day: daysAgo(i), Row: rowA, Counts: Counts{Requests: 1}})
	}
	redistest.Flush(c, prefix)
	mustSync(t, s)
	if got := gapsNow(t, s); !reflect.DeepEqual(got, []Window{{daysAgo(4), daysAgo(2)}}) {
		t.Errorf("marks: %v, want the forgotten days %s..%s", got, daysAgo(4), daysAgo(2))
	}
	for i := range 2 {
		if got := total(t, s, daysAgo(i)); got.Requests != 1 {
			t.Errorf("%s, held, after the loss: %+v", daysAgo(i), got)
		}
	}
}

// Days written before writers had fields of their own (one HINCRBY
// total per row) read with the writers' totals added.
func TestRedisReadsTheOldLayout(t *testing.T) {
	c, prefix := redistest.Client(t)
	s := writerOn(t, c, prefix, "new", "", nil)
	day := daysAgo(0)
	if err := c.HIncrBy(context.Background(), s.DayKey(day), rowA.field()+sep+"n", 3).Err(); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, s, "b", Record{Day: day, Row: rowA, Counts: Counts{Requests: 2}})
	if got := total(t, s, day); got.Requests != 5 {
		t.Errorf("old and new: %d requests, want 5", got.Requests)
	}
}

// Against a Redis of the test's own, killed and restarted empty under
// two recorders flushing every 20 ms: the export ends equal to what was
// recorded, with nothing marked.
func TestRecordersSurviveAnEmptyRestart(t *testing.T) {
	own := redistest.Own(t)
	c := redis.NewClient(&redis.Options{Addr: own.Addr(), DialTimeout: time.Second, ContextTimeoutEnabled: true})
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var runs sync.WaitGroup
	defer func() { cancel(); runs.Wait() }()
	var recs [2]*Recorder
	for i := range recs {
		s := writerOn(t, c, "sluice:", fmt.Sprintf("replica-%d", i), "", nil)
		recs[i] = NewRecorder(Options{Store: s, Interval: 20 * time.Millisecond})
		runs.Add(1)
		go func() { defer runs.Done(); recs[i].Run(ctx) }()
	}
	const n = 400
	added := 0
	// Rows before the restart and after it differ, so only a write-back
	// brings the first ones back (a row written again carries its
	// writer's whole total).
	add := func(k int, keys string) {
		for range k {
			recs[added%2].Add(time.Now(), Row{Key: fmt.Sprint(keys, added%7), Model: "m"}, Counts{Requests: 1, Cost: 3})
			added++
		}
	}
	add(n/2, "before-")
	waitFor(t, 5*time.Second, "the first half in Redis", func() bool { return exported(t, recs[0]).Requests == n/2 })
	own.Kill()
	add(n/4, "away-") // while Redis is away
	own.Start()
	add(n/4, "after-")
	waitFor(t, 5*time.Second, "every record in the export", func() bool {
		got := exported(t, recs[1])
		return got.Requests == n && got.Cost == 3*n
	})
	for _, r := range recs {
		if s := r.Store().(*RedisStore); s.Losses() != 1 {
			t.Errorf("%s found %d losses, want 1", s.label, s.Losses())
		}
	}
	g, err := recs[0].Store().(*RedisStore).Gaps(context.Background())
	if err != nil || len(g) != 0 {
		t.Errorf("marks after every writer wrote back: %v %v", g, err)
	}
}

// exported is today's and yesterday's total in r's store.
func exported(t *testing.T, r *Recorder) Counts {
	var c Counts
	for _, d := range []string{daysAgo(1), daysAgo(0)} {
		r.Store().Read(context.Background(), d, func(rec Record) error { c.Add(rec.Counts); return nil })
	}
	return c
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// An export of a store that says some days may be incomplete marks
// them, and one of a store with none marks nothing.
func TestExportMarksIncompleteDays(t *testing.T) {
	r := NewRecorder(Options{Store: &gappy{gaps: []Gap{{From: "2026-01-02", To: "2026-01-05"}, {From: "2025-12-01", To: "2025-12-31"}}}})
	code, h, body := get(t, r, "from=2026-01-01&to=2026-01-03&format=csv")
	if code != 200 || h.Get(IncompleteHeader) != "2026-01-02..2026-01-03" ||
		!strings.HasPrefix(body, "# incomplete: records from 2026-01-02 to 2026-01-03 may be missing") {
		t.Errorf("csv: %d %q\n%s", code, h.Get(IncompleteHeader), body)
	}
	_, _, body = get(t, r, "from=2026-01-01&to=2026-01-03")
	if !strings.Contains(body, `"incomplete":[{"from":"2026-01-02","to":"2026-01-03"}]`) {
		t.Errorf("json: %s", body)
	}
	_, h, body = get(t, r, "from=2026-02-01&to=2026-02-03")
	if h.Get(IncompleteHeader) != "" || !strings.Contains(body, `"incomplete":[]`) {
		t.Errorf("a span with no gap: %q %s", h.Get(IncompleteHeader), body)
	}
	if got := windows([]Gap{{From: "2026-01-01", To: "2026-01-02"}, {From: "2026-01-03", To: "2026-01-03"}, {From: "2026-01-05", To: "2026-01-06"}}, "2026-01-01", "2026-12-31"); !reflect.DeepEqual(got, []Window{{"2026-01-01", "2026-01-03"}, {"2026-01-05", "2026-01-06"}}) {
		t.Errorf("windows merge touching spans: %v", got)
	}
}

type gappy struct {
	MemoryStore
	gaps []Gap
}

func (g *gappy) Gaps(context.Context) ([]Gap, error) { return g.gaps, nil }

// A loss the epoch cannot show (a day's hash gone, the epoch kept: an
// eviction, or a failover to a copy that lagged) is mended for the days
// being written: every resendEvery a writer writes their totals again.
func TestRedisResendsRecentDays(t *testing.T) {
	c, prefix := redistest.Client(t)
	s := writerOn(t, c, prefix, "a", "", nil)
	day := daysAgo(0)
	mustAdd(t, s, "b", Record{Day: day, Row: rowA, Counts: Counts{Requests: 3}})
	if err := c.Del(context.Background(), s.DayKey(day)).Err(); err != nil {
		t.Fatal(err)
	}
	mustSync(t, s)
	if got := total(t, s, day); got.Requests != 0 {
		t.Fatalf("the day came back before its time: %+v", got)
	}
	s.mu.Lock()
	s.resentAt = time.Now().Add(-resendEvery)
	s.mu.Unlock()
	mustSync(t, s) // marks the recent days dirty
	mustSync(t, s) // and writes them
	if got := total(t, s, day); got.Requests != 3 {
		t.Errorf("%s after the resend: %+v, want 3 requests", day, got)
	}
	if s.Losses() != 0 {
		t.Errorf("a resend counted as a loss")
	}
}
