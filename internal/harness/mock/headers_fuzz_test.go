package mock

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzPlanHeaders: a test's X-Mock-* overrides are refused with an
// error naming the header, or give a plan the mock can play: a latency
// and a retry-after that are never negative (a number of milliseconds
// read exactly, never wrapped), a token count that is not negative, and
// a failure that passes the same check as a configured one.
func FuzzPlanHeaders(f *testing.F) {
	f.Add("250ms", "12", "429", "2s")
	f.Add("1500", "0", "truncate:3", "")
	f.Add("", "", "reset", "100")
	f.Add("-1", "-5", "418", "-1s")
	f.Add("9223372036854775807", "", "500", "9223372036854775807")
	f.Add("2562047h47m16.854775807s", "99999999999999999999", "hang:x", "1e3")
	f.Add("", "", "  MALFORMED ", "")
	f.Fuzz(func(t *testing.T, latency, tokens, fail, retryAfter string) {
		h := http.Header{}
		for name, v := range map[string]string{HeaderLatency: latency, HeaderOutputTokens: tokens, HeaderFail: fail, HeaderRetryAfter: retryAfter} {
			if v != "" && !strings.ContainsAny(v, "\r\n\x00") {
				h.Set(name, v)
			}
		}
		p := &plan{}
		if err := p.applyHeaders(h); err != nil {
			if !strings.HasPrefix(err.Error(), "X-Mock-") {
				t.Fatalf("error %q names no header", err)
			}
			return
		}
		if p.ttft < 0 || p.tokens < 0 {
			t.Fatalf("latency %q, tokens %q: plan with TTFT %v and %d tokens", latency, tokens, p.ttft, p.tokens)
		}
		if p.fail != nil && (p.fail.Validate() != nil || p.fail.RetryAfter < 0) {
			t.Fatalf("fail %q, retry-after %q: a failure no config could hold: %+v", fail, retryAfter, p.fail)
		}
		if ms, err := strconv.Atoi(h.Get(HeaderLatency)); err == nil && p.ttft != time.Duration(ms)*time.Millisecond {
			t.Fatalf("latency %q ms read as %v", latency, p.ttft)
		}
	})
}
