package gateway

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/core/lifecycle"
)

// What made a request's second upstream call (X-Sluice-Second-Call).
const (
	secondHedge  = "hedge"
	secondRescue = "rescue"
	secondRetry  = "retry"
	// A retry on the same target: after a lone transient failure, or
	// waiting out the provider's short Retry-After (lifecycle.RetryWhy).
	secondRetrySame  = "retry_same"
	secondRetryAfter = "retry_after"
	// secondFirstToken: the first call had no first token by its
	// first-token deadline (lifecycle/firsttoken.go).
	secondFirstToken = "first_token"
)

// saidRetry names each rule that gives a retry (lifecycle.RetryWhy): a
// retry on the next target keeps the name "retry".
var saidRetry = map[lifecycle.RetryWhy]string{
	lifecycle.RetryNext: secondRetry,
	lifecycle.RetrySame: secondRetrySame,
	lifecycle.RetryWait: secondRetryAfter,
}

// responseHeaders is which X-Sluice-* headers tell a client what happened
// to its request (config.ResponseHeaders): the provider and upstream
// model that answered, the upstream calls made, the wait for admission,
// and whether the answer came from a hedge, rescue or retry. They go on
// every answer that reached a provider, errors included.
type responseHeaders struct {
	provider, model, attempts, queue, second bool
}

func newResponseHeaders(c config.ResponseHeaders) responseHeaders {
	return responseHeaders{
		provider: c.Shows("provider"),
		model:    c.Shows("model"),
		attempts: c.Shows("attempts"),
		queue:    c.Shows("queue_ms"),
		second:   c.Shows("second_call"),
	}
}

// Header values made once and shared by every answer: nothing writes
// into a header's values in place (keyScrub.headers copies first).
var (
	saidAttempts = [...][]string{{"0"}, {"1"}, {"2"}, {"3"}}
	saidNoWait   = []string{"0"}
	saidSecond   = map[string][]string{secondHedge: {secondHedge}, secondRescue: {secondRescue}, secondRetry: {secondRetry}, secondFirstToken: {secondFirstToken}, secondRetrySame: {secondRetrySame}, secondRetryAfter: {secondRetryAfter}}
)

// set writes the headers for an answer from a. The values are the
// gateway's own (config names, counts), never a client's or a provider's
// text, and headers of the same names from the provider are not passed
// on (copyResponseHeaders).
func (t responseHeaders) set(h http.Header, x *exchange, a *attempt) {
	if t.provider {
		h["X-Sluice-Provider"] = a.t.said.provider
	}
	if t.model {
		h["X-Sluice-Model"] = a.t.said.model
	}
	if t.attempts && x.attempts > 0 && x.attempts < len(saidAttempts) {
		h["X-Sluice-Attempts"] = saidAttempts[x.attempts]
	}
	if t.queue {
		if ms := x.waited.Milliseconds(); ms > 0 {
			h["X-Sluice-Queue-Ms"] = []string{strconv.FormatInt(ms, 10)}
		} else {
			h["X-Sluice-Queue-Ms"] = saidNoWait
		}
	}
	if t.second && a.second != "" {
		h["X-Sluice-Second-Call"] = saidSecond[a.second]
	}
}

// sluiceHeader reports whether a header name is in Sluice's own
// namespace, which a provider's answer may not write into.
func sluiceHeader(name string) bool {
	return len(name) > len("X-Sluice-") && strings.EqualFold(name[:len("X-Sluice-")], "X-Sluice-")
}
