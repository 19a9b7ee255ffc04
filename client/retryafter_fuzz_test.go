package client

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzRetryAfter: whatever a server sends as retry-after-ms and
// Retry-After, the wait read from them (by this client and by sluice
// load, which reads hints with RetryAfter too) is never negative; a sane hint (a
// number under the parser's bound, or a date) is honoured to the
// nanosecond's rounding, and with no usable hint the wait is zero and
// not ok, so the caller falls back to its own backoff.
func FuzzRetryAfter(f *testing.F) {
	f.Add("", "", int64(0))
	f.Add("1500", "2", int64(1_700_000_000))
	f.Add("", "0.25", int64(0))
	f.Add("-1", "3", int64(0))
	f.Add("NaN", "Inf", int64(0))
	f.Add("1e300", "1e300", int64(0))
	f.Add("", "Wed, 21 Oct 2015 07:28:00 GMT", int64(1_445_412_470))
	f.Add("", "Fri, 31 Dec 9999 23:59:59 GMT", int64(0))
	f.Fuzz(func(t *testing.T, ms, ra string, nowUnix int64) {
		if !validHeaderValue(ms) || !validHeaderValue(ra) {
			return
		}
		now := time.Unix(nowUnix%(1<<40), 0) // years within ±35,000
		h := http.Header{}
		if ms != "" {
			h.Set(HeaderRetryAfterMS, ms)
		}
		if ra != "" {
			h.Set("Retry-After", ra)
		}
		d, ok := RetryAfter(h, now)
		if d < 0 {
			t.Fatalf("retry-after-ms %q, Retry-After %q: negative wait %v", ms, ra, d)
		}
		if !ok && d != 0 {
			t.Fatalf("no usable hint, yet a wait of %v", d)
		}
		if x, sane := saneNumber(ms, 1e12); sane {
			wantNear(t, d, x*float64(time.Millisecond), ms)
			return
		}
		if x, sane := saneNumber(ra, 1e9); sane {
			wantNear(t, d, x*float64(time.Second), ra)
			return
		}
		if at, err := http.ParseTime(strings.TrimSpace(ra)); err == nil && ok {
			if want := at.Sub(now); want <= 0 && d != 0 || want > 0 && d != want {
				t.Fatalf("Retry-After %q at %v: %v, want %v", ra, now, d, max(want, 0))
			}
		}
	})
}

// validHeaderValue reports whether v could arrive as a header value:
// net/http refuses control bytes, and trims the value's ends.
func validHeaderValue(v string) bool {
	return !strings.ContainsAny(v, "\r\n\x00") && strings.TrimSpace(v) == v
}

// saneNumber reads v as a non-negative finite number below limit: a
// hint every Retry-After parser must honour as said.
func saneNumber(v string, limit float64) (float64, bool) {
	x, err := strconv.ParseFloat(v, 64)
	return x, err == nil && x >= 0 && x < limit && !math.IsNaN(x)
}

// wantNear fails unless d is want nanoseconds, give or take the float
// conversion's rounding.
func wantNear(t *testing.T, d time.Duration, want float64, said string) {
	t.Helper()
	if diff := math.Abs(float64(d) - want); diff > 1+want*1e-12 {
		t.Fatalf("%q read as %v, want %v", said, d, time.Duration(want))
	}
}
