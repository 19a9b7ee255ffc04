package lifecycle

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/limit"
)

// t0 is where the hand-moved clock starts. The engine never reads the
// real clock, so any instant will do; a fixed date keeps failures
// readable.
var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func req(p admission.Priority, scope int) Request { return Request{Priority: p, Scope: scope} }

var (
	crit  = req(admission.Critical, admission.NoScope)
	inter = req(admission.Interactive, admission.NoScope)
	bg    = req(admission.Background, admission.NoScope)
)

// fakeLimit is a limit.Algorithm that records what it hears. It stays at
// its limit unless rise is set, in which case every sample that is not a
// drop raises the limit to rise: enough to tell whether the engine lets
// waiters use room a sample made.
type fakeLimit struct {
	limit   int
	rise    int
	samples []limit.Sample
}

func (f *fakeLimit) Limit() int { return f.limit }

func (f *fakeLimit) Update(s limit.Sample) {
	f.samples = append(f.samples, s)
	if f.rise > 0 && !s.Dropped {
		f.limit = f.rise
	}
}

// windowLimit is a limit that also closes windows on the clock, like
// limit.WindowedAIMD. Each Tick may move the limit to the next entry of
// steps; ends are when its windows end (NextTick), each passed once a
// Tick reaches it.
type windowLimit struct {
	fakeLimit
	ticks []time.Time
	steps []int
	ends  []time.Time
}

func (w *windowLimit) Tick(now time.Time) {
	w.ticks = append(w.ticks, now)
	if len(w.steps) > 0 {
		w.limit, w.steps = w.steps[0], w.steps[1:]
	}
	for len(w.ends) > 0 && !w.ends[0].After(now) {
		w.ends = w.ends[1:]
	}
}

func (w *windowLimit) NextTick() (time.Time, bool) {
	if len(w.ends) == 0 {
		return time.Time{}, false
	}
	return w.ends[0], true
}

var (
	_ limit.Algorithm = (*fakeLimit)(nil)
	_ ticker          = (*windowLimit)(nil)
)

// harness drives an Engine on a hand-moved clock and fails fast on
// surprises, so each scenario reads as the events it is about.
type harness struct {
	t   *testing.T
	e   *Engine
	now time.Time
}

func newHarness(t *testing.T, cfg Config) *harness {
	return &harness{t: t, e: New(cfg), now: t0}
}

func (h *harness) at(d time.Duration) { h.now = t0.Add(d) }

func (h *harness) arrive(r Request, want admission.Verdict) (ID, Ready) {
	h.t.Helper()
	a, rd := h.e.Arrive(h.now, r)
	if a.Verdict != want {
		h.t.Fatalf("Arrive(%+v) = verdict %d (%+v), want %d", r, a.Verdict, a.Refusal, want)
	}
	return a.ID, rd
}

func (h *harness) finish(id ID, o Outcome) Ready {
	h.t.Helper()
	rd, ok := h.e.Finish(h.now, id, o)
	if !ok {
		h.t.Fatalf("Finish(%d) = not ok", id)
	}
	return rd
}

var outcomeNames = map[OutcomeKind]string{OK: "ok", Overloaded: "overloaded", Failed: "failed", TimedOut: "timed out", ConnError: "conn error", Cancelled: "cancelled"}

func (h *harness) tick() Ready { return h.e.Tick(h.now) }

func (h *harness) wantNext(d time.Duration) {
	h.t.Helper()
	at, ok := h.e.NextTimer()
	if !ok || !at.Equal(t0.Add(d)) {
		h.t.Fatalf("NextTimer = %v, %v; want t0+%v", at.Sub(t0), ok, d)
	}
}

func (h *harness) wantNoTimer() {
	h.t.Helper()
	if at, ok := h.e.NextTimer(); ok {
		h.t.Fatalf("NextTimer = t0+%v, want none", at.Sub(t0))
	}
}

// wantReady compares a Ready to the expected one, treating nil and empty
// lists alike.
func wantReady(t *testing.T, got, want Ready) {
	t.Helper()
	norm := func(r Ready) string {
		return fmt.Sprintf("start %v refuse %+v expire %v", r.Start, r.Refuse, r.Expire)
	}
	if len(got.Start)+len(got.Refuse)+len(got.Expire) == 0 && len(want.Start)+len(want.Refuse)+len(want.Expire) == 0 {
		return
	}
	if !slices.Equal(got.Start, want.Start) || !slices.Equal(got.Expire, want.Expire) ||
		!slices.Equal(got.Refuse, want.Refuse) {
		t.Fatalf("Ready: %s\nwant: %s", norm(got), norm(want))
	}
}

func wantSamples(t *testing.T, f *fakeLimit, want ...limit.Sample) {
	t.Helper()
	if len(f.samples) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(f.samples, want) {
		t.Fatalf("limit heard\n  %+v\nwant\n  %+v", f.samples, want)
	}
}

// oneScope configures a single adaptive scope (index 0) with a global
// limit that never binds.
func oneScope(f limit.Algorithm, sig Signal, slow time.Duration, ac admission.Config) Config {
	return Config{Admission: ac, Scopes: []ScopeConfig{{Name: "p", Limit: f, Signal: sig, SlowThreshold: slow}}}
}

func TestEngineAdmission(t *testing.T) {
	t.Run("admits to the limit, queues to the depth, refuses beyond", func(t *testing.T) {
		h := newHarness(t, Config{
			Admission: admission.Config{MaxDepth: 1, MaxWait: 10 * time.Second},
			Scopes:    []ScopeConfig{{Fixed: 1}},
		})
		h.arrive(req(admission.Interactive, 0), admission.Admitted)
		h.arrive(req(admission.Interactive, 0), admission.Queued)
		a, rd := h.e.Arrive(h.now, req(admission.Interactive, 0))
		if a.Verdict != admission.Rejected || a.Refusal.Reason != admission.ReasonQueueFull || a.Refusal.Ticket != a.ID {
			t.Fatalf("third arrival = %+v, want rejected queue_full", a)
		}
		wantReady(t, rd, Ready{})
		// The other scope and unscoped requests are bound by no limit.
		h.arrive(inter, admission.Admitted)
		if s := h.e.Snapshot(h.now); s.InFlight != 2 || s.ScopeInFlight[0] != 1 || s.Queued != [3]int{0, 1, 0} {
			t.Fatalf("snapshot %+v", s)
		}
		if f, refused := h.e.Check(h.now, req(admission.Background, 0)); !refused || f.Reason != admission.ReasonQueueFull {
			t.Fatalf("Check = %+v, %v; want queue_full", f, refused)
		}
	})

	t.Run("Finish starts the oldest waiter and arms its timers", func(t *testing.T) {
		f := &fakeLimit{limit: 1}
		h := newHarness(t, oneScope(f, Total, 2*time.Second, admission.Config{MaxDepth: 4, MaxWait: time.Minute}))
		a, _ := h.arrive(req(admission.Interactive, 0), admission.Admitted)
		h.at(100 * time.Millisecond)
		b, _ := h.arrive(Request{Priority: admission.Interactive, Scope: 0, Deadline: t0.Add(10 * time.Second)}, admission.Queued)
		c, _ := h.arrive(req(admission.Background, 0), admission.Queued)
		h.at(time.Second)
		// While B waits, its timer is the queue's: a deadline of 10s
		// under a MaxWait of a minute. A's slow flag comes first.
		h.wantNext(2*time.Second + time.Nanosecond)
		wantReady(t, h.finish(a, Outcome{Kind: OK}), Ready{Start: []ID{b}})
		// B is now in flight: its slow flag (1s + 2s + 1ns) and its
		// deadline (10s) are armed; C's wait runs out at 1m.
		h.wantNext(3*time.Second + time.Nanosecond)
		h.at(3*time.Second + time.Nanosecond)
		wantReady(t, h.tick(), Ready{})
		wantSamples(t, f,
			limit.Sample{Now: t0.Add(time.Second), Latency: time.Second, InFlight: 1},
			limit.Sample{Now: t0.Add(3*time.Second + time.Nanosecond), Dropped: true, InFlight: 1, QueueWait: 900 * time.Millisecond},
		)
		h.wantNext(10 * time.Second)
		h.at(10 * time.Second)
		wantReady(t, h.tick(), Ready{Expire: []ID{b}})
		wantReady(t, h.finish(b, Outcome{Kind: TimedOut}), Ready{Start: []ID{c}})
		if len(f.samples) != 2 {
			t.Fatalf("a call flagged slow was reported again: %+v", f.samples[2:])
		}
	})

	t.Run("a displaced waiter is refused in Arrive's Ready", func(t *testing.T) {
		h := newHarness(t, Config{Admission: admission.Config{Global: admission.Fixed(1), MaxDepth: 1, MaxWait: time.Minute}})
		h.arrive(inter, admission.Admitted)
		b, _ := h.arrive(bg, admission.Queued)
		_, rd := h.arrive(inter, admission.Queued)
		if len(rd.Refuse) != 1 || rd.Refuse[0].Ticket != b || rd.Refuse[0].Reason != admission.ReasonDisplaced {
			t.Fatalf("Ready.Refuse = %+v, want %d displaced", rd.Refuse, b)
		}
		if _, ok := h.e.reqs.Get(b); ok {
			t.Fatal("the engine still remembers the displaced waiter")
		}
	})

	t.Run("Leave withdraws a waiter but not a call in flight", func(t *testing.T) {
		h := newHarness(t, Config{Admission: admission.Config{Global: admission.Fixed(1), MaxDepth: 2, MaxWait: time.Minute}})
		a, _ := h.arrive(inter, admission.Admitted)
		b, _ := h.arrive(inter, admission.Queued)
		if h.e.Leave(h.now, a) {
			t.Fatal("Leave withdrew a call in flight")
		}
		if !h.e.Leave(h.now, b) || h.e.Leave(h.now, b) {
			t.Fatal("Leave of a waiter: want true once, then false")
		}
		wantReady(t, h.finish(a, Outcome{Kind: OK}), Ready{})
		h.e.FirstByte(h.now, b) // a stale report about a request that is gone
		if h.e.reqs.Len() != 0 {
			t.Fatalf("engine remembers %d requests", h.e.reqs.Len())
		}
	})

	t.Run("a second Finish changes nothing", func(t *testing.T) {
		f := &fakeLimit{limit: 1}
		h := newHarness(t, oneScope(f, Total, 0, admission.Config{MaxDepth: 2, MaxWait: time.Minute}))
		a, _ := h.arrive(req(admission.Interactive, 0), admission.Admitted)
		b, _ := h.arrive(req(admission.Interactive, 0), admission.Queued)
		c, _ := h.arrive(req(admission.Interactive, 0), admission.Queued)
		wantReady(t, h.finish(a, Outcome{Kind: OK}), Ready{Start: []ID{b}})
		if rd, ok := h.e.Finish(h.now, a, Outcome{Kind: OK}); ok || len(rd.Start) != 0 {
			t.Fatalf("second Finish = %+v, %v", rd, ok)
		}
		if _, ok := h.e.Finish(h.now, c, Outcome{Kind: OK}); ok {
			t.Fatal("Finish of a waiter reported ok")
		}
		if len(f.samples) != 1 {
			t.Fatalf("limit heard %d samples, want 1", len(f.samples))
		}
	})

	t.Run("a waiter is refused when its wait runs out, not before", func(t *testing.T) {
		h := newHarness(t, Config{Admission: admission.Config{Global: admission.Fixed(1), MaxDepth: 2, MaxWait: 3 * time.Second}})
		a, _ := h.arrive(inter, admission.Admitted)
		b, _ := h.arrive(bg, admission.Queued)
		h.wantNext(3 * time.Second)
		h.at(3*time.Second - time.Nanosecond)
		wantReady(t, h.tick(), Ready{})
		h.at(3 * time.Second)
		rd := h.tick()
		if len(rd.Refuse) != 1 || rd.Refuse[0].Ticket != b || rd.Refuse[0].Reason != admission.ReasonWaitTimeout {
			t.Fatalf("Tick at MaxWait = %+v", rd)
		}
		h.wantNoTimer()
		wantReady(t, h.finish(a, Outcome{Kind: OK}), Ready{})
	})
}

func TestEngineSlowInFlight(t *testing.T) {
	t.Run("flagged just past the threshold and not reported again", func(t *testing.T) {
		for _, end := range []OutcomeKind{OK, Overloaded, Failed} {
			t.Run("then "+outcomeNames[end], func(t *testing.T) {
				f := &fakeLimit{limit: 10}
				h := newHarness(t, oneScope(f, Total, 2*time.Second, admission.Config{}))
				id, _ := h.arrive(req(admission.Interactive, 0), admission.Admitted)
				h.wantNext(2*time.Second + time.Nanosecond)
				h.at(2 * time.Second)
				wantReady(t, h.tick(), Ready{})
				wantSamples(t, f) // at the threshold is not past it
				h.at(2*time.Second + time.Nanosecond)
				wantReady(t, h.tick(), Ready{})
				slow := limit.Sample{Now: h.now, Dropped: true, InFlight: 1}
				wantSamples(t, f, slow)
				h.wantNoTimer()
				h.at(5 * time.Second)
				h.tick()
				h.finish(id, Outcome{Kind: end})
				wantSamples(t, f, slow)
			})
		}
	})

	t.Run("a call that ends before the threshold disarms its flag", func(t *testing.T) {
		f := &fakeLimit{limit: 10}
		h := newHarness(t, oneScope(f, Total, 2*time.Second, admission.Config{}))
		id, _ := h.arrive(req(admission.Interactive, 0), admission.Admitted)
		h.at(2 * time.Second)
		h.finish(id, Outcome{Kind: OK})
		h.wantNoTimer()
		h.at(time.Minute)
		h.tick()
		wantSamples(t, f, limit.Sample{Now: t0.Add(2 * time.Second), Latency: 2 * time.Second, InFlight: 1})
	})

	t.Run("the flag is reported with the scope's load", func(t *testing.T) {
		f := &fakeLimit{limit: 10}
		h := newHarness(t, oneScope(f, Total, 2*time.Second, admission.Config{}))
		h.arrive(req(admission.Interactive, 0), admission.Admitted)
		h.at(time.Second)
		h.arrive(req(admission.Interactive, 0), admission.Admitted)
		h.arrive(inter, admission.Admitted) // unscoped: not the scope's load
		h.at(4 * time.Second)
		h.tick()
		wantSamples(t, f,
			limit.Sample{Now: h.now, Dropped: true, InFlight: 2},
			limit.Sample{Now: h.now, Dropped: true, InFlight: 2},
		)
	})

	t.Run("a scope without an adaptive limit hears nothing", func(t *testing.T) {
		h := newHarness(t, Config{Scopes: []ScopeConfig{{Fixed: 1, SlowThreshold: time.Second}}})
		id, _ := h.arrive(req(admission.Interactive, 0), admission.Admitted)
		h.at(time.Minute)
		wantReady(t, h.tick(), Ready{})
		h.finish(id, Outcome{Kind: Overloaded})
		if h.e.reqs.Len() != 0 || h.e.slow.Len() != 0 {
			t.Fatal("engine kept state for a finished call")
		}
	})
}

func TestEngineSignal(t *testing.T) {
	const slow = 2 * time.Second
	cases := []struct {
		name   string
		sig    Signal
		stream bool
		// firstByte and finish are offsets from the call's start; zero
		// firstByte means none is reported.
		firstByte, finish time.Duration
		tokens            int
		// flagged: the call is still slow-armed at slow+1ns, so it is
		// reported as a drop and its Finish is not.
		flagged bool
		want    time.Duration
	}{
		{name: "ttft: a first byte disarms the flag", sig: TTFT, firstByte: 500 * time.Millisecond, finish: 10 * time.Second, want: 500 * time.Millisecond},
		{name: "auto is ttft for a stream", sig: Auto, stream: true, firstByte: 700 * time.Millisecond, finish: 30 * time.Second, want: 700 * time.Millisecond},
		{name: "ttft: a first byte after the threshold is too late", sig: TTFT, firstByte: slow + time.Millisecond, finish: 3 * time.Second, flagged: true},
		{name: "ttft without a first byte reads the whole call", sig: TTFT, finish: 1500 * time.Millisecond, want: 1500 * time.Millisecond},
		{name: "total reads the whole call", sig: Total, stream: true, firstByte: 100 * time.Millisecond, finish: 1800 * time.Millisecond, want: 1800 * time.Millisecond},
		{name: "auto is total for a non-stream", sig: Auto, firstByte: 100 * time.Millisecond, finish: 1900 * time.Millisecond, want: 1900 * time.Millisecond},
		{name: "total: a first byte does not disarm the flag", sig: Total, firstByte: 100 * time.Millisecond, finish: 5 * time.Second, flagged: true},
		{name: "auto non-stream: a first byte does not disarm the flag", sig: Auto, firstByte: 100 * time.Millisecond, finish: 5 * time.Second, flagged: true},
		{name: "tpot divides generation time by the tokens after the first", sig: TPOT, stream: true,
			firstByte: 400 * time.Millisecond, finish: 1400 * time.Millisecond, tokens: 11, want: 100 * time.Millisecond},
		{name: "tpot: generation counts, not ttft", sig: TPOT, stream: true,
			firstByte: 1200 * time.Millisecond, finish: 1900 * time.Millisecond, tokens: 8, want: 100 * time.Millisecond},
		{name: "tpot: the call still counts against the threshold", sig: TPOT, stream: true,
			firstByte: 100 * time.Millisecond, finish: 3 * time.Second, tokens: 30, flagged: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeLimit{limit: 1}
			h := newHarness(t, oneScope(f, tc.sig, slow, admission.Config{MaxDepth: 1, MaxWait: time.Minute}))
			// The call under test waits 250ms behind another, so its
			// start, not its arrival, is what latency is measured from.
			hold, _ := h.arrive(req(admission.Interactive, 0), admission.Admitted)
			id, _ := h.arrive(Request{Priority: admission.Interactive, Scope: 0, Stream: tc.stream}, admission.Queued)
			const wait = 250 * time.Millisecond
			h.at(wait)
			h.finish(hold, Outcome{Kind: Failed}) // no sample: keeps the log to the call under test
			start := h.now
			// Replay in time order: the flag check at slow+1ns falls
			// between the first byte and the finish, or not, depending on
			// the case.
			type event struct {
				at time.Duration
				do func()
			}
			events := []event{
				{slow + time.Nanosecond, func() { h.tick() }},
				{tc.finish, func() { h.finish(id, Outcome{Kind: OK, OutputTokens: tc.tokens}) }},
			}
			if tc.firstByte > 0 {
				events = append(events, event{tc.firstByte, func() { h.e.FirstByte(h.now, id) }})
			}
			slices.SortStableFunc(events, func(a, b event) int { return cmp.Compare(a.at, b.at) })
			for _, ev := range events {
				h.now = start.Add(ev.at)
				ev.do()
			}
			var want limit.Sample
			if tc.flagged {
				want = limit.Sample{Now: start.Add(slow + time.Nanosecond), Dropped: true, InFlight: 1, QueueWait: wait}
			} else {
				want = limit.Sample{Now: start.Add(tc.finish), Latency: tc.want, InFlight: 1, QueueWait: wait}
			}
			wantSamples(t, f, want)
		})
	}
}

func TestEngineOutcomes(t *testing.T) {
	cases := []struct {
		kind    OutcomeKind
		dropped bool
		sampled bool
	}{
		{kind: OK, sampled: true},
		{kind: Overloaded, sampled: true, dropped: true},
		// 0.5 s in flight, short of the 1 min slow threshold: the
		// deadline was the client's, and says nothing of overload.
		{kind: TimedOut},
		{kind: ConnError, sampled: true, dropped: true},
		{kind: Failed},
		{kind: Cancelled},
	}
	for _, tc := range cases {
		t.Run(outcomeNames[tc.kind], func(t *testing.T) {
			f := &fakeLimit{limit: 3}
			h := newHarness(t, oneScope(f, Auto, time.Minute, admission.Config{MaxDepth: 1, MaxWait: time.Minute}))
			// Fill the scope, queue the call under test, and let it in
			// after 1.5s: three in flight when it finishes.
			var hold []ID
			for range 3 {
				id, _ := h.arrive(req(admission.Interactive, 0), admission.Admitted)
				hold = append(hold, id)
			}
			id, _ := h.arrive(req(admission.Interactive, 0), admission.Queued)
			h.at(1500 * time.Millisecond)
			wantReady(t, h.finish(hold[0], Outcome{Kind: Cancelled}), Ready{Start: []ID{id}})
			h.at(2 * time.Second)
			h.finish(id, Outcome{Kind: tc.kind, OutputTokens: 5})
			if !tc.sampled {
				// A fast failure is not a low latency.
				wantSamples(t, f)
				return
			}
			want := limit.Sample{Now: h.now, InFlight: 3, QueueWait: 1500 * time.Millisecond, Dropped: tc.dropped}
			if !tc.dropped {
				want.Latency = 500 * time.Millisecond
			}
			wantSamples(t, f, want)
		})
	}

	t.Run("a timeout is a drop through its in-flight flag, not at the threshold itself", func(t *testing.T) {
		f := &fakeLimit{limit: 3}
		h := newHarness(t, oneScope(f, Auto, time.Second, admission.Config{}))
		id, _ := h.arrive(req(admission.Interactive, 0), admission.Admitted)
		h.at(800 * time.Millisecond)
		h.finish(id, Outcome{Kind: TimedOut})
		wantSamples(t, f)
		// At the threshold, not past it: no drop (seed 000's order).
		id, _ = h.arrive(req(admission.Interactive, 0), admission.Admitted)
		h.at(800*time.Millisecond + time.Second)
		h.finish(id, Outcome{Kind: TimedOut})
		wantSamples(t, f)
	})

	t.Run("InFlight counts the sampled call's own scope", func(t *testing.T) {
		f0, f1 := &fakeLimit{limit: 10}, &fakeLimit{limit: 10}
		h := newHarness(t, Config{Scopes: []ScopeConfig{{Limit: f0}, {Limit: f1}}})
		h.arrive(req(admission.Interactive, 0), admission.Admitted)
		h.arrive(req(admission.Interactive, 0), admission.Admitted)
		h.arrive(inter, admission.Admitted)
		id, _ := h.arrive(req(admission.Interactive, 1), admission.Admitted)
		h.at(time.Second)
		h.finish(id, Outcome{Kind: OK})
		wantSamples(t, f0)
		wantSamples(t, f1, limit.Sample{Now: h.now, Latency: time.Second, InFlight: 1})
	})
}

func TestEngineDeadlines(t *testing.T) {
	t.Run("a call in flight at its deadline is expired once", func(t *testing.T) {
		f := &fakeLimit{limit: 2}
		h := newHarness(t, oneScope(f, Total, 0, admission.Config{}))
		id, _ := h.arrive(Request{Priority: admission.Interactive, Scope: 0, Deadline: t0.Add(5 * time.Second)}, admission.Admitted)
		other, _ := h.arrive(Request{Priority: admission.Interactive, Scope: 0, Deadline: t0.Add(9 * time.Second)}, admission.Admitted)
		h.wantNext(5 * time.Second)
		h.at(5*time.Second - time.Nanosecond)
		wantReady(t, h.tick(), Ready{})
		h.at(5 * time.Second)
		wantReady(t, h.tick(), Ready{Expire: []ID{id}})
		h.wantNext(9 * time.Second)
		h.at(6 * time.Second)
		wantReady(t, h.tick(), Ready{})
		h.finish(id, Outcome{Kind: TimedOut})
		wantSamples(t, f, limit.Sample{Now: h.now, Dropped: true, InFlight: 2})
		// A call that ends before its deadline disarms it.
		h.finish(other, Outcome{Kind: OK})
		h.wantNoTimer()
	})

	t.Run("a call past its deadline on arrival is expired at the next Tick", func(t *testing.T) {
		h := newHarness(t, Config{})
		h.at(time.Second)
		id, _ := h.arrive(Request{Priority: admission.Critical, Scope: admission.NoScope, Deadline: t0}, admission.Admitted)
		h.wantNext(0)
		wantReady(t, h.tick(), Ready{Expire: []ID{id}})
	})

	t.Run("a waiter past its deadline is refused", func(t *testing.T) {
		h := newHarness(t, Config{Admission: admission.Config{Global: admission.Fixed(1), MaxDepth: 2, MaxWait: time.Minute}})
		a, _ := h.arrive(inter, admission.Admitted)
		b, _ := h.arrive(Request{Priority: admission.Interactive, Scope: admission.NoScope, Deadline: t0.Add(2 * time.Second)}, admission.Queued)
		c, _ := h.arrive(Request{Priority: admission.Critical, Scope: admission.NoScope, Deadline: t0.Add(3 * time.Second)}, admission.Queued)
		h.wantNext(2 * time.Second)
		h.at(2 * time.Second)
		rd := h.tick()
		if len(rd.Refuse) != 1 || rd.Refuse[0].Ticket != b || rd.Refuse[0].Reason != admission.ReasonDeadline || len(rd.Start)+len(rd.Expire) != 0 {
			t.Fatalf("Tick at b's deadline = %+v", rd)
		}
		// Critical waits past MaxWait but not past its own deadline.
		h.at(3 * time.Second)
		rd = h.tick()
		if len(rd.Refuse) != 1 || rd.Refuse[0].Ticket != c || rd.Refuse[0].Reason != admission.ReasonDeadline {
			t.Fatalf("Tick at c's deadline = %+v", rd)
		}
		wantReady(t, h.finish(a, Outcome{Kind: OK}), Ready{})
	})

	// A Finish can reach the engine at or after a waiter's deadline before
	// the host's Tick for that deadline does (the Runner's timer and the
	// finishing request race for its lock). Starting that waiter would
	// spend an upstream call on a request that is already out of time,
	// and its TimedOut would reach the limit as an overload drop.
	t.Run("a Finish after a waiter's deadline refuses it instead of starting it", func(t *testing.T) {
		for _, late := range []time.Duration{0, time.Millisecond} {
			t.Run(fmt.Sprint("late by ", late), func(t *testing.T) {
				f := &fakeLimit{limit: 1}
				h := newHarness(t, oneScope(f, Total, 0, admission.Config{MaxDepth: 2, MaxWait: time.Minute}))
				a, _ := h.arrive(req(admission.Interactive, 0), admission.Admitted)
				b, _ := h.arrive(Request{Priority: admission.Interactive, Scope: 0, Deadline: t0.Add(2 * time.Second)}, admission.Queued)
				c, _ := h.arrive(req(admission.Background, 0), admission.Queued)
				h.at(2*time.Second + late)
				rd := h.finish(a, Outcome{Kind: OK})
				if len(rd.Refuse) != 1 || rd.Refuse[0].Ticket != b || rd.Refuse[0].Reason != admission.ReasonDeadline {
					t.Fatalf("Finish after b's deadline: refused %+v, want b (%d) refused at its deadline", rd.Refuse, b)
				}
				if !slices.Equal(rd.Start, []ID{c}) {
					t.Fatalf("Finish after b's deadline started %v, want the next waiter %d", rd.Start, c)
				}
				wantReady(t, h.tick(), Ready{})
			})
		}
	})
}

func TestEngineLimitMoves(t *testing.T) {
	t.Run("a sample that raises the limit lets waiters in on Finish", func(t *testing.T) {
		f := &fakeLimit{limit: 1, rise: 3}
		h := newHarness(t, oneScope(f, Total, 0, admission.Config{MaxDepth: 4, MaxWait: time.Minute}))
		a, _ := h.arrive(req(admission.Interactive, 0), admission.Admitted)
		b, _ := h.arrive(req(admission.Background, 0), admission.Queued)
		c, _ := h.arrive(req(admission.Interactive, 0), admission.Queued)
		d, _ := h.arrive(req(admission.Interactive, 0), admission.Queued)
		h.at(time.Second)
		// Room for three: interactive first, oldest first.
		wantReady(t, h.finish(a, Outcome{Kind: OK}), Ready{Start: []ID{c, d, b}})
		if got := h.e.ScopeLimit(0); got != 3 {
			t.Fatalf("ScopeLimit = %d, want 3", got)
		}
	})

	t.Run("a slow flag that raises the limit lets waiters in on Tick", func(t *testing.T) {
		// Not a sensible algorithm, but it shows Tick pumps after it
		// feeds the limit, whatever the limit does with the sample.
		f := &fakeLimit{limit: 1}
		h := newHarness(t, oneScope(&riseOnDrop{f, 2}, Total, time.Second, admission.Config{MaxDepth: 4, MaxWait: time.Minute}))
		h.arrive(req(admission.Interactive, 0), admission.Admitted)
		b, _ := h.arrive(req(admission.Interactive, 0), admission.Queued)
		h.at(time.Second + time.Nanosecond)
		wantReady(t, h.tick(), Ready{Start: []ID{b}})
		// B's own slow flag was armed when it started.
		h.wantNext(2*time.Second + 2*time.Nanosecond)
	})

	t.Run("a windowed limit is ticked when its windows end", func(t *testing.T) {
		w := &windowLimit{fakeLimit: fakeLimit{limit: 1}, steps: []int{1, 2}, ends: []time.Time{t0.Add(time.Second), t0.Add(2 * time.Second)}}
		h := newHarness(t, oneScope(w, Total, 0, admission.Config{MaxDepth: 4, MaxWait: time.Minute}))
		h.wantNext(time.Second)
		h.arrive(req(admission.Interactive, 0), admission.Admitted)
		b, _ := h.arrive(req(admission.Interactive, 0), admission.Queued)
		h.at(time.Second)
		wantReady(t, h.tick(), Ready{})
		h.at(2 * time.Second)
		// The window closes with room for one more: B goes in at once,
		// though no call finished.
		wantReady(t, h.tick(), Ready{Start: []ID{b}})
		if want := []time.Time{t0.Add(time.Second), t0.Add(2 * time.Second)}; !slices.Equal(w.ticks, want) {
			t.Fatalf("ticks %v, want %v", w.ticks, want)
		}
		wantSamples(t, &w.fakeLimit)
	})

	t.Run("a windowed limit with no window to close asks for no tick", func(t *testing.T) {
		h := newHarness(t, oneScope(&windowLimit{fakeLimit: fakeLimit{limit: 1}}, Total, 0, admission.Config{}))
		h.wantNoTimer()
	})

	t.Run("a limit without Tick asks for no tick", func(t *testing.T) {
		h := newHarness(t, oneScope(&fakeLimit{limit: 1}, Total, 0, admission.Config{}))
		h.wantNoTimer()
	})
}

// riseOnDrop raises its limit when it hears a drop.
type riseOnDrop struct {
	*fakeLimit
	to int
}

func (r *riseOnDrop) Update(s limit.Sample) {
	r.fakeLimit.Update(s)
	if s.Dropped {
		r.limit = r.to
	}
}

func TestParseSignal(t *testing.T) {
	for in, want := range map[string]Signal{"": Auto, "auto": Auto, "ttft": TTFT, "tpot": TPOT, "total": Total} {
		if got, ok := ParseSignal(in); !ok || got != want {
			t.Errorf("ParseSignal(%q) = %v, %v; want %v", in, got, ok, want)
		}
	}
	if _, ok := ParseSignal("TTFT"); ok {
		t.Error(`ParseSignal("TTFT") accepted a name config does not use`)
	}
}

// step is one call into the engine and what came out, for comparing two
// runs.
type step struct {
	Op      string
	Now     time.Duration
	Arrival Arrival
	Ready   Ready
	OK      bool
}

// simLimit is a deterministic adaptive limit for the random runs: it
// grows on fast successes and halves on drops, and closes windows on
// Tick.
type simLimit struct {
	limit   int
	samples []limit.Sample
	ticks   int
}

func (s *simLimit) Limit() int { return s.limit }
func (s *simLimit) Update(x limit.Sample) {
	s.samples = append(s.samples, x)
	switch {
	case x.Dropped:
		s.limit = max(1, s.limit/2)
	case x.Latency < 300*time.Millisecond:
		s.limit = min(12, s.limit+1)
	}
}
func (s *simLimit) Tick(now time.Time) {
	s.ticks++
	if s.ticks%7 == 0 {
		s.limit = min(12, s.limit+1)
	}
}

// run drives one engine through a random sequence of events drawn from
// seed, and returns every step together with what each limit heard. The
// choices depend on the engine's own answers (which request to finish),
// so two runs agree only if the engine answers alike.
func run(t *testing.T, seed uint64) ([]step, [][]limit.Sample) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	lims := []*simLimit{{limit: 3}, {limit: 5}}
	cfg := Config{
		Admission: admission.Config{Global: admission.Fixed(10), Reserved: 1, MaxDepth: 8, MaxWait: 700 * time.Millisecond, MaxQueued: [3]int{0, 0, 3}},
		Scopes: []ScopeConfig{
			{Name: "a", Limit: lims[0], Signal: Auto, SlowThreshold: 400 * time.Millisecond},
			{Name: "b", Limit: lims[1], Signal: TPOT, SlowThreshold: 900 * time.Millisecond},
		},
	}
	e := New(cfg)
	now := t0
	var (
		log      []step
		waiting  []ID
		inFlight []ID
	)
	drop := func(s []ID, id ID) []ID { return slices.DeleteFunc(s, func(x ID) bool { return x == id }) }
	apply := func(rd Ready) {
		for _, id := range rd.Start {
			if !slices.Contains(waiting, id) {
				t.Fatalf("seed %d: started %d, which was not waiting", seed, id)
			}
			waiting = drop(waiting, id)
			inFlight = append(inFlight, id)
		}
		for _, f := range rd.Refuse {
			if !slices.Contains(waiting, f.Ticket) {
				t.Fatalf("seed %d: refused %d, which was not waiting", seed, f.Ticket)
			}
			waiting = drop(waiting, f.Ticket)
		}
		for _, id := range rd.Expire {
			if !slices.Contains(inFlight, id) {
				t.Fatalf("seed %d: expired %d, which was not in flight", seed, id)
			}
		}
	}
	for range 600 {
		at := func() time.Duration { return now.Sub(t0) }
		switch op := rng.IntN(10); {
		case op < 4:
			r := Request{Priority: admission.Priority(rng.IntN(3)), Scope: rng.IntN(3) - 1, Stream: rng.IntN(2) == 0}
			if rng.IntN(3) == 0 {
				r.Deadline = now.Add(time.Duration(rng.IntN(2000)) * time.Millisecond)
			}
			a, rd := e.Arrive(now, r)
			log = append(log, step{Op: "arrive", Now: at(), Arrival: a, Ready: rd})
			apply(rd)
			switch a.Verdict {
			case admission.Admitted:
				inFlight = append(inFlight, a.ID)
			case admission.Queued:
				waiting = append(waiting, a.ID)
			}
		case op < 6 && len(inFlight) > 0:
			id := inFlight[rng.IntN(len(inFlight))]
			o := Outcome{Kind: OutcomeKind(rng.IntN(6)), OutputTokens: rng.IntN(50)}
			rd, ok := e.Finish(now, id, o)
			log = append(log, step{Op: fmt.Sprint("finish ", id, " ", outcomeNames[o.Kind], " ", o.OutputTokens), Now: at(), Ready: rd, OK: ok})
			inFlight = drop(inFlight, id)
			apply(rd)
		case op < 7 && len(inFlight) > 0:
			id := inFlight[rng.IntN(len(inFlight))]
			e.FirstByte(now, id)
			log = append(log, step{Op: fmt.Sprint("first byte ", id), Now: at()})
		case op < 8 && len(waiting) > 0:
			id := waiting[rng.IntN(len(waiting))]
			ok := e.Leave(now, id)
			log = append(log, step{Op: fmt.Sprint("leave ", id), Now: at(), OK: ok})
			waiting = drop(waiting, id)
		default:
			// Time passes: to the next timer as often as not, as a host
			// would, otherwise by a random step that may overshoot it.
			if next, ok := e.NextTimer(); ok && rng.IntN(2) == 0 && next.After(now) {
				now = next
			} else {
				now = now.Add(time.Duration(rng.IntN(300)) * time.Millisecond)
			}
			rd := e.Tick(now)
			log = append(log, step{Op: "tick", Now: at(), Ready: rd})
			apply(rd)
		}
		s := e.Snapshot(now)
		if s.InFlight != len(inFlight) || s.Queued[0]+s.Queued[1]+s.Queued[2] != len(waiting) {
			t.Fatalf("seed %d: engine has %d in flight and %v queued; the host counted %d and %d",
				seed, s.InFlight, s.Queued, len(inFlight), len(waiting))
		}
	}
	// Drain: every call ends, every wait runs out, and nothing is left.
	for len(inFlight) > 0 {
		rd, _ := e.Finish(now, inFlight[0], Outcome{Kind: Cancelled})
		inFlight = inFlight[1:]
		apply(rd)
	}
	now = now.Add(time.Hour)
	apply(e.Tick(now))
	for len(inFlight) > 0 {
		rd, _ := e.Finish(now, inFlight[0], Outcome{Kind: Cancelled})
		inFlight = inFlight[1:]
		apply(rd)
	}
	if len(waiting) != 0 || e.reqs.Len() != 0 || e.slow.Len() != 0 || e.dead.Len() != 0 {
		t.Fatalf("seed %d: after draining, %d waiting, engine holds %d requests, %d slow and %d deadline timers",
			seed, len(waiting), e.reqs.Len(), e.slow.Len(), e.dead.Len())
	}
	return log, [][]limit.Sample{lims[0].samples, lims[1].samples}
}

func TestEngineDeterministic(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			a, sa := run(t, seed)
			b, sb := run(t, seed)
			for i := range min(len(a), len(b)) {
				if !reflect.DeepEqual(a[i], b[i]) {
					t.Fatalf("step %d differs:\n  %+v\n  %+v", i, a[i], b[i])
				}
			}
			if len(a) != len(b) || !reflect.DeepEqual(sa, sb) {
				t.Fatalf("runs differ: %d vs %d steps, limits heard %d/%d vs %d/%d samples",
					len(a), len(b), len(sa[0]), len(sa[1]), len(sb[0]), len(sb[1]))
			}
			var starts, refusals, expiries int
			for _, s := range a {
				starts += len(s.Ready.Start)
				refusals += len(s.Ready.Refuse)
				expiries += len(s.Ready.Expire)
			}
			// Each kind of decision should occur, or the run is not
			// comparing what it claims to.
			if starts == 0 || refusals == 0 || expiries == 0 || len(sa[0]) == 0 || len(sa[1]) == 0 {
				t.Errorf("run too tame: %d starts, %d refusals, %d expiries, %d+%d samples",
					starts, refusals, expiries, len(sa[0]), len(sa[1]))
			}
		})
	}
}
