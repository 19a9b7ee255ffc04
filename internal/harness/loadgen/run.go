package loadgen

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-gw/sluice/internal/model/workload"
	"github.com/sluice-gw/sluice/internal/sim/report"
	"github.com/sluice-gw/sluice/internal/sim/scenario"
)

// lagWarning is how far behind schedule arrivals may fall before the run
// says so: past it, the generator, not the gateway, shaped the load.
const lagWarning = 100 * time.Millisecond

// runner is one run's shared state.
type runner struct {
	plan   *plan
	client *client
	tally  *tally
	// ctx is every request's parent; cancelling it ends the drain.
	ctx context.Context
	wg  sync.WaitGroup
	// lag is the worst arrival delay behind schedule (under lagMu: each
	// stream issues from its own goroutine).
	lagMu sync.Mutex
	lag   time.Duration
	// issued counts unique requests across the streams, for MaxRequests.
	issued atomic.Int64
	// govs are the streams' governors, by stream index, when the clients
	// run the client package (retry strategy "sluice"); nil otherwise.
	govs []*governor
}

// Run replays the scenario's clients against the gateway at opts.Target
// and returns the outcome row. It issues for the duration (or until
// MaxRequests), then waits at most patience + 5 s for answers, cancelling
// what is left. When ctx ends early it stops issuing, cancels what is in
// flight (counted TimedOut: the client gave up), and returns the partial
// row with ctx's error.
func Run(ctx context.Context, f *scenario.File, opts Options) (*report.Row, error) {
	p, err := newPlan(f, opts)
	if err != nil {
		return nil, err
	}
	notes := opts.Notes
	if notes == nil {
		notes = opts.Progress
	}
	note := func(format string, args ...any) {
		if notes != nil {
			fmt.Fprintf(notes, "note: "+format+"\n", args...)
		}
	}
	var extraBefore extraScrape
	if opts.Metrics != "" {
		if extraBefore, err = scrapeExtra(ctx, opts.Metrics); err != nil {
			return nil, &ConfigError{fmt.Errorf("--metrics: %w; give the gateway's admin /metrics URL, e.g. http://127.0.0.1:9090/metrics", err)}
		}
	}
	if err := checkTimeScale(ctx, f, opts, p.timeScale, extraBefore.timeScale, note); err != nil {
		return nil, err
	}
	t := newTally(p)
	c := newClient(t)
	defer c.close()
	reqCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	r := &runner{plan: p, client: c, tally: t, ctx: reqCtx}
	if p.retry.Strategy == workload.Governed {
		for range p.streams {
			r.govs = append(r.govs, &governor{g: workload.NewGovernor()})
		}
	}

	start := time.Now()
	t.clock.start = start
	stopProgress := startProgress(opts.Progress, t, start, p.target)
	// The queues are sampled while requests are issued, as the
	// simulator samples them up to the scenario's duration.
	stopQueue := startQueuePoll(ctx, opts.QueuePoll, opts.Metrics, p.upstreamStats, t)
	span, capped := r.issueAll(ctx, start)
	stopQueue()
	r.drain(cancel)
	stopProgress()

	if capped {
		note("stopped issuing at %d requests (--max-requests) after %v", p.maxRequests, span.Round(time.Millisecond))
	}
	if r.lag > lagWarning {
		note("arrivals fell up to %v behind schedule; the load generator could not keep up", r.lag.Round(time.Millisecond))
	}
	row := t.result(p.name, span)
	row.Lag = r.lag
	if opts.Metrics != "" {
		after, err := scrapeExtra(context.WithoutCancel(ctx), opts.Metrics)
		if err == nil {
			row.Extra, err = extraSince(extraBefore, after)
		}
		if err != nil {
			note("extra calls unknown (reported as 0): %v", err)
		}
	}
	return row, ctx.Err()
}

// issueAll issues every stream's requests, each stream from its own
// goroutine, and returns the longest issuing span and whether the
// request cap cut any short.
func (r *runner) issueAll(ctx context.Context, start time.Time) (span time.Duration, capped bool) {
	if len(r.plan.streams) == 1 {
		return r.issue(ctx, start, r.plan.streams[0])
	}
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for _, sp := range r.plan.streams {
		wg.Go(func() {
			s, c := r.issue(ctx, start, sp)
			mu.Lock()
			span, capped = max(span, s), capped || c
			mu.Unlock()
		})
	}
	wg.Wait()
	return span, capped
}

// issue starts a stream's requests at their arrival times until the
// duration, the request cap or ctx ends. It returns the issuing span and
// whether the cap cut it short. Arrivals never wait for answers: each
// request is its own goroutine.
func (r *runner) issue(ctx context.Context, start time.Time, sp *streamPlan) (span time.Duration, capped bool) {
	p := r.plan
	arr := p.arrivals(sp)
	// Priorities and prompts draw from their own source so that Poisson
	// gaps stay the same whatever the priority mix.
	pick := p.picker(sp)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	wait := func(at time.Duration) bool {
		d := time.Until(start.Add(at))
		if d <= 0 {
			return ctx.Err() == nil
		}
		timer.Reset(d)
		select {
		case <-timer.C:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for n := 0; ; n++ {
		if r.issued.Add(1) > int64(p.maxRequests) {
			return time.Since(start), true
		}
		// Arrivals run to the duration inclusive, so even arrivals
		// number the integral of the rate.
		at, ok := arr.Next()
		if !ok {
			wait(p.duration)
			return min(time.Since(start), p.duration), false
		}
		pri := sp.priority(pick.Float64())
		body, hdr := sp.body.build(pick, pri)
		if !wait(at) {
			return time.Since(start), false
		}
		r.lagMu.Lock()
		r.lag = max(r.lag, time.Since(start.Add(at)))
		r.lagMu.Unlock()
		r.tally.sent.Add(1)
		r.wg.Go(func() { r.request(sp, n, pri, body, hdr) })
	}
}

// drain waits for the requests still out, at most the plan's drain time,
// then cancels the rest and waits for them to settle, which they do at
// once since every wait they make watches their context.
func (r *runner) drain(cancel context.CancelFunc) {
	done := make(chan struct{})
	go func() {
		r.wg.Wait()
		close(done)
	}()
	t := time.NewTimer(r.plan.drain)
	defer t.Stop()
	select {
	case <-done:
		return
	case <-t.C:
	case <-r.ctx.Done():
	}
	cancel()
	<-done
}
