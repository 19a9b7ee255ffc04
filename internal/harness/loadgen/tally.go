package loadgen

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-gw/sluice/internal/sim/report"
)

// tally collects a run's results. The row is written under a lock at the
// end of each attempt and request, which is rare next to the bytes moved;
// the live counters are atomics so the progress line never waits on it.
type tally struct {
	mu  sync.Mutex
	row report.Row
	// timeline is the run minute by minute, in scenario time (clock), at
	// the points where the simulator records the same events (sim.arrive,
	// sim.attemptTimeout, sim.shedAnswer, sim.final, sim.sample).
	timeline report.Timeline
	// clock is set once before the first request goes out.
	clock scenarioClock
	// streams break the row down by stream, when the scenario has
	// streams (nil otherwise).
	streams []*report.StreamRow

	sent     atomic.Int64 // unique requests issued
	inFlight atomic.Int64 // HTTP exchanges open
	peak     atomic.Int64
	outcomes [len(report.Counts{})]atomic.Int64
}

func newTally(p *plan) *tally {
	t := &tally{clock: scenarioClock{scale: p.timeScale}}
	if p.perStream {
		for _, sp := range p.streams {
			t.streams = append(t.streams, &report.StreamRow{Name: sp.name})
		}
	}
	return t
}

// begin and done bracket an HTTP exchange. Peak counts exchanges, not
// requests waiting to retry, because only an open exchange holds anything
// at the gateway.
func (t *tally) begin() {
	n := t.inFlight.Add(1)
	for {
		p := t.peak.Load()
		if n <= p || t.peak.CompareAndSwap(p, n) {
			return
		}
	}
}

func (t *tally) done() { t.inFlight.Add(-1) }

// sending records an attempt going out at: a new request's first, or a
// retry.
func (t *tally) sending(at time.Time, retry bool) {
	since := t.clock.since(at)
	t.mu.Lock()
	defer t.mu.Unlock()
	if retry {
		t.timeline.Retry(since)
	} else {
		t.timeline.Arrive(since)
	}
}

// attempt records one exchange: every one counts towards amplification,
// and every shed answer's latency counts, retried or not. The timeline
// takes refusals (429, 503, 529), with how long they took in real time,
// and attempts the client abandoned at their own timeout.
func (t *tally) attempt(pri int, a *attempt) {
	since := t.clock.since(a.end)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.row.Attempts++
	if a.outcome == report.Shed {
		t.row.Rejection[pri] = append(t.row.Rejection[pri], a.end.Sub(a.sent))
		if !a.reached {
			t.row.Refused[pri] = append(t.row.Refused[pri], a.end.Sub(a.sent))
		}
	}
	switch {
	case a.timedOut:
		t.timeline.TimeOut(since, pri)
	case refusal(a.status):
		t.timeline.Refuse(since, pri, a.end.Sub(a.sent))
	}
}

// refusal: the gateway or the upstream refused the attempt for overload
// or rate, the answers report.Minute.Rejection times.
func refusal(status int) bool {
	return status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable || status == 529
}

// throttled records a new request at that the client shed itself, never
// sent.
func (t *tally) throttled(at time.Time, stream, pri int) {
	since := t.clock.since(at)
	t.mu.Lock()
	t.timeline.Throttle(since, pri)
	t.mu.Unlock()
	t.finish(stream, pri, report.Shed, 0, 0, false)
}

// answer records an answered request's first content, at first, from
// its first attempt at t0.
func (t *tally) answer(pri int, t0, first time.Time) {
	since, ttft := t.clock.since(first), t.clock.scenario(first.Sub(t0))
	t.mu.Lock()
	defer t.mu.Unlock()
	t.timeline.Answer(since, pri, ttft)
}

// queue records the requests waiting at an instant: in the gateway's
// admission queue and in the upstreams' own.
func (t *tally) queue(at time.Time, gateway, upstream int) {
	since := t.clock.since(at)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.timeline.Queue(since, gateway, upstream)
}

// finish records a unique request's final outcome, with its latency and
// TTFT measured from its first attempt, as its user waited.
// degraded: it was answered, degraded.
func (t *tally) finish(stream, pri int, o report.Outcome, latency, ttft time.Duration, degraded bool) {
	t.outcomes[o].Add(1)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.row.Counts[o]++
	t.row.ByPriority[pri][o]++
	var s *report.StreamRow
	if stream < len(t.streams) {
		s = t.streams[stream]
		s.Counts[o]++
	}
	if degraded {
		t.row.Degraded++
		if s != nil {
			s.Degraded++
		}
	}
	switch o {
	case report.OK:
		t.row.Latency[pri] = append(t.row.Latency[pri], latency)
		t.row.TTFT[pri] = append(t.row.TTFT[pri], ttft)
		if s != nil {
			s.Latency = append(s.Latency, latency)
			s.TTFT = append(s.TTFT, ttft)
		}
	case report.TimedOut:
		t.row.Timeout[pri] = append(t.row.Timeout[pri], latency) // how long the user waited for nothing
	}
}

func (t *tally) count(o report.Outcome) int64 { return t.outcomes[o].Load() }

// result returns the row; call it once every request has finished.
func (t *tally) result(name string, span time.Duration) *report.Row {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.row
	r.Name = name
	r.Unique = int(t.sent.Load())
	r.Peak = int(t.peak.Load())
	r.Duration = span
	r.Streams = t.streams
	tl := t.timeline
	r.Timeline = &tl
	return &r
}

// scenarioClock turns the run's wall clock into scenario time, which a
// --time-scale run compresses: events fall in the scenario's minutes, and
// the clients' brakes (workload.Governor) count over the scenario's
// window, as in the simulator.
type scenarioClock struct {
	start time.Time // the run's start: scenario time zero
	scale float64
}

// scenario is a wall-clock span in scenario time.
func (c scenarioClock) scenario(d time.Duration) time.Duration {
	return time.Duration(float64(d) / c.scale)
}

// since is the scenario time from the run's start to at.
func (c scenarioClock) since(at time.Time) time.Duration { return c.scenario(at.Sub(c.start)) }

// now is at as an instant on the scenario's clock, for the governor.
func (c scenarioClock) now(at time.Time) time.Time { return c.start.Add(c.since(at)) }
