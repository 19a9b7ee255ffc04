package loadgen

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/sluice-gw/sluice/internal/wait"
	"github.com/sluice-gw/sluice/report"
	"github.com/sluice-gw/sluice/workload"
)

// request is one user's request from its first attempt to its verdict.
// Patience runs from the first attempt: that is when the user started
// waiting, and retries spend the same patience.
func (r *runner) request(sp *streamPlan, idx, pri int, body []byte, hdr http.Header) {
	p := r.plan
	t0 := time.Now()
	ctx := r.ctx
	if p.abandon && p.patience > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, t0.Add(p.patience))
		defer cancel()
	}
	var (
		a   attempt
		rng *rand.Rand
	)
	for n := 1; ; n++ {
		h := hdr
		if p.sendDeadline {
			// The patience left, as the official SDKs send their timeout
			// (X-Stainless-Timeout), to the millisecond.
			h = hdr.Clone()
			left := max(time.Until(t0.Add(p.patience)), time.Millisecond)
			h.Set("X-Sluice-Timeout", strconv.FormatInt(left.Milliseconds(), 10)+"ms")
		}
		a = r.client.do(ctx, sp.url(), body, h)
		r.tally.attempt(pri, &a)
		if a.outcome == report.OK || a.abandoned {
			break // answered, or the client itself gave up
		}
		if rng == nil {
			// Per request, so the draws do not depend on how the
			// goroutines interleave.
			rng = rand.New(rand.NewPCG(p.seed^uint64(idx)*0x9e3779b97f4a7c15, 0x7e7+uint64(sp.index)))
		}
		d, again := p.retry.Next(workload.Ended{
			Attempt:    n,
			Elapsed:    time.Since(t0),
			Status:     a.status,
			Started:    a.started,
			RetryAfter: a.hint,
		}, rng)
		if !again || !wait.Sleep(ctx, d) {
			break
		}
	}
	o := a.outcome
	if o == report.OK && p.patience > 0 && a.end.Sub(t0) > p.patience {
		o = report.Late
	}
	r.tally.finish(sp.index, pri, o, a.end.Sub(t0), a.first.Sub(t0), a.degraded && (o == report.OK || o == report.Late))
}
