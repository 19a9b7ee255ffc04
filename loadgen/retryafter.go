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
// as an HTTP date.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, t.Sub(now))
	}
	return 0
}
