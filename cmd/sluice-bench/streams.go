package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// streamRow is phase 4 for one target: memory held per open stream.
type streamRow struct {
	Kind       kind
	Streams    int   // attempted
	Receiving  int   // got a 200 and a first chunk
	Failed     int   // no 200 or no first chunk
	EndedEarly int   // ended before the harness cancelled them
	IdleKiB    int64 // proxy RSS before
	LoadedKiB  int64 // proxy RSS with every stream open
	PerStream  float64
	OpenTime   time.Duration // until every stream was receiving
	Upstream   int64         // the mock's in_flight when RSS was sampled
	After      int64         // the mock's in_flight after cancelling
	DrainTime  time.Duration // until in_flight reached 0 (or the wait gave up)
	Note       string
}

// streamSet is n concurrent streaming requests sharing one cancel.
type streamSet struct {
	cancel     context.CancelFunc
	wg         sync.WaitGroup
	receiving  atomic.Int64
	failed     atomic.Int64
	endedEarly atomic.Int64
	errOnce    sync.Once
	firstErr   string
}

func (s *streamSet) fail(msg string) {
	s.failed.Add(1)
	s.errOnce.Do(func() { s.firstErr = msg })
}

// openStreams starts n streams, at most opening of them between dialling
// and their first chunk at any moment, so the listen backlogs are not
// flooded. Each stream reads and discards until cancelled or done.
func openStreams(ctx context.Context, c *client, n, opening int) *streamSet {
	sctx, cancel := context.WithCancel(ctx)
	s := &streamSet{cancel: cancel}
	sem := make(chan struct{}, opening)
	s.wg.Go(func() {
		for range n {
			select {
			case sem <- struct{}{}:
			case <-sctx.Done():
				return
			}
			s.wg.Go(func() { s.one(sctx, c, sem) })
		}
	})
	return s
}

func (s *streamSet) one(ctx context.Context, c *client, sem chan struct{}) {
	released := false
	release := func() {
		if !released {
			released = true
			<-sem
		}
	}
	defer release()
	resp, err := c.hc.Do(c.newRequest(ctx))
	if err != nil {
		if ctx.Err() == nil {
			s.fail(err.Error())
		}
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		s.fail(fmt.Sprintf("status %d", resp.StatusCode))
		return
	}
	buf := make([]byte, 2048)
	first := true
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 && first {
			first = false
			s.receiving.Add(1)
			release()
		}
		if err != nil {
			switch {
			case ctx.Err() != nil:
			case first:
				s.fail("no first chunk: " + err.Error())
			default:
				if err == io.EOF {
					s.endedEarly.Add(1)
				} else {
					s.fail("stream broke: " + err.Error())
				}
			}
			return
		}
	}
}

func runStreams(ctx context.Context, e *env, o *options, kinds []kind) []streamRow {
	prof := mockProfile{tpot: o.streamTPOT, tokens: o.streamTokens}
	return eachTarget(ctx, e, kinds, prof,
		func(k kind, note string) streamRow { return streamRow{Kind: k, Streams: o.streams, Note: note} },
		func(k kind, t *target) streamRow {
			defer t.stop()
			row := streamRow{Kind: k, Streams: o.streams}
			e.logf("streams: %s, %d concurrent streams of %d tokens at %s/token", k, o.streams, o.streamTokens, o.streamTPOT)
			measureStreams(ctx, e, o, t, &row)
			return row
		})
}

func measureStreams(ctx context.Context, e *env, o *options, t *target, row *streamRow) {
	time.Sleep(time.Second) // let start-up garbage settle before the idle sample
	idle, err := rssKiB(t.proc.PID)
	if err != nil {
		row.Note = err.Error()
		return
	}
	row.IdleKiB = idle
	runtimeIdle := goRuntime(ctx, t)

	c := newClient(t, chatBody(true, 0), 0)
	defer c.close()
	start := time.Now()
	set := openStreams(ctx, c, o.streams, 256)
	deadline := start.Add(o.streamOpenTimeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if int(set.receiving.Load()+set.failed.Load()) >= o.streams {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	row.OpenTime = time.Since(start)
	// All open: give buffers a moment to reach steady state, then sample.
	time.Sleep(time.Second)
	loaded, err := rssKiB(t.proc.PID)
	runtimeLoaded := goRuntime(ctx, t)
	if st, serr := t.mock.stats(ctx); serr == nil {
		row.Upstream = st.InFlight
	}
	row.Receiving = int(set.receiving.Load())
	row.Failed = int(set.failed.Load())
	row.EndedEarly = int(set.endedEarly.Load())
	open := row.Receiving - row.EndedEarly // still open when sampled
	if err == nil {
		row.LoadedKiB = loaded
		if open > 0 {
			row.PerStream = float64(loaded-idle) / float64(open)
		}
	}
	if row.EndedEarly > 0 {
		row.Note = joinNotes(row.Note, fmt.Sprintf("%d streams had already ended when sampled; KiB/stream is over the %d still open", row.EndedEarly, open))
	}
	if runtimeIdle != nil && runtimeLoaded != nil && open > 0 {
		per := func(k string) float64 { return (runtimeLoaded[k] - runtimeIdle[k]) / 1024 / float64(open) }
		// The GC's next target is twice the heap that survived the last
		// collection (GOGC 100): half of it is the live heap.
		row.Note = joinNotes(row.Note, fmt.Sprintf("Go runtime per stream (from /metrics): heap in use +%.1f KiB (live at the last GC about +%.1f KiB), goroutine stacks +%.1f KiB, %.1f goroutines",
			per("go_memstats_heap_inuse_bytes"), per("go_memstats_next_gc_bytes")/2, per("go_memstats_stack_inuse_bytes"),
			(runtimeLoaded["go_goroutines"]-runtimeIdle["go_goroutines"])/float64(open)))
	}
	e.logf("  %d/%d receiving after %s; RSS %d -> %d KiB = %.1f KiB/stream; upstream in_flight %d",
		row.Receiving, o.streams, row.OpenTime.Round(time.Millisecond), idle, loaded, row.PerStream, row.Upstream)

	set.cancel()
	st, waited, err := t.mock.waitInFlight(ctx, 0, 15*time.Second)
	if err == nil {
		row.After, row.DrainTime = st.InFlight, waited
	}
	set.wg.Wait()
	if set.firstErr != "" {
		row.Note = joinNotes(row.Note, "first error: "+set.firstErr)
	}
	if row.Receiving < o.streams {
		row.Note = joinNotes(row.Note, fmt.Sprintf("only %d of %d streams were receiving when sampled", row.Receiving, o.streams))
	}
	e.logf("  after cancel: upstream in_flight %d after %s", row.After, row.DrainTime.Round(time.Millisecond))
}

// goRuntime reads Sluice's Go runtime gauges from its /metrics (nil for
// other targets), to split its RSS into heap and stacks.
func goRuntime(ctx context.Context, t *target) map[string]float64 {
	if !t.kind.isSluice() {
		return nil
	}
	v, err := scrapeValues(ctx, t.admin+"/metrics", "go_memstats_heap_inuse_bytes", "go_memstats_stack_inuse_bytes", "go_memstats_next_gc_bytes", "go_goroutines")
	if err != nil || len(v) < 4 {
		return nil
	}
	return v
}
