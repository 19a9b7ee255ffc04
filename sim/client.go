package sim

import (
	"sort"
	"time"

	"github.com/sluice-gw/sluice/report"
)

// fail handles an attempt that ended in an error answer: the client
// retries per its strategy while attempts and patience remain, or the
// request ends with outcome.
func (r *run) fail(q *request, outcome report.Outcome, retryAfter time.Duration) {
	if q.state == stDone {
		return
	}
	if delay, ok := r.retryDelay(q, retryAfter); ok && outcome != report.TimedOut {
		q.state = stIdle
		q.token++
		r.push(r.now+delay, classArrival, evArrive, q)
		return
	}
	r.final(q, outcome)
}

// retryDelay decides whether and when the client retries.
func (r *run) retryDelay(q *request, retryAfter time.Duration) (time.Duration, bool) {
	rt := r.retry
	maxAttempts := rt.MaxAttempts
	if maxAttempts == 0 {
		maxAttempts = 3
	}
	if rt.Strategy == "" || rt.Strategy == "none" || q.attempt >= maxAttempts {
		return 0, false
	}
	base, cap := rt.Base, rt.Cap
	if base == 0 {
		base = 500 * time.Millisecond
	}
	if cap == 0 {
		cap = 30 * time.Second
	}
	backoff := min(cap, base<<min(q.attempt-1, 30))
	var d time.Duration
	switch rt.Strategy {
	case "backoff":
		d = backoff
	case "jittered":
		d = time.Duration(r.rng.Int64N(int64(backoff) + 1))
		d = max(d, retryAfter)
	}
	if p := r.sc.Clients.Patience; p > 0 && r.sc.Clients.AbandonOnPatience() && r.now+d >= q.first+p {
		return 0, false // the user will be gone before the retry
	}
	return d, true
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
			r.eng.Leave(r.clock(r.now), id)
		}
		defer r.apply(rd)
	}
	r.final(q, report.TimedOut)
}

func sortByUID(qs []*request) {
	sort.Slice(qs, func(i, j int) bool { return qs[i].uid < qs[j].uid })
}
