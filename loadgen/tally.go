package loadgen

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-gw/sluice/report"
)

// tally collects a run's results. The row is written under a lock at the
// end of each attempt and request, which is rare next to the bytes moved;
// the live counters are atomics so the progress line never waits on it.
type tally struct {
	mu  sync.Mutex
	row report.Row
	// streams break the row down by stream, when the scenario has
	// streams (nil otherwise).
	streams []*report.StreamRow

	sent     atomic.Int64 // unique requests issued
	inFlight atomic.Int64 // HTTP exchanges open
	peak     atomic.Int64
	outcomes [len(report.Counts{})]atomic.Int64
}

func newTally(p *plan) *tally {
	t := &tally{}
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

// attempt records one exchange: every one counts towards amplification,
// and every shed answer's latency counts, retried or not.
func (t *tally) attempt(pri int, a *attempt) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.row.Attempts++
	if a.outcome == report.Shed {
		t.row.Rejection[pri] = append(t.row.Rejection[pri], a.end.Sub(a.sent))
	}
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
	return &r
}
