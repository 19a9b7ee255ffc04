package loadgen

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Whether and when a client retries is workload.Retry's to decide, for
// the simulator too; reading the server's hint off the wire is the load
// generator's own.

// retryAfter reads the server's hint: Retry-After-Ms when present (the
// precise one both vendors' SDKs prefer), else Retry-After in seconds or
// as an HTTP date. A number too large for a Duration (or infinite) is
// no hint: converted, it would wrap to a negative wait.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < maxHintMillis {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 && s < maxHintSeconds {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, t.Sub(now))
	}
	return 0
}

// The largest hints read, about 31 years either way: far past any wait a
// run honours, and far below a Duration's 292 years.
const (
	maxHintMillis  = 1e12
	maxHintSeconds = 1e9
)
