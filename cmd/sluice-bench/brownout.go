package main

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// brownoutRow is phase 5 for one target: clients abandon calls to a
// browned-out upstream; does the abandonment reach the upstream?
type brownoutRow struct {
	Kind      kind
	Clients   int
	Abandoned int   // client timed out, as intended
	Answered  int   // got some answer before its timeout
	Reached   int64 // calls the upstream saw
	InFlight  int64 // upstream calls still running after the settle time
	Cancelled int64 // upstream calls that saw their client go away
	Note      string
}

// propagates is the verdict: every call reached the upstream and none is
// still running there.
func (r brownoutRow) propagates() bool {
	return r.Reached > 0 && r.InFlight == 0 && r.Cancelled == r.Reached
}

func runBrownout(ctx context.Context, e *env, o *options, kinds []kind) []brownoutRow {
	prof := mockProfile{ttft: o.brownoutLatency, tokens: 1}
	noted := func(k kind, note string) brownoutRow {
		return brownoutRow{Kind: k, Clients: o.brownoutClients, Note: note}
	}
	return eachTarget(ctx, e, kinds, prof, noted, func(k kind, t *target) brownoutRow {
		row := noted(k, "")
		e.logf("brownout: %s, %d clients giving up after %s on a %s upstream", k, o.brownoutClients, o.brownoutTimeout, o.brownoutLatency)
		t.mock.reset(ctx)
		c := newClient(t, chatBody(false, 0), o.brownoutClients)
		var abandoned, answered atomic.Int64
		var wg sync.WaitGroup
		for range o.brownoutClients {
			wg.Go(func() {
				rctx, cancel := context.WithTimeout(ctx, o.brownoutTimeout)
				defer cancel()
				r := c.do(rctx)
				if r.err != nil && errors.Is(rctx.Err(), context.DeadlineExceeded) {
					abandoned.Add(1)
				} else {
					answered.Add(1)
				}
			})
		}
		wg.Wait()
		c.close()
		time.Sleep(o.brownoutSettle)
		st, err := t.mock.stats(ctx)
		t.stop()

		row.Abandoned, row.Answered = int(abandoned.Load()), int(answered.Load())
		if err != nil {
			row.Note = "mock stats: " + err.Error()
		} else {
			row.Reached, row.InFlight, row.Cancelled = st.Total, st.InFlight, st.CancelledByClient
		}
		e.logf("  upstream saw %d; %s later in_flight %d, cancelled_by_client %d", row.Reached, o.brownoutSettle, row.InFlight, row.Cancelled)
		return row
	})
}
