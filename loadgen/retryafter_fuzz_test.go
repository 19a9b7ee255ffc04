package loadgen

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzRetryAfter: whatever the gateway under test sends as
// Retry-After-Ms and Retry-After, the load generator's client never
// waits a negative time (which would retry at once, and so overstate
// the gateway's retry load); a sane positive hint is honoured as said,
// and a date as the time left until it.
func FuzzRetryAfter(f *testing.F) {
	f.Add("", "", int64(0))
	f.Add("1500", "2", int64(1_700_000_000))
	f.Add("", "0.25", int64(0))
	f.Add("-1", "3", int64(0))
	f.Add("NaN", "Inf", int64(0))
	f.Add("1e300", "", int64(0))
	f.Add("", "1e300", int64(0))
	f.Add("", "Wed, 21 Oct 2015 07:28:00 GMT", int64(1_445_412_470))
	f.Fuzz(func(t *testing.T, ms, ra string, nowUnix int64) {
		if !headerValue(ms) || !headerValue(ra) {
			return
		}
		now := time.Unix(nowUnix%(1<<40), 0)
		h := http.Header{}
		if ms != "" {
			h.Set("Retry-After-Ms", ms)
		}
		if ra != "" {
			h.Set("Retry-After", ra)
		}
		d := retryAfter(h, now)
		if d < 0 {
			t.Fatalf("Retry-After-Ms %q, Retry-After %q: negative wait %v", ms, ra, d)
		}
		if x, ok := positiveBelow(ms, maxHintMillis); ok {
			near(t, d, x*float64(time.Millisecond), ms)
			return
		}
		if x, ok := positiveBelow(ra, maxHintSeconds); ok {
			near(t, d, x*float64(time.Second), ra)
			return
		}
		if at, err := http.ParseTime(ra); err == nil {
			if want := max(at.Sub(now), 0); d != want {
				t.Fatalf("Retry-After %q at %v: %v, want %v", ra, now, d, want)
			}
		}
	})
}

// headerValue reports whether v could arrive as a header value: no
// control bytes, ends trimmed.
func headerValue(v string) bool {
	return !strings.ContainsAny(v, "\r\n\x00") && strings.TrimSpace(v) == v
}

func positiveBelow(v string, limit float64) (float64, bool) {
	x, err := strconv.ParseFloat(v, 64)
	return x, err == nil && x > 0 && x < limit
}

// near fails unless d is want nanoseconds, give or take the float
// conversion's rounding.
func near(t *testing.T, d time.Duration, want float64, said string) {
	t.Helper()
	if math.Abs(float64(d)-want) > 1+want*1e-12 {
		t.Fatalf("%q read as %v, want %v", said, d, time.Duration(want))
	}
}
