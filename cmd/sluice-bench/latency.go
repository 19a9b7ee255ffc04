package main

import (
	"context"
	"net/http"
	"time"
)

// latencyRow is phase 2 for one target: open loop at a fixed rate against
// an upstream with a fixed small latency.
type latencyRow struct {
	Kind      kind
	Sent, OK  int
	Bad, Errs int
	Lat       dist
	Lag       time.Duration // worst lateness of the arrival schedule
	// InProxy is Sluice's own time per successful request: the duration
	// in its request log minus the upstream call's.
	InProxy    dist
	OtherCores float64 // CPU used by processes outside the run
	Note       string
}

// overloadRow is phase 3 for one target: open loop at several times the
// capacity a small concurrency limit allows. The direct row is the floor:
// a mock that rejects every call itself.
type overloadRow struct {
	Kind         kind
	Sent, OK     int
	Rejected     int // 503 answers
	Bad, Errs    int // anything else
	Reject       dist
	ServerReject dist // Sluice's own time per 503, from its request log
	OKLat        dist
	PeakUpstream int64
	Lag          time.Duration
	OtherCores   float64
	Note         string
}

func runLatency(ctx context.Context, e *env, o *options, kinds []kind) []latencyRow {
	e.logf("open loop: %.0f req/s, upstream latency %s, %s per target in %d interleaved rounds", o.rate, o.latency, o.duration, o.rounds)
	f := e.startFleet(ctx, kinds, same(mockProfile{ttft: o.latency, tokens: 1}), limits{})
	defer f.stop()
	rows := make([]latencyRow, len(kinds))
	for i := range rows {
		rows[i] = latencyRow{Kind: kinds[i], Note: f.notes[i]}
	}
	tallies := newTallies(len(kinds))
	clients, closeAll := f.warmClients(ctx, 256, func(c *client) { openLoop(ctx, c, o.rate, o.warmup, 10*time.Second, o.poisson, 7) })
	defer closeAll()
	inProxy := make([][]time.Duration, len(kinds))
	use := make([]cpuUse, len(kinds))
	elapsed := make([]time.Duration, len(kinds))
	slice := sliceOf(o.duration, o.rounds)
	for round := range o.rounds {
		for i, t := range f.targets {
			if t == nil || ctx.Err() != nil {
				continue
			}
			span, a, start := markLog(t), takeCPU(t), time.Now()
			res, sent, lag := openLoop(ctx, clients[i], o.rate, slice, 10*time.Second, o.poisson, uint64(42+round))
			elapsed[i] += time.Since(start)
			use[i].add(t, a, takeCPU(t))
			lines, err := span.lines()
			if err != nil {
				rows[i].Note = joinNotes(rows[i].Note, "reading the request log: "+err.Error())
			}
			for _, l := range lines {
				if l.Status == http.StatusOK {
					inProxy[i] = append(inProxy[i], l.Duration-l.Upstream)
				}
			}
			settle(ctx, t, 30*time.Second)
			tallies[i].merge(res)
			rows[i].Sent += sent
			rows[i].Lag = max(rows[i].Lag, lag)
			d := summarize(res.byStatus[http.StatusOK])
			e.logf("  round %d %-8s p50 %s p99 %s", round+1, kinds[i], ms(d.P50), ms(d.P99))
		}
	}
	for i, t := range f.targets {
		if t == nil {
			continue
		}
		row, res := &rows[i], tallies[i]
		row.OK = len(res.byStatus[http.StatusOK])
		row.Bad, row.Errs = res.others(http.StatusOK), res.errs
		row.Lat = summarize(res.byStatus[http.StatusOK])
		row.InProxy = summarize(inProxy[i])
		if elapsed[i] > 0 {
			row.OtherCores = use[i].other.Seconds() / elapsed[i].Seconds()
		}
		if res.errs > 0 {
			row.Note = joinNotes(row.Note, "first error: "+res.firstErr)
		}
		e.logf("  %-8s p50 %s p90 %s p99 %s max %s (%d/%d ok)", row.Kind, ms(row.Lat.P50), ms(row.Lat.P90), ms(row.Lat.P99), ms(row.Lat.Max), row.OK, row.Sent)
	}
	return rows
}

func runOverload(ctx context.Context, e *env, o *options, kinds []kind) []overloadRow {
	capacity := float64(o.overloadLimit) / o.overloadLatency.Seconds()
	e.logf("overload: limit %d x %s upstream = %.0f req/s capacity, %.0f req/s offered, %s per target in %d interleaved rounds",
		o.overloadLimit, o.overloadLatency, capacity, o.overloadRate, o.duration, o.rounds)
	lim := limits{maxInFlight: o.overloadLimit, queueDepth: o.overloadQueue, queueTimeout: o.haproxyQueueTimeout}
	// direct is the floor: the mock itself answers every call with 503 at
	// once, so its latency is what the client and the machine add to any
	// rejection.
	f := e.startFleet(ctx, kinds, func(k kind) mockProfile {
		if k == direct {
			return mockProfile{tokens: 1, failStatus: http.StatusServiceUnavailable}
		}
		return mockProfile{ttft: o.overloadLatency, tokens: 1}
	}, lim)
	defer f.stop()
	rows := make([]overloadRow, len(kinds))
	for i := range rows {
		rows[i] = overloadRow{Kind: kinds[i], Note: f.notes[i]}
	}
	tallies := newTallies(len(kinds))
	serverSide := make([][]time.Duration, len(kinds))
	use := make([]cpuUse, len(kinds))
	elapsed := make([]time.Duration, len(kinds))
	clients, closeAll := f.warmClients(ctx, 256, func(c *client) { openLoop(ctx, c, o.overloadRate, o.warmup, 10*time.Second, o.poisson, 7) })
	defer closeAll()
	slice := sliceOf(o.duration, o.rounds)
	for round := range o.rounds {
		for i, t := range f.targets {
			if t == nil || ctx.Err() != nil {
				continue
			}
			t.mock.waitInFlight(ctx, 0, 5*time.Second)
			t.mock.reset(ctx)
			span, a, start := markLog(t), takeCPU(t), time.Now()
			res, sent, lag := openLoop(ctx, clients[i], o.overloadRate, slice, 10*time.Second, o.poisson, uint64(42+round))
			elapsed[i] += time.Since(start)
			use[i].add(t, a, takeCPU(t))
			lines, err := span.lines()
			if err != nil {
				rows[i].Note = joinNotes(rows[i].Note, "reading the request log: "+err.Error())
			}
			for _, l := range lines {
				if l.Status == http.StatusServiceUnavailable {
					serverSide[i] = append(serverSide[i], l.Duration)
				}
			}
			if st, err := t.mock.stats(ctx); err == nil && t.kind != direct {
				rows[i].PeakUpstream = max(rows[i].PeakUpstream, st.PeakInFlight)
			}
			settle(ctx, t, 30*time.Second)
			tallies[i].merge(res)
			rows[i].Sent += sent
			rows[i].Lag = max(rows[i].Lag, lag)
			d := summarize(res.byStatus[http.StatusServiceUnavailable])
			e.logf("  round %d %-8s %d/%d rejected, 503 p50 %s p99 %s", round+1, kinds[i], d.N, sent, ms(d.P50), ms(d.P99))
		}
	}
	for i, t := range f.targets {
		if t == nil {
			continue
		}
		row, res := &rows[i], tallies[i]
		row.OK = len(res.byStatus[http.StatusOK])
		row.Rejected = len(res.byStatus[http.StatusServiceUnavailable])
		row.Bad, row.Errs = res.others(http.StatusOK, http.StatusServiceUnavailable), res.errs
		row.Reject = summarize(res.byStatus[http.StatusServiceUnavailable])
		row.ServerReject = summarize(serverSide[i])
		if elapsed[i] > 0 {
			row.OtherCores = use[i].other.Seconds() / elapsed[i].Seconds()
		}
		row.OKLat = summarize(res.byStatus[http.StatusOK])
		if res.errs > 0 {
			row.Note = joinNotes(row.Note, "first error: "+res.firstErr)
		}
		e.logf("  %-8s %d/%d rejected, 503 p50 %s p99 %s max %s, upstream peak %d", row.Kind, row.Rejected, row.Sent,
			ms(row.Reject.P50), ms(row.Reject.P99), ms(row.Reject.Max), row.PeakUpstream)
	}
	return rows
}
