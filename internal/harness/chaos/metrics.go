package chaos

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The gateway's own gauges that hold something for a request while it
// runs. After a fault, with every client gone, each must read 0: any
// other value is a slot, a token or budget reservation, a body buffer or
// a shared generation that a path forgot to release.
var leakGauges = []string{
	"sluice_in_flight_requests",      // admission slots, global and per provider
	"sluice_queue_depth",             // waiters for a slot, per priority
	"sluice_budget_reserved",         // key budgets' reservations (tokens, requests)
	"sluice_request_body_bytes_held", // request-body buffer budget
	"sluice_requests_reading_body",
	"sluice_idempotency_in_flight", // shared generations
	"sluice_idempotency_participants",
}

// scrape reads a Prometheus text page and sums each metric's series by
// name (labels dropped): the checks want totals, such as every key's
// budget reservations together. Each series is also kept whole under
// its name and labels, as the page writes them.
func scrape(addr string) (map[string]float64, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	sums := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name := line[:strings.IndexAny(line, "{ ")]
		sp := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err == nil {
			sums[name] += v
			if series := line[:sp]; series != name {
				sums[series] = v
			}
		}
	}
	return sums, sc.Err()
}

// leaked sums the leak gauges on a scraped page.
// Only the sums by name are read: a gauge's series are its parts.
func leaked(m map[string]float64) (total float64, which []string) {
	for _, g := range leakGauges {
		if v := m[g]; v != 0 {
			total += v
			which = append(which, fmt.Sprintf("%s=%g", g, v))
		}
	}
	return total, which
}

// usage is a process's goroutines and resident memory at one moment.
type usage struct {
	Goroutines int
	RSS        float64 // bytes
}

func usageOf(m map[string]float64) usage {
	return usage{Goroutines: int(m["go_goroutines"]), RSS: m["process_resident_memory_bytes"]}
}

// globalInFlight is the series of the requests admitted gateway-wide.
const globalInFlight = `sluice_in_flight_requests{scope="global"}`

// sampler scrapes a gateway every interval while a fault runs: the
// "during" column is the highest goroutine count and RSS it saw, and
// the RSS check compares the two halves of the run.
type sampler struct {
	mu       sync.Mutex
	samples  []sample
	inFlight float64
	stop     chan struct{}
	done     chan struct{}
}

func startSampler(admin string, every time.Duration) *sampler {
	s := &sampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			if m, err := scrape(admin); err == nil {
				s.observe(usageOf(m), m[globalInFlight])
			}
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// sample is one scrape's usage and when it was taken.
type sample struct {
	at time.Time
	u  usage
}

func (s *sampler) observe(u usage, inFlight float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inFlight = max(s.inFlight, inFlight)
	s.samples = append(s.samples, sample{time.Now(), u})
}

// peakInFlight is the most requests the gateway had in flight at once.
func (s *sampler) peakInFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int(s.inFlight)
}

// finish stops the sampler and returns the peak it saw over the whole
// run, and over each half of it by time.
func (s *sampler) finish() (all, first, second usage) {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.samples) == 0 {
		return
	}
	start, end := s.samples[0].at, s.samples[len(s.samples)-1].at
	mid := start.Add(end.Sub(start) / 2)
	for _, x := range s.samples {
		half := &first
		if x.at.After(mid) {
			half = &second
		}
		for _, p := range []*usage{&all, half} {
			p.Goroutines = max(p.Goroutines, x.u.Goroutines)
			p.RSS = max(p.RSS, x.u.RSS)
		}
	}
	return all, first, second
}
