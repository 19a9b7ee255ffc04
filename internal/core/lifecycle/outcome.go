package lifecycle

import "time"

// The statuses StatusOutcome reads as "at capacity", spelled out so that
// the core imports no net package (429 Too Many Requests, 503 Service
// Unavailable, and Anthropic's 529 Overloaded).
const (
	statusTooManyRequests    = 429
	statusServiceUnavailable = 503
	statusOverloaded         = 529
	statusNotFound           = 404
)

// StatusOutcome classifies a provider's answer by its HTTP status: a 2xx
// is OK; 429, 503 and 529 say the provider is at capacity (Overloaded);
// anything else is Failed, with its status, which the breaker and Retry
// read further (a 401 counts against the provider, a 400 does not, a 404
// only when the provider said the model is unknown: Outcome.UnknownModel;
// a 5xx may be retried, a 4xx not). retryAfter is the wait the provider asked
// for, if any. Hosts classify every answer here, so the gateway and the
// simulator cannot disagree about what a status means.
func StatusOutcome(status int, retryAfter time.Duration) Outcome {
	o := Outcome{Kind: Failed, Status: status, RetryAfter: retryAfter}
	switch {
	case status >= 200 && status < 300:
		o.Kind = OK
	case status == statusTooManyRequests, status == statusServiceUnavailable, status == statusOverloaded:
		o.Kind = Overloaded
	}
	return o
}
