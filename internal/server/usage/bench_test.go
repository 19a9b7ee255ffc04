package usage

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/server/redistest"
)

// BenchmarkAdd is what recording costs a request: a map update under a
// short lock.
func BenchmarkAdd(b *testing.B) {
	r := NewRecorder(Options{})
	rows := []Row{{"search", "core", "chat", "gpt-4o"}, {"batch", "data", "chat", "gpt-4o-mini"}, {"ops", "ops", "claude", "claude-sonnet-4-5"}}
	now := time.Now()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			r.Add(now, rows[i%len(rows)], Counts{Requests: 1, Input: 100, Output: 20, Cost: 450})
			i++
		}
	})
}

// BenchmarkRedisFlush is what a flush costs the background, off the
// request path: a batch of rows added to the ledger and their totals
// written to Redis (rows: distinct rows in the batch); idle is a flush
// with nothing new (the epoch checked, one round trip).
func BenchmarkRedisFlush(b *testing.B) {
	for _, rows := range []int{0, 10, 500} {
		name := "idle"
		if rows > 0 {
			name = fmt.Sprintf("rows=%d", rows)
		}
		b.Run(name, func(b *testing.B) {
			c, prefix := redistest.Client(b)
			s := NewRedisStore(c, prefix, 400)
			day := Day(time.Now())
			batch := make([]Record, rows)
			for i := range batch {
				batch[i] = Record{Day: day, Row: Row{Key: fmt.Sprintf("key-%04d", i), Team: "t", Model: "m", Upstream: "u"}, Counts: Counts{Requests: 1, Input: 100, Output: 20, Cost: 450, Calls: 1}}
			}
			ctx := context.Background()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				var err error
				if rows == 0 {
					err = s.Sync(ctx)
				} else {
					err = s.Add(ctx, strconv.Itoa(i), batch)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
