package sim

import (
	"net/http"
	"sort"
	"time"

	"github.com/sluice-gw/sluice/report"
	"github.com/sluice-gw/sluice/workload"
)

// fail handles an attempt that ended in an error answer: the client
// retries as workload.Retry decides, or the request ends with outcome.
func (r *run) fail(q *request, outcome report.Outcome, retryAfter time.Duration) {
	r.failStatus(q, outcome, clientStatus(outcome), retryAfter)
}

// failStatus is fail for an answer whose status the outcome does not
// tell (a 413 is Failed, and not retried).
func (r *run) failStatus(q *request, outcome report.Outcome, status int, retryAfter time.Duration) {
	if q.state == stDone {
		return
	}
	e := workload.Ended{
		Attempt:    q.attempt,
		Elapsed:    r.now - q.first,
		Status:     status,
		Started:    q.started,
		RetryAfter: retryAfter,
	}
	if delay, ok := r.retry.Next(e, q.st.rng); ok {
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
	if o == report.TimedOut {
		r.row.Timeout[q.pri] = append(r.row.Timeout[q.pri], r.now-q.first)
	}
	r.row.Counts[o]++
	r.row.ByPriority[q.pri][o]++
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

// answered records a complete answer.
func (r *run) answered(q *request) {
	took := r.now - q.first
	o := report.OK
	if p := r.sc.Clients.Patience; p > 0 && took > p {
		o = report.Late
	}
	if o == report.OK {
		r.row.Latency[q.pri] = append(r.row.Latency[q.pri], took)
		ttft := q.ttft
		if ttft == 0 {
			ttft = took
		}
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
	switch q.state {
	case stDone:
		return
	case stInGateway:
		id := q.id
		started := q.calls[0] != nil
		rd := r.cancelCalls(q, lifecycleCancelled, true)
		r.leaveGateway(q)
		if !started {
			q.rep.eng.Leave(r.clock(r.now), id)
		}
		defer r.apply(q.rep, rd)
	}
	r.final(q, report.TimedOut)
}

func sortByUID(qs []*request) {
	sort.Slice(qs, func(i, j int) bool { return qs[i].uid < qs[j].uid })
}
