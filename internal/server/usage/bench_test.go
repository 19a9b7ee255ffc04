package usage

import (
	"testing"
	"time"
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
