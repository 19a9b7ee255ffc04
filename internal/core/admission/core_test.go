package admission

import (
	"reflect"
	"slices"
	"testing"
	"time"
)

// t0 is where the tests' hand-moved clock starts; Core never reads the
// real one, so any instant will do.
var t0 = time.Unix(1_700_000_000, 0)

// dial is a Limiter the test turns by hand, standing in for an adaptive
// algorithm that moves the limit between Core's calls.
type dial struct{ n int }

func (d *dial) Limit() int { return d.n }

func verdictName(v Verdict) string {
	switch v {
	case Admitted:
		return "admitted"
	case Queued:
		return "queued"
	case Rejected:
		return "rejected"
	}
	return "verdict(?)"
}

func req(p Priority, scope int) Request { return Request{Priority: p, Scope: scope} }

var (
	crit  = req(Critical, NoScope)
	inter = req(Interactive, NoScope)
	bg    = req(Background, NoScope)
)

// harness drives a Core on a hand-moved clock and fails fast on surprises,
// so each scenario reads as the sequence of events it is about.
type harness struct {
	t   *testing.T
	c   *Core
	now time.Time
}

func newHarness(t *testing.T, cfg Config) *harness {
	return &harness{t: t, c: NewCore(cfg), now: t0}
}

func (h *harness) at(d time.Duration) { h.now = t0.Add(d) }

func (h *harness) admit(r Request, want Verdict) Result {
	h.t.Helper()
	res := h.c.Admit(h.now, r)
	if res.Verdict != want {
		h.t.Fatalf("Admit(%s, scope %d) = %s (%+v), want %s", r.Priority, r.Scope,
			verdictName(res.Verdict), res.Refusal, verdictName(want))
	}
	return res
}

func (h *harness) release(tk Ticket) []Ticket {
	h.t.Helper()
	granted, ok := h.c.Release(h.now, tk)
	if !ok {
		h.t.Fatalf("Release(%d) = not ok", tk)
	}
	return granted
}

func (h *harness) snap() Snapshot { return h.c.Snapshot(h.now) }

func (h *harness) wantGranted(got []Ticket, want ...Ticket) {
	h.t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !slices.Equal(got, want) {
		h.t.Fatalf("granted %v, want %v", got, want)
	}
}

func TestAdmit(t *testing.T) {
	type step struct {
		req     Request
		verdict Verdict
		// reason is checked when verdict is Rejected and reason is set.
		reason Reason
		// displaces is the 1-based index of the earlier step whose waiter
		// this one pushes out; zero means none.
		displaces int
	}
	A := func(r Request) step { return step{req: r, verdict: Admitted} }
	Q := func(r Request) step { return step{req: r, verdict: Queued} }
	D := func(r Request, victim int) step { return step{req: r, verdict: Queued, displaces: victim} }
	R := func(r Request, why Reason) step { return step{req: r, verdict: Rejected, reason: why} }
	s := func(p Priority, scope int) Request { return req(p, scope) }

	cases := []struct {
		name     string
		cfg      Config
		steps    []step
		inFlight int
		queued   [numPriorities]int
	}{
		{
			name:     "admits up to the global limit then queues",
			cfg:      Config{Global: Fixed(2), MaxDepth: 5, MaxWait: time.Second},
			steps:    []step{A(inter), A(bg), Q(inter), Q(bg)},
			inFlight: 2, queued: [3]int{0, 1, 1},
		},
		{
			name:     "no global limiter admits everything",
			cfg:      Config{MaxWait: time.Second},
			steps:    []step{A(inter), A(bg), A(inter), A(bg), A(crit)},
			inFlight: 5,
		},
		{
			name:     "non-positive global limit is unlimited",
			cfg:      Config{Global: Fixed(-3)},
			steps:    []step{A(inter), A(bg), A(inter)},
			inFlight: 3,
		},
		{
			name: "per-scope limits are independent",
			cfg: Config{Global: Fixed(10), Scopes: []Limiter{Fixed(1), Fixed(2)},
				MaxDepth: 5, MaxWait: time.Second},
			steps: []step{
				A(s(Interactive, 0)), Q(s(Interactive, 0)),
				A(s(Interactive, 1)), A(s(Background, 1)), Q(s(Interactive, 1)),
				A(inter),
			},
			inFlight: 4, queued: [3]int{0, 2, 0},
		},
		{
			name:     "nil and non-positive scope limits are unlimited",
			cfg:      Config{Scopes: []Limiter{nil, Fixed(0), Fixed(-1)}},
			steps:    []step{A(s(Interactive, 0)), A(s(Interactive, 0)), A(s(Background, 1)), A(s(Background, 1)), A(s(Interactive, 2))},
			inFlight: 5,
		},
		{
			name:     "scope outside Scopes is bound only by the global limit",
			cfg:      Config{Global: Fixed(2), Scopes: []Limiter{Fixed(1)}, MaxDepth: 5, MaxWait: time.Second},
			steps:    []step{A(s(Interactive, 7)), A(s(Interactive, 7)), Q(s(Interactive, 7))},
			inFlight: 2, queued: [3]int{0, 1, 0},
		},
		{
			name:     "critical uses reserved slots above the limit then queues",
			cfg:      Config{Global: Fixed(2), Reserved: 2, MaxDepth: 6, MaxWait: time.Second},
			steps:    []step{A(inter), A(inter), Q(inter), A(crit), A(crit), Q(crit), Q(bg)},
			inFlight: 4, queued: [3]int{1, 1, 1},
		},
		{
			name:     "reserved slots apply to scope limits too",
			cfg:      Config{Global: Fixed(10), Scopes: []Limiter{Fixed(1)}, Reserved: 1, MaxDepth: 4, MaxWait: time.Second},
			steps:    []step{A(s(Interactive, 0)), Q(s(Interactive, 0)), A(s(Critical, 0)), Q(s(Critical, 0))},
			inFlight: 2, queued: [3]int{1, 1, 0},
		},
		{
			name: "critical takes its reserved place, then displaces the other classes, then is refused",
			cfg:  Config{Global: Fixed(1), Reserved: 1, MaxDepth: 3, MaxWait: time.Second},
			steps: []step{
				A(inter), A(crit), Q(inter), Q(inter),
				R(bg, ReasonQueueFull),
				Q(crit), D(crit, 4), D(crit, 3), R(crit, ReasonQueueFull),
			},
			inFlight: 2, queued: [3]int{3, 0, 0},
		},
		{
			name:     "with waiting disabled critical is refused too, once past its reserved slots",
			cfg:      Config{Global: Fixed(1), Reserved: 1},
			steps:    []step{A(inter), R(inter, ReasonQueueFull), A(crit), R(crit, ReasonQueueFull)},
			inFlight: 2,
		},
		{
			name: "interactive displaces the newest background waiter",
			cfg:  Config{Global: Fixed(1), MaxDepth: 3, MaxWait: time.Second},
			steps: []step{
				A(inter), Q(bg), Q(bg), Q(bg),
				D(inter, 4), D(inter, 3), D(inter, 2),
				R(inter, ReasonQueueFull), R(bg, ReasonQueueFull),
			},
			inFlight: 1, queued: [3]int{0, 3, 0},
		},
		{
			name:     "background newcomer is refused when the queue is full of interactive",
			cfg:      Config{Global: Fixed(1), MaxDepth: 2, MaxWait: time.Second},
			steps:    []step{A(inter), Q(inter), Q(inter), R(bg, ReasonQueueFull), R(inter, ReasonQueueFull)},
			inFlight: 1, queued: [3]int{0, 2, 0},
		},
		{
			name:     "background never displaces background",
			cfg:      Config{Global: Fixed(1), MaxDepth: 1, MaxWait: time.Second},
			steps:    []step{A(inter), Q(bg), R(bg, ReasonQueueFull)},
			inFlight: 1, queued: [3]int{0, 0, 1},
		},
		{
			name:     "critical waiters are never displaced, and count against depth",
			cfg:      Config{Global: Fixed(1), MaxDepth: 2, MaxWait: time.Second},
			steps:    []step{A(inter), Q(crit), Q(inter), R(inter, ReasonQueueFull), D(crit, 3), R(crit, ReasonQueueFull)},
			inFlight: 1, queued: [3]int{2, 0, 0},
		},
		{
			name:     "per-class MaxQueued gives class_full",
			cfg:      Config{Global: Fixed(1), MaxDepth: 10, MaxWait: time.Second, MaxQueued: [3]int{0, 2, 1}},
			steps:    []step{A(inter), Q(bg), R(bg, ReasonClassFull), Q(inter), Q(inter), R(inter, ReasonClassFull)},
			inFlight: 1, queued: [3]int{0, 2, 1},
		},
		{
			name:     "class_full wins over displacement",
			cfg:      Config{Global: Fixed(1), MaxDepth: 2, MaxWait: time.Second, MaxQueued: [3]int{0, 1, 0}},
			steps:    []step{A(inter), Q(inter), Q(bg), R(inter, ReasonClassFull)},
			inFlight: 1, queued: [3]int{0, 1, 1},
		},
		{
			name:     "critical has a MaxQueued too",
			cfg:      Config{Global: Fixed(1), MaxDepth: 4, MaxWait: time.Second, MaxQueued: [3]int{1, 1, 1}},
			steps:    []step{A(inter), Q(crit), R(crit, ReasonClassFull), Q(inter)},
			inFlight: 1, queued: [3]int{1, 1, 0},
		},
		{
			name: "a flood of critical is bounded by the queue",
			cfg:  Config{Global: Fixed(1), Reserved: 1, MaxDepth: 2, MaxWait: time.Second},
			steps: []step{A(inter), A(crit), Q(crit), Q(crit), R(crit, ReasonQueueFull),
				R(crit, ReasonQueueFull), R(crit, ReasonQueueFull)},
			inFlight: 2, queued: [3]int{2, 0, 0},
		},
		{
			name:     "MaxWait zero refuses instead of queueing",
			cfg:      Config{Global: Fixed(1), MaxDepth: 5},
			steps:    []step{A(inter), R(inter, ReasonQueueFull), R(bg, ReasonQueueFull)},
			inFlight: 1,
		},
		{
			name:     "MaxDepth zero refuses instead of queueing",
			cfg:      Config{Global: Fixed(1), MaxWait: time.Second},
			steps:    []step{A(inter), R(inter, ReasonQueueFull), R(bg, ReasonQueueFull)},
			inFlight: 1,
		},
		{
			name:     "MaxDepth counts the reserved places",
			cfg:      Config{Global: Fixed(1), Reserved: 1, MaxDepth: 3, MaxWait: time.Second},
			steps:    []step{A(inter), Q(inter), Q(inter), R(inter, ReasonQueueFull)},
			inFlight: 1, queued: [3]int{0, 2, 0},
		},
		{
			name:     "MaxDepth no larger than Reserved leaves nothing for non-critical",
			cfg:      Config{Global: Fixed(1), Reserved: 2, MaxDepth: 2, MaxWait: time.Second},
			steps:    []step{A(inter), R(inter, ReasonQueueFull), A(crit), A(crit), Q(crit), Q(crit), R(crit, ReasonQueueFull)},
			inFlight: 3, queued: [3]int{2, 0, 0},
		},
		{
			name: "a request whose deadline has passed is refused rather than queued",
			cfg:  Config{Global: Fixed(1), MaxDepth: 2, MaxWait: time.Second},
			steps: []step{
				A(inter),
				R(Request{Priority: Interactive, Scope: NoScope, Deadline: t0}, ""),
				Q(Request{Priority: Interactive, Scope: NoScope, Deadline: t0.Add(time.Nanosecond)}),
			},
			inFlight: 1, queued: [3]int{0, 1, 0},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.cfg)
			tickets := make([]Ticket, len(tc.steps))
			seen := map[Ticket]bool{}
			for i, st := range tc.steps {
				res := h.c.Admit(h.now, st.req)
				tickets[i] = res.Ticket
				if seen[res.Ticket] {
					t.Fatalf("step %d: ticket %d reused", i+1, res.Ticket)
				}
				seen[res.Ticket] = true
				if res.Verdict != st.verdict {
					t.Fatalf("step %d: Admit(%s, scope %d) = %s %+v, want %s", i+1, st.req.Priority,
						st.req.Scope, verdictName(res.Verdict), res.Refusal, verdictName(st.verdict))
				}
				if res.Verdict == Rejected {
					f := res.Refusal
					if st.reason != "" && f.Reason != st.reason {
						t.Errorf("step %d: reason %q, want %q", i+1, f.Reason, st.reason)
					}
					if f.Ticket != res.Ticket || f.Priority != st.req.Priority || f.RetryAfter < MinRetryAfter {
						t.Errorf("step %d: refusal %+v does not describe ticket %d", i+1, f, res.Ticket)
					}
				}
				if st.displaces == 0 {
					if len(res.Displaced) != 0 {
						t.Fatalf("step %d: displaced %+v, want none", i+1, res.Displaced)
					}
					continue
				}
				victim := tc.steps[st.displaces-1]
				if len(res.Displaced) != 1 {
					t.Fatalf("step %d: displaced %+v, want step %d", i+1, res.Displaced, st.displaces)
				}
				d := res.Displaced[0]
				if d.Ticket != tickets[st.displaces-1] || d.Reason != ReasonDisplaced ||
					d.Priority != victim.req.Priority || d.RetryAfter < MinRetryAfter {
					t.Fatalf("step %d: displaced %+v, want ticket %d (step %d) for %s", i+1, d,
						tickets[st.displaces-1], st.displaces, ReasonDisplaced)
				}
				// A displaced waiter is gone: it can neither leave nor be released.
				if h.c.Leave(h.now, d.Ticket) {
					t.Fatalf("step %d: displaced ticket %d could still Leave", i+1, d.Ticket)
				}
			}
			sn := h.snap()
			if sn.InFlight != tc.inFlight || sn.Queued != tc.queued {
				t.Fatalf("snapshot in flight %d queued %v, want %d %v", sn.InFlight, sn.Queued, tc.inFlight, tc.queued)
			}
		})
	}
}

func TestPump(t *testing.T) {
	oneSlot := Config{Global: Fixed(1), MaxDepth: 8, MaxWait: time.Minute}
	scoped := Config{Global: Fixed(3), Scopes: []Limiter{Fixed(1), Fixed(2)},
		Reserved: 1, MaxDepth: 8, MaxWait: time.Minute}
	cases := []struct {
		name string
		cfg  Config
		run  func(t *testing.T, h *harness)
	}{
		{"release grants interactive before background", oneSlot, func(t *testing.T, h *harness) {
			hold := h.admit(inter, Admitted).Ticket
			b := h.admit(bg, Queued).Ticket
			i := h.admit(inter, Queued).Ticket
			h.wantGranted(h.release(hold), i)
			h.wantGranted(h.release(i), b)
		}},
		{"FIFO within a class", oneSlot, func(t *testing.T, h *harness) {
			cur := h.admit(inter, Admitted).Ticket
			var order []Ticket
			for range 4 {
				order = append(order, h.admit(bg, Queued).Ticket)
			}
			for _, want := range order {
				h.wantGranted(h.release(cur), want)
				cur = want
			}
			h.wantGranted(h.release(cur))
		}},
		{"critical before interactive before background", oneSlot, func(t *testing.T, h *harness) {
			hold := h.admit(inter, Admitted).Ticket
			b := h.admit(bg, Queued).Ticket
			i := h.admit(inter, Queued).Ticket
			c := h.admit(crit, Queued).Ticket
			h.wantGranted(h.release(hold), c)
			h.wantGranted(h.release(c), i)
			h.wantGranted(h.release(i), b)
		}},
		{"a waiter held back by its full scope does not block another scope", scoped, func(t *testing.T, h *harness) {
			s0 := h.admit(req(Interactive, 0), Admitted).Ticket
			stuck := h.admit(req(Interactive, 0), Queued).Ticket
			a := h.admit(req(Interactive, 1), Admitted).Ticket
			h.admit(req(Interactive, 1), Admitted) // global full
			other := h.admit(req(Interactive, 1), Queued).Ticket
			h.admit(bg, Queued)
			h.wantGranted(h.release(a), other)
			if sn := h.snap(); sn.Queued != [3]int{0, 1, 1} {
				t.Fatalf("queued %v after skipping the stuck waiter", sn.Queued)
			}
			// Freeing scope 0 lets the stuck waiter through ahead of background.
			h.wantGranted(h.release(s0), stuck)
		}},
		{"background bound for a free scope passes interactive stuck on its scope", scoped, func(t *testing.T, h *harness) {
			h.admit(req(Interactive, 0), Admitted)
			h.admit(req(Interactive, 0), Queued)
			a := h.admit(req(Background, 1), Admitted).Ticket
			h.admit(req(Background, NoScope), Admitted) // global full
			b := h.admit(req(Background, 1), Queued).Ticket
			h.wantGranted(h.release(a), b)
		}},
		{"a critical waiter stuck on its scope does not block another critical", scoped, func(t *testing.T, h *harness) {
			h.admit(req(Interactive, 0), Admitted)
			h.admit(req(Critical, 0), Admitted) // scope 0's reserved slot
			free := h.admit(inter, Admitted).Ticket
			h.admit(crit, Admitted) // global limit + reserved reached
			h.admit(req(Critical, 0), Queued)
			other := h.admit(req(Critical, 1), Queued).Ticket
			// Back to exactly the plain limit: room for critical only.
			h.wantGranted(h.release(free), other)
		}},
		{"release of a critical above the limit grants no non-critical", scoped, func(t *testing.T, h *harness) {
			for range 3 {
				h.admit(inter, Admitted)
			}
			c := h.admit(crit, Admitted).Ticket // the reserved slot
			h.admit(inter, Queued)
			h.wantGranted(h.release(c))
			if sn := h.snap(); sn.InFlight != 3 || sn.Queued[Interactive] != 1 {
				t.Fatalf("snapshot %+v", sn)
			}
		}},
		{"pump with nothing changed grants nothing", scoped, func(t *testing.T, h *harness) {
			for range 3 {
				h.admit(inter, Admitted)
			}
			h.admit(inter, Queued)
			h.admit(crit, Admitted)
			h.admit(crit, Queued)
			h.wantGranted(h.c.Pump(h.now))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newHarness(t, tc.cfg)) })
	}
}

func TestLimiterRiseThenPump(t *testing.T) {
	lim := &dial{n: 1}
	h := newHarness(t, Config{Global: lim, MaxDepth: 8, MaxWait: time.Minute})
	h.admit(inter, Admitted)
	w := []Ticket{h.admit(bg, Queued).Ticket, h.admit(inter, Queued).Ticket, h.admit(inter, Queued).Ticket}

	steps := []struct {
		name  string
		limit int
		want  []Ticket
	}{
		{"unchanged limit grants nothing", 1, nil},
		{"raise by two grants the two oldest interactive", 3, []Ticket{w[1], w[2]}},
		{"raise to unlimited grants background", 0, []Ticket{w[0]}},
		{"nothing left to grant", 0, nil},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			h.t = t
			lim.n = st.limit
			h.wantGranted(h.c.Pump(h.now), st.want...)
			if sn := h.snap(); sn.Limit != st.limit {
				t.Fatalf("snapshot limit %d, want %d", sn.Limit, st.limit)
			}
		})
	}
	if sn := h.snap(); sn.InFlight != 4 || sn.Queued != [3]int{} {
		t.Fatalf("end snapshot %+v", sn)
	}
}

func TestLimiterFallThenRelease(t *testing.T) {
	// Lowering the limit below what is in flight must hold waiters back
	// until enough slots come home.
	lim := &dial{n: 3}
	h := newHarness(t, Config{Global: lim, MaxDepth: 8, MaxWait: time.Minute})
	a := h.admit(inter, Admitted).Ticket
	b := h.admit(inter, Admitted).Ticket
	h.admit(inter, Admitted)
	w := h.admit(inter, Queued).Ticket
	lim.n = 1
	h.wantGranted(h.release(a))
	h.wantGranted(h.release(b))
	lim.n = 2
	h.wantGranted(h.c.Pump(h.now), w)
}

func TestExpire(t *testing.T) {
	type waiter struct {
		at  time.Duration
		req Request
		// deadline, when set, is an offset from t0.
		deadline time.Duration
	}
	type check struct {
		at      time.Duration
		expired []int         // indices into waiters
		next    time.Duration // offset from t0; negative means none
	}
	cases := []struct {
		name    string
		maxWait time.Duration
		waiters []waiter
		checks  []check
	}{
		{
			name:    "each waiter expires MaxWait after it was queued",
			maxWait: 5 * time.Second,
			waiters: []waiter{{at: 0, req: inter}, {at: time.Second, req: bg}, {at: 2 * time.Second, req: inter}},
			checks: []check{
				{at: 5*time.Second - time.Nanosecond, next: 5 * time.Second},
				{at: 5 * time.Second, expired: []int{0}, next: 6 * time.Second},
				{at: 6500 * time.Millisecond, expired: []int{1}, next: 7 * time.Second},
				{at: 7 * time.Second, expired: []int{2}, next: -1},
			},
		},
		{
			name:    "a deadline shorter than MaxWait wins",
			maxWait: 10 * time.Second,
			waiters: []waiter{{req: inter, deadline: 2 * time.Second}},
			checks: []check{
				{at: 0, next: 2 * time.Second},
				{at: 2*time.Second - 1, next: 2 * time.Second},
				{at: 2 * time.Second, expired: []int{0}, next: -1},
			},
		},
		{
			name:    "MaxWait wins over a longer deadline",
			maxWait: 2 * time.Second,
			waiters: []waiter{{req: bg, deadline: 10 * time.Second}},
			checks:  []check{{at: 0, next: 2 * time.Second}, {at: 2 * time.Second, expired: []int{0}, next: -1}},
		},
		{
			name:    "a waiter is refused where it stands, not when it reaches the head",
			maxWait: 10 * time.Second,
			waiters: []waiter{
				{at: 0, req: inter},
				{at: time.Second, req: inter, deadline: 3 * time.Second},
				{at: time.Second, req: bg, deadline: 4 * time.Second},
			},
			checks: []check{
				{at: 0, next: 10 * time.Second}, // before the others are queued
				{at: 3 * time.Second, expired: []int{1}, next: 4 * time.Second},
				{at: 4 * time.Second, expired: []int{2}, next: 10 * time.Second},
				{at: 10 * time.Second, expired: []int{0}, next: -1},
			},
		},
		{
			name:    "a critical waiter expires at MaxWait like any other",
			maxWait: time.Second,
			waiters: []waiter{{req: crit}, {req: inter}},
			checks: []check{
				{at: time.Second, expired: []int{0, 1}, next: -1},
			},
		},
		{
			name:    "a critical waiter expires at its own deadline when that comes first",
			maxWait: 10 * time.Second,
			waiters: []waiter{{req: crit, deadline: 4 * time.Second}},
			checks: []check{
				{at: time.Second, next: 4 * time.Second},
				{at: 4 * time.Second, expired: []int{0}, next: -1},
			},
		},
		{
			name:    "one late Expire refuses every waiter due",
			maxWait: 2 * time.Second,
			waiters: []waiter{{req: inter}, {req: bg}, {at: time.Second, req: inter}, {at: time.Second, req: crit}},
			checks:  []check{{at: time.Minute, expired: []int{0, 1, 2, 3}, next: -1}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{Global: Fixed(1), MaxDepth: 10, MaxWait: tc.maxWait})
			h.admit(inter, Admitted) // holds the only slot so everyone else waits
			tickets := map[Ticket]int{}
			ci := 0
			runChecks := func(upTo time.Duration) {
				for ; ci < len(tc.checks) && tc.checks[ci].at <= upTo; ci++ {
					c := tc.checks[ci]
					h.at(c.at)
					got := map[int]bool{}
					for _, f := range h.c.Expire(h.now) {
						i, ok := tickets[f.Ticket]
						if !ok || got[i] {
							t.Fatalf("at %v: refused unknown or repeated ticket %d", c.at, f.Ticket)
						}
						if (f.Reason != ReasonWaitTimeout && f.Reason != ReasonDeadline) || f.Priority != tc.waiters[i].req.Priority {
							t.Fatalf("at %v: refusal %+v", c.at, f)
						}
						got[i] = true
					}
					if len(got) != len(c.expired) {
						t.Fatalf("at %v: expired %v, want %v", c.at, got, c.expired)
					}
					for _, i := range c.expired {
						if !got[i] {
							t.Fatalf("at %v: expired %v, want %v", c.at, got, c.expired)
						}
					}
					next, ok := h.c.NextExpiry()
					switch {
					case c.next < 0 && ok:
						t.Fatalf("at %v: NextExpiry %v, want none", c.at, next.Sub(t0))
					case c.next >= 0 && (!ok || !next.Equal(t0.Add(c.next))):
						t.Fatalf("at %v: NextExpiry %v %v, want %v", c.at, next.Sub(t0), ok, c.next)
					}
				}
			}
			// A check at time T sees every waiter queued at or before T.
			for _, w := range tc.waiters {
				runChecks(w.at - 1)
				h.at(w.at)
				r := w.req
				if w.deadline != 0 {
					r.Deadline = t0.Add(w.deadline)
				}
				tickets[h.admit(r, Queued).Ticket] = len(tickets)
			}
			runChecks(1 << 62)
		})
	}
}

func TestLeave(t *testing.T) {
	cfg := Config{Global: Fixed(1), MaxDepth: 1, MaxWait: time.Second}
	cases := []struct {
		name string
		run  func(t *testing.T, h *harness)
	}{
		{"a waiter leaves and frees its place", func(t *testing.T, h *harness) {
			hold := h.admit(inter, Admitted).Ticket
			w := h.admit(inter, Queued).Ticket
			h.admit(inter, Rejected)
			if !h.c.Leave(h.now, w) {
				t.Fatal("Leave of a waiter = false")
			}
			if sn := h.snap(); sn.Queued != [3]int{} || sn.InFlight != 1 {
				t.Fatalf("snapshot after Leave %+v", sn)
			}
			if _, ok := h.c.NextExpiry(); ok {
				t.Fatal("the waiter that left still has an expiry")
			}
			if h.c.Leave(h.now, w) {
				t.Fatal("second Leave = true")
			}
			if f := h.c.Expire(h.now.Add(time.Hour)); len(f) != 0 {
				t.Fatalf("a waiter that left was refused: %+v", f)
			}
			h.wantGranted(h.release(hold))
			h.admit(inter, Admitted)
			h.admit(inter, Queued)
		}},
		{"an in-flight ticket cannot leave", func(t *testing.T, h *harness) {
			a := h.admit(inter, Admitted).Ticket
			if h.c.Leave(h.now, a) {
				t.Fatal("Leave of an in-flight ticket = true")
			}
			if sn := h.snap(); sn.InFlight != 1 {
				t.Fatalf("in flight %d after a refused Leave", sn.InFlight)
			}
			h.release(a)
		}},
		{"a granted waiter cannot leave", func(t *testing.T, h *harness) {
			a := h.admit(inter, Admitted).Ticket
			w := h.admit(inter, Queued).Ticket
			h.wantGranted(h.release(a), w)
			if h.c.Leave(h.now, w) {
				t.Fatal("Leave of a granted ticket = true")
			}
			h.release(w)
		}},
		{"unknown and refused tickets cannot leave", func(t *testing.T, h *harness) {
			h.admit(inter, Admitted)
			h.admit(inter, Queued)
			r := h.admit(inter, Rejected).Ticket
			for _, tk := range []Ticket{0, r, r + 100} {
				if h.c.Leave(h.now, tk) {
					t.Fatalf("Leave(%d) = true", tk)
				}
			}
			if sn := h.snap(); sn.Queued != [3]int{0, 1, 0} {
				t.Fatalf("queued %v", sn.Queued)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newHarness(t, cfg)) })
	}
}

func TestReleaseInvalid(t *testing.T) {
	h := newHarness(t, Config{Global: Fixed(1), MaxDepth: 2, MaxWait: 30 * time.Second})
	done := h.admit(inter, Admitted).Ticket
	h.release(done)
	hold := h.admit(inter, Admitted).Ticket
	waiting := h.admit(inter, Queued).Ticket
	h.admit(bg, Queued)
	refused := h.admit(bg, Rejected).Ticket

	cases := []struct {
		name string
		tk   Ticket
	}{
		{"double release", done},
		{"waiting ticket", waiting},
		{"refused ticket", refused},
		{"ticket zero", 0},
		{"never issued", refused + 1000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h.t = t
			h.at(time.Second)
			before := h.snap()
			ra := h.c.DrainTime(h.now, Background)
			granted, ok := h.c.Release(h.now, tc.tk)
			if ok || granted != nil {
				t.Fatalf("Release(%d) = %v, %v; want nil, false", tc.tk, granted, ok)
			}
			if after := h.snap(); !reflect.DeepEqual(before, after) {
				t.Fatalf("snapshot changed: %+v -> %+v", before, after)
			}
			// A bogus release must not count as a completion either.
			if got := h.c.DrainTime(h.now, Background); got != ra {
				t.Fatalf("DrainTime moved from %v to %v", ra, got)
			}
		})
	}
	h.t = t
	h.wantGranted(h.release(hold), waiting)
}

// serve keeps slots requests in flight from from to to, each taking
// service, back to back: completions per slot-second are 1/service. It
// returns the tickets still in flight at to.
func serve(c *Core, from, to time.Time, slots int, service time.Duration) []Ticket {
	type lane struct {
		t    Ticket
		ends time.Time
	}
	lanes := make([]lane, slots)
	for i := range lanes {
		// Staggered starts, so completions spread over the service time.
		at := from.Add(time.Duration(i) * service / time.Duration(slots))
		lanes[i] = lane{c.Admit(at, inter).Ticket, at.Add(service)}
	}
	for {
		i := 0
		for j := range lanes {
			if lanes[j].ends.Before(lanes[i].ends) {
				i = j
			}
		}
		if lanes[i].ends.After(to) {
			break
		}
		at := lanes[i].ends
		c.Release(at, lanes[i].t)
		lanes[i] = lane{c.Admit(at, inter).Ticket, at.Add(service)}
	}
	out := make([]Ticket, slots)
	for i, l := range lanes {
		out[i] = l.t
	}
	return out
}

func TestDrainTime(t *testing.T) {
	cases := []struct {
		name    string
		maxWait time.Duration
		slots   int
		service time.Duration // zero: no traffic before the question
		waiting [numPriorities]int
		class   Priority
		want    time.Duration
	}{
		{name: "no evidence falls back to MaxWait", maxWait: 30 * time.Second, slots: 1, waiting: [3]int{0, 3, 0}, class: Interactive, want: 30 * time.Second},
		{name: "no evidence with a short MaxWait floors at 1s", maxWait: 200 * time.Millisecond, slots: 1, class: Interactive, want: time.Second},
		{name: "4 slots of 2s, 9 ahead", maxWait: time.Minute, slots: 4, service: 2 * time.Second, waiting: [3]int{0, 9, 0}, class: Interactive, want: 5 * time.Second},
		{name: "16 slots of 1s, 47 ahead", maxWait: time.Minute, slots: 16, service: time.Second, waiting: [3]int{0, 0, 47}, class: Background, want: 3 * time.Second},
		{name: "interactive counts critical and interactive ahead", maxWait: time.Minute, slots: 2, service: time.Second, waiting: [3]int{2, 3, 5}, class: Interactive, want: 3 * time.Second},
		{name: "background counts every waiter ahead", maxWait: time.Minute, slots: 2, service: time.Second, waiting: [3]int{2, 3, 5}, class: Background, want: 5500 * time.Millisecond},
		{name: "critical counts only critical ahead", maxWait: time.Minute, slots: 1, service: 500 * time.Millisecond, waiting: [3]int{4, 3, 5}, class: Critical, want: 2500 * time.Millisecond},
		{name: "a fast drain floors at MinRetryAfter", maxWait: time.Minute, slots: 10, service: 100 * time.Millisecond, class: Interactive, want: MinRetryAfter},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lim := &dial{n: tc.slots}
			h := newHarness(t, Config{Global: lim, MaxDepth: 100, MaxWait: tc.maxWait})
			h.now = t0.Add(20 * time.Second)
			if tc.service > 0 {
				serve(h.c, t0, h.now, tc.slots, tc.service)
			} else {
				for range tc.slots {
					h.admit(inter, Admitted)
				}
			}
			for p, n := range tc.waiting {
				for range n {
					h.admit(req(Priority(p), NoScope), Queued)
				}
			}
			got := h.c.DrainTime(h.now, tc.class)
			// The window's buckets cut the last call or two at its edges.
			if d := got - tc.want; d < -tc.want/20 || d > tc.want/20 {
				t.Fatalf("DrainTime = %v, want %v (within 5%%)", got, tc.want)
			}
		})
	}
}

// The brief's test: after a minute of idleness, a burst is told how long
// the queue really takes to drain (within 2x), not a figure diluted by
// the quiet minute. It must hold whatever epoch the clock counts from:
// the simulator drives Core on a virtual clock starting at the zero Time.
func TestDrainTimeAfterIdleness(t *testing.T) {
	bases := []struct {
		name string
		at   time.Time
	}{
		{"wall clock", t0},
		{"virtual clock from zero Time", time.Time{}},
		{"clock before 1970", time.Date(1969, 7, 20, 20, 17, 0, 0, time.UTC)},
	}
	for _, b := range bases {
		t.Run(b.name, func(t *testing.T) {
			const slots, service = 8, 1500 * time.Millisecond
			lim := &dial{n: slots}
			h := newHarness(t, Config{Global: lim, MaxDepth: 100, MaxWait: 30 * time.Second})
			busy := b.at.Add(30 * time.Second)
			for _, tk := range serve(h.c, b.at, busy, slots, service) {
				h.c.Release(busy, tk)
			}
			// A quiet minute, then a burst: 8 start, 40 wait.
			h.now = busy.Add(time.Minute)
			for range slots {
				h.admit(inter, Admitted)
			}
			for range 40 {
				h.admit(inter, Queued)
			}
			// A newcomer has 40 ahead: 41 completions at 8 per 1.5 s.
			real := time.Duration(41.0 / slots * float64(service))
			got := h.c.DrainTime(h.now.Add(100*time.Millisecond), Interactive)
			if got < real/2 || got > 2*real {
				t.Fatalf("after a quiet minute DrainTime = %v; the queue drains in %v", got, real)
			}
			for range 200 {
				if ra := h.c.RetryAfter(h.now, Interactive); ra < real/4 || ra > 3*real {
					t.Fatalf("RetryAfter %v for a drain of %v", ra, real)
				}
			}
		})
	}
}

// Calls that stay in flight without completing lower the rate before any
// of them ends: a brownout lengthens Retry-After while it happens.
func TestDrainTimeFollowsABrownout(t *testing.T) {
	lim := &dial{n: 4}
	h := newHarness(t, Config{Global: lim, MaxDepth: 100, MaxWait: time.Minute})
	now := t0.Add(20 * time.Second)
	serve(h.c, t0, now, 4, time.Second) // healthy: 1 s calls, 4 in flight
	h.now = now
	for range 3 {
		h.admit(inter, Queued)
	}
	healthy := h.c.DrainTime(now, Interactive)
	// The four calls in flight now take 30 s; 10 s on, none has ended.
	browned := h.c.DrainTime(now.Add(10*time.Second), Interactive)
	if healthy > 1500*time.Millisecond || browned < 5*healthy {
		t.Fatalf("DrainTime healthy %v, 10 s into a brownout %v; want it to grow several-fold", healthy, browned)
	}
}

// Retry-After is spread over half to one and a half times the drain
// time, so a burst of refusals does not come back as one wave; the
// spread comes from the seed, so a simulation replays.
func TestRetryAfterJitter(t *testing.T) {
	run := func(seed uint64) []time.Duration {
		lim := &dial{n: 4}
		c := NewCore(Config{Global: lim, MaxDepth: 100, MaxWait: time.Minute, Seed: seed})
		now := t0.Add(20 * time.Second)
		serve(c, t0, now, 4, time.Second)
		for range 19 {
			c.Admit(now, inter)
		}
		d := c.DrainTime(now, Interactive)
		var out []time.Duration
		lo, hi, sum := time.Duration(1<<62), time.Duration(0), time.Duration(0)
		for range 1000 {
			ra := c.RetryAfter(now, Interactive)
			if ra < d/2 || ra > d+d/2 {
				t.Fatalf("RetryAfter %v outside [%v, %v]", ra, d/2, d+d/2)
			}
			lo, hi, sum = min(lo, ra), max(hi, ra), sum+ra
			out = append(out, ra)
		}
		if mean := sum / 1000; hi-lo < d/2 || mean < d*9/10 || mean > d*11/10 {
			t.Fatalf("1000 draws span [%v, %v], mean %v, for a drain time of %v: not spread about it", lo, hi, mean, d)
		}
		return out
	}
	a, b, c := run(1), run(1), run(2)
	if !slices.Equal(a, b) {
		t.Fatal("the same seed gave different jitter")
	}
	if slices.Equal(a, c) {
		t.Fatal("different seeds gave the same jitter")
	}
}

func TestCheck(t *testing.T) {
	cfg := Config{Global: Fixed(1), Scopes: []Limiter{Fixed(1)}, Reserved: 1, MaxDepth: 3,
		MaxWait: 10 * time.Second, MaxQueued: [3]int{0, 0, 1}}
	fill := func(h *harness, rs ...Request) {
		for _, r := range rs {
			h.c.Admit(h.now, r)
		}
	}
	cases := []struct {
		name    string
		cfg     Config
		setup   []Request
		r       Request
		refused bool
		reason  Reason
	}{
		{name: "room now", cfg: cfg, r: inter},
		{name: "room in the queue", cfg: cfg, setup: []Request{inter}, r: inter},
		{name: "queue full for interactive", cfg: cfg, setup: []Request{inter, inter, inter}, r: inter, refused: true, reason: ReasonQueueFull},
		{name: "queue full but a background to displace", cfg: cfg, setup: []Request{inter, inter, bg}, r: inter},
		{name: "queue full for background", cfg: cfg, setup: []Request{inter, inter, inter}, r: bg, refused: true, reason: ReasonQueueFull},
		{name: "class full", cfg: cfg, setup: []Request{inter, bg}, r: bg, refused: true, reason: ReasonClassFull},
		{name: "critical displaces rather than be refused", cfg: cfg, setup: []Request{inter, inter, inter, crit, crit}, r: crit},
		{name: "critical is refused when critical fills the queue", cfg: cfg, setup: []Request{inter, crit, crit, crit, crit}, r: crit, refused: true, reason: ReasonQueueFull},
		{name: "scope full but queue has room", cfg: cfg, setup: []Request{req(Interactive, 0)}, r: req(Background, 0)},
		{name: "waiting disabled", cfg: Config{Global: Fixed(1)}, setup: []Request{inter}, r: bg, refused: true, reason: ReasonQueueFull},
		{name: "critical is refused with waiting disabled and no reserved slot", cfg: Config{Global: Fixed(1)}, setup: []Request{inter}, r: crit, refused: true, reason: ReasonQueueFull},
		{name: "waiting disabled but room now", cfg: Config{Global: Fixed(1)}, r: bg},
		{name: "deadline already passed", cfg: cfg, setup: []Request{inter},
			r: Request{Priority: Interactive, Scope: NoScope, Deadline: t0.Add(-time.Second)}, refused: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.cfg)
			// Some completions so RetryAfter is rate-based and comparable.
			for range 3 {
				a := h.c.Admit(h.now, crit)
				h.c.Release(h.now, a.Ticket)
			}
			fill(h, tc.setup...)
			h.at(2 * time.Second)
			before := h.snap()
			f, refused := h.c.Check(h.now, tc.r)
			if after := h.snap(); !reflect.DeepEqual(before, after) {
				t.Fatalf("Check changed state: %+v -> %+v", before, after)
			}
			if refused != tc.refused {
				t.Fatalf("Check refused = %v (%+v), want %v", refused, f, tc.refused)
			}
			if refused && tc.reason != "" && f.Reason != tc.reason {
				t.Fatalf("Check reason %q, want %q", f.Reason, tc.reason)
			}
			res := h.c.Admit(h.now, tc.r)
			if (res.Verdict == Rejected) != refused {
				t.Fatalf("Check refused = %v but Admit said %s", refused, verdictName(res.Verdict))
			}
			if refused && (f.Reason != res.Refusal.Reason || f.Priority != res.Refusal.Priority) {
				t.Fatalf("Check %+v disagrees with Admit %+v", f, res.Refusal)
			}
		})
	}
}

func TestSnapshot(t *testing.T) {
	h := newHarness(t, Config{Global: Fixed(2), Scopes: []Limiter{Fixed(1), nil, Fixed(4)},
		Reserved: 1, MaxDepth: 10, MaxWait: time.Minute})
	t.Run("empty", func(t *testing.T) {
		want := Snapshot{ScopeInFlight: []int{0, 0, 0}, Limit: 2, ScopeLimits: []int{1, 0, 4}}
		if got := h.snap(); !reflect.DeepEqual(got, want) {
			t.Fatalf("got %+v, want %+v", got, want)
		}
	})
	h.admit(req(Interactive, 0), Admitted)
	h.admit(req(Interactive, 2), Admitted)
	h.admit(req(Critical, 2), Admitted)
	h.at(time.Second)
	bgOld := h.admit(req(Background, 1), Queued).Ticket
	h.at(3 * time.Second)
	h.admit(req(Interactive, 2), Queued)
	h.admit(req(Critical, NoScope), Queued)
	h.at(10 * time.Second)
	t.Run("busy", func(t *testing.T) {
		want := Snapshot{InFlight: 3, ScopeInFlight: []int{1, 0, 2}, Queued: [3]int{1, 1, 1},
			OldestWait: 9 * time.Second, Limit: 2, ScopeLimits: []int{1, 0, 4}}
		if got := h.snap(); !reflect.DeepEqual(got, want) {
			t.Fatalf("got %+v, want %+v", got, want)
		}
	})
	t.Run("oldest waiter gone", func(t *testing.T) {
		if !h.c.Leave(h.now, bgOld) {
			t.Fatal("Leave failed")
		}
		if got := h.snap(); got.OldestWait != 7*time.Second || got.Queued != [3]int{1, 1, 0} {
			t.Fatalf("got %+v", got)
		}
	})
	t.Run("the snapshot is a copy", func(t *testing.T) {
		s := h.snap()
		s.ScopeInFlight[0] = 99
		if h.snap().ScopeInFlight[0] != 1 {
			t.Fatal("Snapshot shares its slice with Core")
		}
	})
}

func TestPriorityNames(t *testing.T) {
	for _, p := range Priorities() {
		got, ok := ParsePriority(p.String())
		if !ok || got != p {
			t.Errorf("ParsePriority(%q) = %v, %v", p.String(), got, ok)
		}
	}
	if _, ok := ParsePriority("urgent"); ok {
		t.Error("ParsePriority accepted an unknown class")
	}
	if s := Priority(7).String(); s != "priority(7)" {
		t.Errorf("Priority(7).String() = %q", s)
	}
}

func TestRescope(t *testing.T) {
	// Scope 0 is full (limit 1), scope 1 has room; a waiter bound for 0
	// moved to 1 starts at the next Pump, and keeps its expiry.
	h := newHarness(t, Config{Global: Fixed(10), Scopes: []Limiter{Fixed(1), Fixed(5)}, MaxDepth: 5, MaxWait: time.Second})
	h.admit(req(Interactive, 0), Admitted)
	w := h.admit(req(Interactive, 0), Queued).Ticket
	if !h.c.Rescope(w, 1) {
		t.Fatal("Rescope of a waiter = false")
	}
	h.wantGranted(h.c.Pump(h.now), w)
	if sn := h.snap(); sn.ScopeInFlight[1] != 1 || sn.ScopeInFlight[0] != 1 {
		t.Fatalf("after the move: %+v", sn)
	}
	if h.c.Rescope(w, 0) {
		t.Fatal("Rescope of an in-flight ticket = true")
	}
	h.release(w)
	if sn := h.snap(); sn.ScopeInFlight[1] != 0 {
		t.Fatalf("the moved request released the wrong scope: %+v", sn)
	}
}

// A waiter refused at its own deadline is told so (deadline: the host
// answers a timeout); one refused at MaxWait is told wait_timeout.
func TestExpireSaysWhy(t *testing.T) {
	h := newHarness(t, Config{Global: Fixed(1), MaxDepth: 10, MaxWait: 2 * time.Second})
	h.admit(inter, Admitted)
	h.c.Admit(h.now, Request{Priority: Interactive, Scope: NoScope, Deadline: h.now.Add(time.Second)})
	h.c.Admit(h.now, Request{Priority: Interactive, Scope: NoScope, Deadline: h.now.Add(time.Minute)})
	h.at(time.Second)
	if got := h.c.Expire(h.now); len(got) != 1 || got[0].Reason != ReasonDeadline {
		t.Fatalf("at the first waiter's deadline: %+v, want one refusal for its deadline", got)
	}
	h.at(2 * time.Second)
	if got := h.c.Expire(h.now); len(got) != 1 || got[0].Reason != ReasonWaitTimeout {
		t.Fatalf("at MaxWait: %+v, want one wait_timeout", got)
	}
}
