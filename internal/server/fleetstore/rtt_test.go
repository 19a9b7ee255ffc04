package fleetstore

import (
	"context"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/core/quota"
	"github.com/sluice-gw/sluice/internal/server/redistest"
)

// TestMeasureRoundTrips measures one budget call's round trip to the
// test Redis (the take script, as a decision without credit makes it)
// from several goroutines at once, for choosing fleet.timeout's default
// (docs/FLEET.md, "Choosing fleet.timeout"). It runs only with
// SLUICE_MEASURE_RTT=1, and prints its quantiles:
//
//	SLUICE_MEASURE_RTT=1 go test ./internal/server/fleetstore -run MeasureRoundTrips -v
func TestMeasureRoundTrips(t *testing.T) {
	if os.Getenv("SLUICE_MEASURE_RTT") == "" {
		t.Skip("a measurement, not a check: set SLUICE_MEASURE_RTT=1")
	}
	c := redistest.Conn(t)
	prefix := redistest.Prefix(t, c)
	b := NewBudgets(c, BudgetOptions{Prefix: prefix, Timeout: 5 * time.Second, NoFallback: true})
	defer b.Close()
	l := quota.Limits{quota.Requests: {PerMinute: 1 << 30}}
	for _, workers := range []int{1, 8, 32} {
		const per = 2000
		lat := make([]time.Duration, 0, workers*per)
		var mu sync.Mutex
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				mine := make([]time.Duration, 0, per)
				for range per {
					start := time.Now()
					if _, _, err := b.Take(context.Background(), "rtt", l, quota.Cost{Requests: 1}); err != nil {
						t.Errorf("worker %d: %v", w, err)
						return
					}
					mine = append(mine, time.Since(start))
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			}()
		}
		wg.Wait()
		slices.Sort(lat)
		q := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
		over := func(d time.Duration) float64 {
			i, _ := slices.BinarySearch(lat, d)
			return 100 * float64(len(lat)-i) / float64(len(lat))
		}
		t.Logf("%2d at once, %d calls: p50 %v p99 %v p99.9 %v max %v; over 5 ms %.2f%%, over 20 ms %.2f%%, over 50 ms %.3f%%",
			workers, len(lat), q(0.5).Round(time.Microsecond), q(0.99).Round(time.Microsecond), q(0.999).Round(time.Microsecond),
			lat[len(lat)-1].Round(time.Microsecond), over(5*time.Millisecond), over(20*time.Millisecond), over(50*time.Millisecond))
	}
}
