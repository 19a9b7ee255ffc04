package mock

import (
	"context"
	"math"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/sluice-gw/sluice/internal/wait"
)

// injectEarly delivers a failure that replaces the whole response.
// precise: send retry-after-ms whatever the status (setRetryAfter).
func injectEarly(ctx context.Context, w http.ResponseWriter, proto protocol, p *plan, c *call, precise bool) outcome {
	f := p.fail
	if !wait.Sleep(ctx, f.Delay) {
		return outInjectedCancelled
	}
	switch f.Kind {
	case FailHang:
		<-ctx.Done()
		return outInjectedCancelled
	case FailReset:
		abort(w, true)
		return outInjected
	case FailContextLength:
		writeJSON(w, http.StatusBadRequest, scriptedContextError(proto, p, c))
		return outInjected
	case FailContentFilter:
		writeJSON(w, http.StatusBadRequest, proto.contentFilterError())
		return outInjected
	}
	status := f.StatusCode()
	setRetryAfter(w.Header(), status, f.RetryAfter, precise)
	writeJSON(w, status, proto.errorJSON(status, failMessage(status)))
	return outInjected
}

// setRetryAfter uses whole seconds, rounded up, because that is all the
// standard header can say; retry-after-ms carries the precise value the
// way OpenAI's API does on 429s. A time-scaled mock (precise) sends it on
// every status: its script's 2s is 500ms at 0.25, which whole seconds
// would stretch to 1s, twice the scenario's wait.
func setRetryAfter(h http.Header, status int, d time.Duration, precise bool) {
	if d <= 0 {
		return
	}
	h.Set("retry-after", strconv.Itoa(int(math.Ceil(d.Seconds()))))
	if status == http.StatusTooManyRequests || precise {
		h.Set("retry-after-ms", strconv.FormatInt(d.Milliseconds(), 10))
	}
}

func failMessage(status int) string {
	switch status {
	case http.StatusTooManyRequests:
		return "Rate limit reached for requests (injected by sluice mock)"
	case http.StatusServiceUnavailable, 529:
		return "Overloaded (injected by sluice mock)"
	case http.StatusGatewayTimeout:
		return "Upstream timed out (injected by sluice mock)"
	}
	if status >= 500 {
		return "The server had an error while processing your request (injected by sluice mock)"
	}
	return http.StatusText(status) + " (injected by sluice mock)"
}

// abort drops the connection without finishing the response. With rst the
// peer sees a TCP reset (linger 0) rather than an orderly close, which is
// what a crashed upstream or a load balancer killing the flow looks like.
// Callers flush what the peer should see first: Hijack discards anything
// still buffered, and flushing here would send headers for an early reset.
func abort(w http.ResponseWriter, rst bool) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// HTTP/2 or a recorder: net/http aborts the stream for us.
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok && rst {
		tc.SetLinger(0)
	}
	conn.Close()
}

// openAIErrorType follows the types OpenAI's API returns per status.
func openAIErrorType(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return "authentication_error"
	case status == http.StatusForbidden:
		return "permission_error"
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

// anthropicErrorType follows Anthropic's documented error types. 503 is
// not among them; overloaded_error is what its clients treat alike.
func anthropicErrorType(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusServiceUnavailable, 529:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}
