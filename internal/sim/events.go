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

// eventHeap is a binary heap of events by (at, order). It is typed
// (no container/heap interface calls) because the simulator pushes
// millions of events.
type eventHeap []event

func (h eventHeap) less(i, j int) bool {
	a, b := &h[i], &h[j]
	if a.at != b.at {
		return a.at < b.at
	}
	return a.order < b.order
}

func (h *eventHeap) push(e event) {
	*h = append(*h, e)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !s.less(i, p) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *eventHeap) pop() event {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && s.less(l, m) {
			m = l
		}
		if r < n && s.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}
