package fleetstore

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluice-gw/sluice/internal/core/quota"
	"github.com/sluice-gw/sluice/internal/server/redistest"
)

// trips counts round trips to Redis: each command sent alone, and each
// pipeline as one.
type trips struct{ n atomic.Int64 }

func (h *trips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *trips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}

func (h *trips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmds)
	}
}

// BenchmarkAdmission is one admission decision's budget Take, shared in
// Redis (one round trip per decision, and in Allot mode), against
// quota.Budget in memory, in the same run and the same loop: each
// iteration takes a request's reservation from each, paced at one a
// millisecond, while other replicas' load (1,000 Takes a second on 4
// connections, on other budgets) runs beside it. The Allot replica also
// settles each request (untimed: the gateway settles after the
// response), so its round trips include refills, flushes and returns.
// It reports each one's p50 and p99, what Redis adds at the p99, and
// round trips per Take.
//
//	go test -run '^$' -bench Admission -benchtime 5000x ./store
func BenchmarkAdmission(b *testing.B) {
	c := redistest.Conn(b)
	prefix := redistest.Prefix(b, c)
	var h trips
	c.AddHook(&h)
	shared := NewBudgets(c, BudgetOptions{Prefix: prefix, Timeout: time.Second, NoFallback: true})
	defer shared.Close()
	l := quota.Limits{
		quota.Requests:     {PerMinute: 1_000_000},
		quota.InputTokens:  {PerMinute: 2_000_000_000},
		quota.OutputTokens: {PerMinute: 400_000_003},
	}
	cost := quota.Cost{Requests: 1, InputTokens: 1_200, OutputTokens: 4_000}
	local, err := quota.New(l)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, _, err := shared.Take(ctx, "warm", l, cost); err != nil { // loads the script
		b.Fatal(err)
	}
	allotClient := redistest.Conn(b)
	var ha trips
	allotClient.AddHook(&ha)
	allot := NewBudgets(allotClient, BudgetOptions{Prefix: prefix, Timeout: time.Second, NoFallback: true, Allot: true})
	defer allot.Close()
	used := quota.Cost{Requests: 1, InputTokens: 1_200, OutputTokens: 700}

	// The rest of the fleet's load: 1,000 Takes a second.
	loadClient := redistest.Conn(b)
	load := NewBudgets(loadClient, BudgetOptions{Prefix: prefix, Timeout: time.Second})
	defer load.Close()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(4 * time.Millisecond)
			defer t.Stop()
			name := fmt.Sprint("load-", i)
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					load.Take(ctx, name, l, cost)
				}
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()

	sharedLat := make([]time.Duration, 0, b.N)
	allotLat := make([]time.Duration, 0, b.N)
	localLat := make([]time.Duration, 0, b.N)
	// A bare PING on the same connection pool: the machine's round trip,
	// the floor under any shared decision.
	pingLat := make([]time.Duration, 0, b.N)
	h.n.Store(0)
	ha.n.Store(0)
	next := time.Now()
	for b.Loop() {
		next = next.Add(time.Millisecond)
		if d := time.Until(next); d > 0 {
			time.Sleep(d)
		}
		start := time.Now()
		v, _, err := shared.Take(ctx, "bench", l, cost)
		sharedLat = append(sharedLat, time.Since(start))
		if err != nil || !v.OK {
			b.Fatalf("shared take: %+v, %v", v, err)
		}
		start = time.Now()
		v, _, err = allot.Take(ctx, "bench-allot", l, cost)
		allotLat = append(allotLat, time.Since(start))
		if err != nil || !v.OK {
			b.Fatalf("allot take: %+v, %v", v, err)
		}
		if _, err := allot.Settle(ctx, "bench-allot", l, cost, used); err != nil {
			b.Fatal(err)
		}
		start = time.Now()
		if err := c.Ping(ctx).Err(); err != nil {
			b.Fatal(err)
		}
		pingLat = append(pingLat, time.Since(start))
		start = time.Now()
		v = local.Take(start, cost)
		localLat = append(localLat, time.Since(start))
		if !v.OK {
			b.Fatalf("local take: %+v", v)
		}
	}
	n := len(sharedLat)
	b.ReportMetric(float64(h.n.Load()-int64(n))/float64(n), "round-trips/op") // less the PINGs
	b.ReportMetric(float64(ha.n.Load())/float64(n), "allot-round-trips/op")
	slices.Sort(sharedLat)
	slices.Sort(allotLat)
	slices.Sort(localLat)
	slices.Sort(pingLat)
	pct := func(s []time.Duration, p float64) float64 {
		return float64(s[min(int(p*float64(len(s))), len(s)-1)]) / float64(time.Microsecond)
	}
	b.ReportMetric(pct(sharedLat, 0.50), "shared-p50-µs")
	b.ReportMetric(pct(sharedLat, 0.99), "shared-p99-µs")
	b.ReportMetric(pct(allotLat, 0.50), "allot-p50-µs")
	b.ReportMetric(pct(allotLat, 0.99), "allot-p99-µs")
	b.ReportMetric(pct(allotLat, 0.99)-pct(localLat, 0.99), "allot-added-p99-µs")
	b.ReportMetric(pct(localLat, 0.50), "local-p50-µs")
	b.ReportMetric(pct(localLat, 0.99), "local-p99-µs")
	b.ReportMetric(pct(sharedLat, 0.99)-pct(localLat, 0.99), "added-p99-µs")
	b.ReportMetric(pct(pingLat, 0.50), "ping-p50-µs")
	b.ReportMetric(pct(pingLat, 0.99), "ping-p99-µs")
}
