package sim

import (
	"net/http"
	"sort"
	"time"

	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	"github.com/sluice-gw/sluice/internal/model/workload"
	"github.com/sluice-gw/sluice/internal/sim/report"
)

// fail handles an attempt that ended in an error answer: the client
// retries as workload.Retry decides, or the request ends with outcome.
func (r *run) fail(q *request, outcome report.Outcome, retryAfter time.Duration) {
	r.failStatus(q, outcome, clientStatus(outcome), retryAfter, false)
}

// failStatus is fail for an answer whose status the outcome does not
// tell (a 413 is Failed, and not retried).
// noRetry: the answer said x-should-retry: false.
func (r *run) failStatus(q *request, outcome report.Outcome, status int, retryAfter time.Duration, noRetry bool) {
	if q.state == stDone {
		return
	}
	e := workload.Ended{
		Attempt:    int(q.attempt),
		Elapsed:    r.now - q.first,
		Status:     status,
		Started:    q.started,
		RetryAfter: retryAfter,
		NoRetry:    noRetry,
	}
	g := q.st.gov
	if g != nil {
		g.Throttle.Add(r.clock(r.now), workload.Accepted(status))
	}
	if delay, ok := r.retry.Next(e, q.st.rng); ok && (g == nil || g.Budget.Spend()) {
		q.state = stIdle
		q.token++
		r.push(r.now+delay, classArrival, evArrive, q)
		return
	}
	r.final(q, outcome)
}

// clientStatus is the HTTP status a client sees for an outcome, which is
// what workload.Retryable judges. The simulator does not carry the status
// of an upstream error the gateway relays: it counts as a server error.
func clientStatus(o report.Outcome) int {
	switch o {
	case report.Lost:
		return 0 // no response at all
	case report.Shed:
		return http.StatusServiceUnavailable
	case report.RateLimited:
		return http.StatusTooManyRequests
	case report.TimedOut:
		return http.StatusGatewayTimeout
	}
	return http.StatusBadGateway
}

// final records a request's outcome.
func (r *run) final(q *request, o report.Outcome) {
	if q.state == stDone {
		return
	}
	q.state = stDone
	q.token++
	if len(r.patienceQ) > 0 {
		r.dropPatience(q)
	}
	if o == report.TimedOut {
		r.row.Timeout[q.pri] = append(r.row.Timeout[q.pri], r.now-q.first)
	}
	r.row.Counts[o]++
	r.row.ByPriority[q.pri][o]++
	if o == report.OK || o == report.Late {
		r.timeline.Answer(q.first+q.ttft, int(q.pri), q.ttft)
	}
	r.series.count(o)
	answered := o == report.OK || o == report.Late
	if answered && q.degraded {
		r.row.Degraded++
	}
	if s := q.st.row; s != nil {
		s.Counts[o]++
		if answered && q.degraded {
			s.Degraded++
		}
	}
}

// answered records a complete answer, from upstream u, whose call ended
// at end: at r.now, or earlier within the tick that reports it (tick
// mode). Whether it came within the client's patience is judged by its
// own end, as seed 000 judges it, not rounded up to the tick.
func (r *run) answered(q *request, u *upstream, end time.Duration) {
	took := r.now - q.first
	if end > 0 && end <= r.now && end >= q.first {
		took = end - q.first
	}
	if q.ttft == 0 {
		q.ttft = took
	}
	if g := q.st.gov; g != nil {
		g.Throttle.Add(r.clock(r.now), true)
	}
	o := report.OK
	if p := r.sc.Clients.Patience; p > 0 && took > p {
		o = report.Late
	}
	if o == report.OK {
		r.grade(u)
		r.row.Latency[q.pri] = append(r.row.Latency[q.pri], took)
		ttft := q.ttft
		r.row.TTFT[q.pri] = append(r.row.TTFT[q.pri], ttft)
		r.series.latency(took)
		if s := q.st.row; s != nil {
			s.Latency = append(s.Latency, took)
			s.TTFT = append(s.TTFT, ttft)
		}
	}
	r.final(q, o)
}

// patience: the user gives up and disconnects.
func (r *run) patience(q *request) {
	if q.state == stDone {
		return
	}
	defer r.hangUp(q)()
	r.final(q, report.TimedOut)
}

// attemptTimeout: the attempt's own timeout passed with no first token,
// so the client hangs up and, like after a lost connection, may retry.
func (r *run) attemptTimeout(q *request) {
	if q.state == stDone || q.started {
		return
	}
	defer r.hangUp(q)()
	r.timeline.TimeOut(r.now, int(q.pri))
	r.failStatus(q, report.TimedOut, 0, 0, false)
}

// shedAnswer ends an attempt the gateway refused for overload, with its
// Retry-After and whether it said not to retry.
func (r *run) shedAnswer(q *request, a lifecycle.Reply) {
	r.row.Rejection[q.pri] = append(r.row.Rejection[q.pri], r.now-q.sent)
	if q.calls[0] == nil {
		r.row.Refused[q.pri] = append(r.row.Refused[q.pri], r.now-q.sent)
	}
	r.timeline.Refuse(r.now, int(q.pri), r.now-q.sent)
	if q.attempt > 1 {
		r.timeline.RetryRefused(r.now)
	}
	s := repliedOf(a)
	r.failStatus(q, s.outcome, s.status, s.retryAfter, s.noRetry)
}

// hangUp takes an attempt the client abandons out of the gateway,
// cancelling its calls. The caller settles the request, then runs what
// hangUp returns: the engine's answer to the departure, which may start
// others' calls.
func (r *run) hangUp(q *request) (apply func()) {
	if q.state != stInGateway {
		return func() {}
	}
	id, rp := q.id, q.rep
	started := q.calls[0] != nil
	rd := r.cancelCalls(q, lifecycleCancelled, true)
	r.leaveGateway(q)
	if !started {
		rp.eng.Leave(r.clock(r.now), id)
	}
	return func() { r.apply(rp, rd) }
}

func sortByUID(qs []*request) {
	sort.Slice(qs, func(i, j int) bool { return qs[i].uid < qs[j].uid })
}
