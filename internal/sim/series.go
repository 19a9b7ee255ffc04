package sim

import (
	"fmt"
	"io"
	"time"

	"github.com/sluice-gw/sluice/internal/sim/report"
)

// Point is the state at the end of one sampling period.
type Point struct {
	At       time.Duration
	InFlight int // admitted and not finished
	Queued   int // waiting for admission
	Limit    int // the model's provider's concurrency limit (0: none)
	// Upstream is the calls waiting in the upstream servers' own queues
	// (vLLM's waiting queue), which the gateway cannot see.
	Upstream int
	OK, Shed int // outcomes during the period
	// Retries counts the retry attempts sent during the period.
	Retries  int
	TimedOut int
	// P99 is the 99th percentile latency of answers in the period.
	P99 time.Duration
}

// Series is one policy's time series.
type Series struct {
	Name   string
	Points []Point
	// Marks are the breaker transitions, in order.
	Marks []Mark
	cur   Point
	lat   report.Samples
}

// Mark is a breaker transition: a provider's breaker opened, closed, or
// stepped traffic back (half-open, or a fail-back step).
type Mark struct {
	At       time.Duration
	Provider string
	To       string // "open", "half-open" or "closed"
	Step     int    // the fail-back step after it
}

// Span is a scripted event of the scenario: a brownout or failure window
// of an upstream, or a replica down.
type Span struct {
	Start, End time.Duration
	Label      string
}

func newSeries(name string) *Series { return &Series{Name: name} }

func (s *Series) count(o report.Outcome) {
	switch o {
	case report.OK:
		s.cur.OK++
	case report.Shed:
		s.cur.Shed++
	case report.TimedOut:
		s.cur.TimedOut++
	}
}

func (s *Series) latency(d time.Duration) { s.lat = append(s.lat, d) }

// sample closes the current period.
func (r *run) sample() {
	s := r.series
	p := s.cur
	p.At = r.now
	// A fleet's series adds its replicas up.
	for _, rp := range r.reps {
		snap := rp.eng.Snapshot(r.clock(r.now))
		p.InFlight += snap.InFlight
		for _, n := range snap.Queued {
			p.Queued += n
		}
		p.Limit += rp.eng.ScopeLimit(r.scope)
	}
	waiting := 0
	for s, u := range r.ups {
		if r.pools[s] != nil {
			for _, pu := range r.pools[s] {
				waiting += pu.capacity.Waiting()
			}
			continue
		}
		waiting += u.capacity.Waiting()
	}
	p.Upstream = waiting
	if r.now < r.sc.Duration {
		r.timeline.Queue(r.now, p.Queued, waiting)
	}
	p.P99 = s.lat.Select(.99)
	if r.now > 0 {
		s.Points = append(s.Points, p)
	}
	s.cur = Point{}
	s.lat = s.lat[:0]
}

// WriteCSV writes every policy's series as one CSV table.
func WriteCSV(w io.Writer, series []*Series) {
	fmt.Fprintln(w, "policy,t_s,in_flight,queued,limit,ok,shed,timed_out,p99_ms")
	for _, s := range series {
		for _, p := range s.Points {
			fmt.Fprintf(w, "%s,%.3f,%d,%d,%d,%d,%d,%d,%.1f\n", s.Name, p.At.Seconds(), p.InFlight, p.Queued,
				p.Limit, p.OK, p.Shed, p.TimedOut, float64(p.P99)/float64(time.Millisecond))
		}
	}
}

// maxOf returns the largest value f takes over the series' points.
func maxOf(series []*Series, f func(Point) float64) float64 {
	m := 0.0
	for _, s := range series {
		for _, p := range s.Points {
			m = max(m, f(p))
		}
	}
	return m
}
