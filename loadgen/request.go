package loadgen

import (
	"context"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/sluice-gw/sluice/internal/wait"
	"github.com/sluice-gw/sluice/report"
)

// request is one user's request from its first attempt to its verdict.
// Patience runs from the first attempt: that is when the user started
// waiting, and retries spend the same patience.
func (r *runner) request(idx, pri int, body []byte, hdr http.Header) {
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
		a = r.client.do(ctx, body, hdr)
		r.tally.attempt(pri, &a)
		if n >= p.retry.maxAttempts || !retryable(&a) {
			break
		}
		if rng == nil {
			// Per request, so the draws do not depend on how the
			// goroutines interleave.
			rng = rand.New(rand.NewPCG(p.seed^uint64(idx)*0x9e3779b97f4a7c15, 0x7e7))
		}
		d := p.retry.delay(n, a.hint, rng)
		if p.patience > 0 && time.Since(t0)+d >= p.patience {
			// The user would be gone before the retry went out.
			break
		}
		if !wait.Sleep(ctx, d) {
			break
		}
	}
	o := a.outcome
	if o == report.OK && p.patience > 0 && a.end.Sub(t0) > p.patience {
		o = report.Late
	}
	r.tally.finish(pri, o, a.end.Sub(t0), a.first.Sub(t0))
}
