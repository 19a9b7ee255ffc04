package sim

import (
	"strings"
	"testing"
	"time"
)

// TestOriginIsFixedAndMonotonic: virtual time zero is the fixed wall
// instant whatever the real clock says, and carries a monotonic reading
// (the cheap path for the engine's arithmetic) that instants made from
// it keep, so their differences are exactly the durations that made them.
func TestOriginIsFixedAndMonotonic(t *testing.T) {
	want := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if !origin.Equal(want) || origin.UnixNano() != want.UnixNano() {
		t.Fatalf("origin is %v, want %v", origin.UTC(), want)
	}
	a, b := origin.Add(1500*time.Millisecond), origin.Add(time.Hour+3*time.Nanosecond)
	for _, x := range []time.Time{origin, a, b} {
		if !strings.Contains(x.String(), " m=") {
			t.Fatalf("%v has no monotonic reading", x)
		}
	}
	if d := b.Sub(a); d != time.Hour+3*time.Nanosecond-1500*time.Millisecond {
		t.Fatalf("b - a = %v", d)
	}
}
