package sim

import "time"

// Event classes order events that share a time: upstream answers first,
// then the engine's timers (deadlines, then slow flags, then queue
// expiries: Engine.Tick), then clients giving up, then arrivals, then
// bookkeeping. So a call that answers in the instant its own slow flag
// falls in is an answer, not a slow call, as in seed 000's tick. The
// seed goes further: it settles the calls in flight one at a time, in
// arrival order, each answered, timed out or flagged slow, so an earlier
// call's slow flag comes before a later call's answer. By default every
// answer of an instant comes before every timer; under tick_rules: seed
// each answer first fires the timers of the calls admitted before it
// (Engine.TickAhead), which is the seed's order.
const (
	classUpstream = iota
	classEngine
	classClient
	classArrival
	classSample
)

type eventKind uint8

const (
	evEngineTick eventKind = iota
	evFirstByte
	evDone
	evPatience
	evArrive   // a new unique request, or a retry of one
	evArrivals // tick mode: this tick's batch of new requests
	evRestart
	evSample
	evLaunch     // a delayed retry's call goes out
	evProbeLimit // a synthetic probe's deadline
	evAdopt      // a fleet's breaker verdict reaches a replica
	evShare      // a fleet's replicas send their breaker counts
	evEvidence   // a replica's breaker counts reach another
	// evAttemptTimeout: an attempt's own timeout (clients.timeout) passes.
	evAttemptTimeout
	// evEval: the fallback evals' next timer (evals.go).
	evEval
	// evScrape: the gateway reads its pools' replicas' metrics.
	evScrape
	// evRefill: a replica's request for credit reaches the fleet's store.
	evRefill
	// evSweep: a fleet's replicas give back idle credit (credit.go).
	evSweep
	// evBeat: a fleet's replica heartbeats into the store (members.go).
	evBeat
	// evMember: replicas join or leave the fleet (members.go).
	evMember
)

type event struct {
	at time.Duration
	// order breaks ties at the same time: the class in the top byte, then
	// the push sequence, so one comparison orders both.
	order uint64
	kind  eventKind
	// flow indexes run.flows for a new arrival (evArrive with no req).
	flow uint16
	// rep indexes run.reps for an engine tick or a verdict to adopt.
	rep uint16
	req *request
	// token must match req.token for the event to still apply; a moved-on
	// request ignores its stale events. For an upstream event it is the
	// call's generation (upCall.gen); for evAdopt it indexes the fleet's
	// verdicts.
	token uint32
	// call is set for upstream events, which go stale when their call is
	// done (answered or cancelled), whatever the request's token.
	call *upCall
}

func order(class uint8, seq uint64) uint64 { return uint64(class)<<56 | seq }

// before reports whether e comes before f.
func (e *event) before(f *event) bool {
	return e.at < f.at || (e.at == f.at && e.order < f.order)
}

// eventHeap is a 4-ary min-heap of events by (at, order). It is typed
// (no container/heap interface calls) because the simulator pushes
// millions of events, four-way because that halves the levels a pop
// walks down, and it sifts a hole instead of swapping, so each level
// moves one event.
type eventHeap []event

func (h *eventHeap) push(e event) {
	*h = append(*h, e)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 4
		if !e.before(&s[p]) {
			break
		}
		s[i] = s[p]
		i = p
	}
	s[i] = e
}

func (h *eventHeap) pop() event {
	s := *h
	top := s[0]
	n := len(s) - 1
	last := s[n]
	s[n] = event{}
	s = s[:n]
	*h = s
	if n == 0 {
		return top
	}
	i := 0
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		m := c
		for j, end := c+1, min(c+4, n); j < end; j++ {
			if s[j].before(&s[m]) {
				m = j
			}
		}
		if !s[m].before(&last) {
			break
		}
		s[i] = s[m]
		i = m
	}
	s[i] = last
	return top
}

// eventQueue holds the events that are neither arrivals of new requests
// nor patience deadlines, in (at, order) order: a calendar of slots of
// 2^slotShift ns for the next numSlots slots, each unsorted until the
// clock reaches it, a heap for the slot being run (and anything pushed
// at or before it), and a heap for events beyond the calendar. Most
// events (an upstream call's first byte and end) fall within a second,
// so a push is an append and a pop works on a heap of the few events of
// one slot, where one heap of every pending event walked its levels.
type eventQueue struct {
	now   eventHeap // events of slot cur or earlier
	slots [numSlots][]event
	cur   int64 // the slot being run
	// inSlots counts the events in slots.
	inSlots int
	far     eventHeap // events of slot cur+numSlots or later
}

const (
	slotShift = 20 // 1.05 ms
	numSlots  = 1024
)

func slotOf(at time.Duration) int64 { return int64(at) >> slotShift }

func (q *eventQueue) push(e event) {
	switch s := slotOf(e.at); {
	case s <= q.cur:
		q.now.push(e)
	case s < q.cur+numSlots:
		b := &q.slots[s&(numSlots-1)]
		*b = append(*b, e)
		q.inSlots++
	default:
		q.far.push(e)
	}
}

// top is the first event, nil if there is none.
func (q *eventQueue) top() *event {
	for len(q.now) == 0 {
		if !q.advance() {
			return nil
		}
	}
	return &q.now[0]
}

// pop removes the first event; top must have returned it.
func (q *eventQueue) pop() event { return q.now.pop() }

// advance moves the calendar on one slot (to the first far event's, when
// the calendar is empty), bringing that slot's events into the heap of
// the slot being run. It reports false when no event is left.
func (q *eventQueue) advance() bool {
	if q.inSlots == 0 {
		if len(q.far) == 0 {
			return false
		}
		q.cur = max(q.cur, slotOf(q.far[0].at)-1)
	}
	q.cur++
	b := &q.slots[q.cur&(numSlots-1)]
	for _, e := range *b {
		q.now.push(e)
	}
	q.inSlots -= len(*b)
	clear(*b)
	*b = (*b)[:0]
	for len(q.far) > 0 && slotOf(q.far[0].at) < q.cur+numSlots {
		e := q.far.pop()
		if s := slotOf(e.at); s <= q.cur {
			q.now.push(e)
		} else {
			b := &q.slots[s&(numSlots-1)]
			*b = append(*b, e)
			q.inSlots++
		}
	}
	return true
}
