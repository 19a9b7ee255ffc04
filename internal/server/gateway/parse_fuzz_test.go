package gateway

import (
	"crypto/sha256"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/core/admission"
)

// The request and response headers the gateway parses itself, each
// with the property its callers rely on.

// headerValue reports whether v could arrive as a header value: net/http
// refuses control bytes and trims the value's ends.
func headerValue(v string) bool {
	return !strings.ContainsAny(v, "\r\n\x00") && strings.TrimSpace(v) == v
}

// FuzzProviderRetryAfter: a provider's retry-after-ms or Retry-After is
// never read as a negative pause (which the lifecycle would take as
// none) nor past the bound that keeps the conversion from wrapping, and
// a sane number is read as said. Dates are not read at all.
func FuzzProviderRetryAfter(f *testing.F) {
	f.Add("", "")
	f.Add("1500", "2")
	f.Add("", "0.25")
	f.Add("0", "-1")
	f.Add("NaN", "Inf")
	f.Add("1e300", "1e300")
	f.Add("", "Wed, 21 Oct 2015 07:28:00 GMT")
	f.Fuzz(func(t *testing.T, ms, ra string) {
		if !headerValue(ms) || !headerValue(ra) {
			return
		}
		h := http.Header{}
		if ms != "" {
			h.Set("Retry-After-Ms", ms)
		}
		if ra != "" {
			h.Set("Retry-After", ra)
		}
		d := retryAfter(h)
		if d < 0 || d > 1e9*time.Second {
			t.Fatalf("retry-after-ms %q, Retry-After %q: %v", ms, ra, d)
		}
		if x, err := strconv.ParseFloat(ms, 64); err == nil && x > 0 && x < 1e12 {
			near(t, d, x*float64(time.Millisecond), ms)
		} else if x, err := strconv.ParseFloat(ra, 64); err == nil && x > 0 && x < 1e9 {
			near(t, d, x*float64(time.Second), ra)
		} else if d != 0 {
			t.Fatalf("no usable hint in %q, %q, yet %v", ms, ra, d)
		}
	})
}

// near fails unless d is want nanoseconds, give or take the float
// conversion's rounding.
func near(t *testing.T, d time.Duration, want float64, said string) {
	t.Helper()
	if math.Abs(float64(d)-want) > 1+want*1e-12 {
		t.Fatalf("%q read as %v, want %v", said, d, time.Duration(want))
	}
}

// FuzzClientDeadline: a client's X-Sluice-Timeout (or else
// X-Stainless-Timeout) is a positive duration or an error naming the
// header that was read; seconds are bounded before they are converted,
// so no number becomes a negative or wrapped deadline.
func FuzzClientDeadline(f *testing.F) {
	f.Add("", "")
	f.Add("2.5s", "")
	f.Add("", "600")
	f.Add("800ms", "30")
	f.Add("0", "1")
	f.Add("-1s", "")
	f.Add("1e300", "")
	f.Add("", "NaN")
	f.Add("", "86400.0000001")
	f.Add("2562047h47m16.854775807s", "")
	f.Fuzz(func(t *testing.T, sluice, stainless string) {
		if !headerValue(sluice) || !headerValue(stainless) {
			return
		}
		h := http.Header{}
		if sluice != "" {
			h.Set("X-Sluice-Timeout", sluice)
		}
		if stainless != "" {
			h.Set("X-Stainless-Timeout", stainless)
		}
		d, err := clientDeadline(h)
		read, v := "X-Sluice-Timeout", sluice
		if sluice == "" {
			read, v = "X-Stainless-Timeout", stainless
		}
		switch {
		case v == "":
			if d != 0 || err != nil {
				t.Fatalf("no header: %v, %v", d, err)
			}
		case err != nil:
			if d != 0 || !strings.HasPrefix(err.Error(), read+": ") {
				t.Fatalf("%s %q: %v with error %q, which must name the header", read, v, d, err)
			}
		case d <= 0:
			t.Fatalf("%s %q: accepted as %v", read, v, d)
		}
		if want, perr := time.ParseDuration(v); perr == nil && want > 0 && d != want {
			t.Fatalf("%s %q: %v, want %v", read, v, d, want)
		}
		if secs, perr := strconv.ParseFloat(v, 64); perr == nil && secs*float64(time.Second) >= 1 && secs <= maxClientTimeout.Seconds() {
			if err != nil {
				t.Fatalf("%s %q: refused a sane number of seconds: %v", read, v, err)
			}
			near(t, d, secs*float64(time.Second), v)
		}
	})
}

// FuzzClassify: whatever a client sends as X-Sluice-Priority and as its
// credential, only a declared critical key is served as critical, a
// header can lower a request's class but never raise it, and a header
// that names no class is refused.
func FuzzClassify(f *testing.F) {
	const declared = "sk-critical-team"
	f.Add("", "Bearer "+declared, false)
	f.Add("critical", "Bearer "+declared, true)
	f.Add("CRITICAL", "bearer  "+declared+" ", false)
	f.Add("critical", "Bearer someone-else", false)
	f.Add("background", "Bearer "+declared, false)
	f.Add("interactive", "", true)
	f.Add("urgent", "Basic abc", false)
	f.Fuzz(func(t *testing.T, pri, auth string, defaultCritical bool) {
		if !headerValue(pri) || !headerValue(auth) {
			return
		}
		g := &Gateway{keys: &keyring{critical: map[[sha256.Size]byte]struct{}{sha256.Sum256([]byte(declared)): {}}}}
		x := &exchange{who: who{priority: admission.Interactive}}
		if defaultCritical {
			x.priority = admission.Critical
		}
		r, _ := http.NewRequest(http.MethodPost, "http://gw/v1/chat/completions", nil)
		if pri != "" {
			r.Header.Set("X-Sluice-Priority", pri)
		}
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		err := g.classify(r, x)
		asked, named := admission.ParsePriority(strings.ToLower(pri))
		switch {
		case pri != "" && !named:
			if err == nil {
				t.Fatalf("X-Sluice-Priority %q is no class, yet accepted as %v", pri, x.priority)
			}
			return
		case err != nil:
			t.Fatalf("X-Sluice-Priority %q, Authorization %q: %v", pri, auth, err)
		}
		isDeclared := clientKey(r) == declared
		if x.priority == admission.Critical && !isDeclared {
			t.Fatalf("Authorization %q, X-Sluice-Priority %q: served as critical without a declared key", auth, pri)
		}
		if pri != "" && x.priority < asked {
			t.Fatalf("X-Sluice-Priority %q raised to %v", pri, x.priority)
		}
		if pri == "" && isDeclared && x.priority != admission.Critical {
			t.Fatalf("a declared key without a header served as %v", x.priority)
		}
	})
}
