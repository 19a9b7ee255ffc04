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
	f := idleFilter{stall: lifecycle.StallConfig{Factor: 20, Floor: 5 * time.Second, Ceiling: 15 * time.Second, MinGaps: 4}}
	f.read([]byte("data: {}\n\n")) // the head, before any wait
	if f.gaps.N != 0 {
		t.Fatalf("the head counted as gap %d (mean %v)", f.gaps.N, f.gaps.Mean)
	}
	for range 8 {
		f.read([]byte("data: {}\n\n"))
	}
	if f.gaps.Mean > time.Second {
		t.Fatalf("mean gap %v for reads microseconds apart", f.gaps.Mean)
	}
	if d := lifecycle.StallDeadline(f.stall, f.gaps); d != 5*time.Second {
		t.Errorf("stall deadline %v for a fast stream, want the 5s floor", d)
	}
}
