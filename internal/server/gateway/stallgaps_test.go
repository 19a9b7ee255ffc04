package gateway

import (
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/core/lifecycle"
)

// The stream's head is read before the relay first waits on the
// provider; it starts the gap clock instead of counting a gap from the
// zero time, which made every mean gap hours long and every stall
// deadline the ceiling.
func TestStallGapsStartAtTheHead(t *testing.T) {
	w := streamWatch{stall: lifecycle.StallConfig{Factor: 20, Floor: 5 * time.Second, Ceiling: 15 * time.Second, MinGaps: 4}}
	now := time.Unix(1000, 0)
	w.start(now, 1, func() {}) // the head and first token
	if w.gaps.N != 0 {
		t.Fatalf("the head counted as gap %d (mean %v)", w.gaps.N, w.gaps.Mean)
	}
	for i := range 8 {
		now = now.Add(time.Millisecond)
		w.progressed(now, uint64(2+i))
	}
	if w.gaps.Mean > time.Second {
		t.Fatalf("mean gap %v for progress milliseconds apart", w.gaps.Mean)
	}
	if d := lifecycle.StallDeadline(w.stall, w.gaps); d != 5*time.Second {
		t.Errorf("stall deadline %v for a fast stream, want the 5s floor", d)
	}
}

// A keepalive comment or a ping is read, but it is not progress: it
// neither counts as a gap nor moves the time the stall deadline runs
// from, so a dead stream that pings is still cut.
func TestKeepalivesAreNotProgress(t *testing.T) {
	w := streamWatch{idle: time.Minute, stall: lifecycle.StallConfig{Factor: 20, Floor: 5 * time.Second, Ceiling: 15 * time.Second, MinGaps: 4}}
	start := time.Unix(1000, 0)
	w.start(start, 3, func() {})
	for i := 1; i <= 10; i++ {
		w.progressed(start.Add(time.Duration(i)*3*time.Second), 3) // a ping every 3 s
	}
	if w.gaps.N != 0 || !w.lastProgress.Equal(start) {
		t.Fatalf("keepalives counted: %d gaps, last progress %v", w.gaps.N, w.lastProgress.Sub(start))
	}
	w.progressed(start.Add(31*time.Second), 4)
	if w.gaps.N != 1 || w.gaps.Mean != 31*time.Second {
		t.Fatalf("progress after 31 s: %d gaps, mean %v", w.gaps.N, w.gaps.Mean)
	}
}
