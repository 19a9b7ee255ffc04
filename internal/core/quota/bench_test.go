package quota

import (
	"testing"
	"time"
)

// BenchmarkTakeSettle is one request's life: Take its reservation at
// admission, Settle what it used afterwards, in all three dimensions,
// with time moving on between requests so that most pass.
func BenchmarkTakeSettle(b *testing.B) {
	q := mustNew(b, Limits{
		Requests:     {PerMinute: 6_000},
		InputTokens:  {PerMinute: 2_000_000},
		OutputTokens: {PerMinute: 400_003},
	})
	reserved := Cost{Requests: 1, InputTokens: 1_200, OutputTokens: 4_000}
	used := Cost{Requests: 1, InputTokens: 1_200, OutputTokens: 377}
	now := t0
	passed := 0
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(7 * time.Millisecond)
		if q.Take(now, reserved).OK {
			passed++
			q.Settle(now, reserved, used)
		}
	}
	if passed == 0 {
		b.Fatal("nothing passed")
	}
}

// BenchmarkStatus reads all three dimensions, as for response headers.
func BenchmarkStatus(b *testing.B) {
	q := mustNew(b, Limits{
		Requests:     {PerMinute: 6_000},
		InputTokens:  {PerMinute: 2_000_000},
		OutputTokens: {PerMinute: 400_003},
	})
	q.Take(t0, Cost{Requests: 1, InputTokens: 1_200, OutputTokens: 4_000})
	now := t0
	var sink int64
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Nanosecond)
		sink += q.Status(now)[OutputTokens].Remaining
	}
	_ = sink
}
