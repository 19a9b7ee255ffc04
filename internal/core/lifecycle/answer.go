package lifecycle

import (
	"time"

	"github.com/sluice-gw/sluice/internal/core/admission"
)

// ReplyKind is what the client of a request Sluice refused is told; each
// host writes it in its own terms (the gateway as its dialect's status
// and error, the simulator as the status its clients judge).
type ReplyKind uint8

const (
	// ReplyOverloaded: 503 (529 on Anthropic's API), with Retry-After,
	// and x-should-retry: false when a retry is futile.
	ReplyOverloaded ReplyKind = iota
	// ReplyRateLimited: 429 with the key's budget's exact wait.
	ReplyRateLimited
	// ReplyTooLarge: 413. No wait lets the request through, so it has
	// no Retry-After and is never retried.
	ReplyTooLarge
	// ReplyTimedOut: 504. Its deadline passed while it waited.
	ReplyTimedOut
)

var replyKindNames = [...]string{"overloaded", "rate_limited", "too_large", "timed_out"}

func (k ReplyKind) String() string {
	if int(k) < len(replyKindNames) {
		return replyKindNames[k]
	}
	return "unknown"
}

// Reply is the answer to a refused request.
type Reply struct {
	Kind ReplyKind
	// RetryAfter is the wait to tell the client (0: none).
	RetryAfter time.Duration
	// NoRetry: tell the client not to retry at once (the refusal is
	// Futile: most of its class is being refused).
	NoRetry bool
}

// Answer is the reply to a refusal, at the door, on arrival or from the
// queue. A key's budget is the client's own to pace, so it is told 429
// with the budget's exact wait; a budget no wait can satisfy (the request
// is larger than its burst) is 413; the large-context lane's budget is
// everyone's, so a request it refuses is told Sluice is overloaded, as
// for every other refusal, but a deadline that passed in the queue,
// which is a 504.
func Answer(rej admission.Rejection) Reply {
	budget := rej.Reason == admission.ReasonKeyBudget || rej.Reason == admission.ReasonLaneBudget
	switch {
	case budget && rej.TooLarge:
		return Reply{Kind: ReplyTooLarge}
	case rej.Reason == admission.ReasonKeyBudget:
		return Reply{Kind: ReplyRateLimited, RetryAfter: rej.RetryAfter}
	case rej.Reason == admission.ReasonDeadline:
		return Reply{Kind: ReplyTimedOut}
	}
	return Reply{Kind: ReplyOverloaded, RetryAfter: rej.RetryAfter, NoRetry: rej.Futile}
}

// Rejection is the arrival's refusal as a host reports it (Answer): its
// reason, class and wait, and, for a budget's refusal, the dimension
// that refused and whether no wait lets it through.
func (a Arrival) Rejection() admission.Rejection {
	rej := Refused(a.Refusal)
	if a.Refusal.Reason == admission.ReasonKeyBudget || a.Refusal.Reason == admission.ReasonLaneBudget {
		rej.Dimension, rej.TooLarge = a.Budget.Dimension.String(), a.Budget.Never
	}
	return rej
}

// Refused is a refusal from the queue (Ready.Refuse) as a Rejection.
func Refused(f admission.Refusal) admission.Rejection {
	return admission.Rejection{Reason: f.Reason, Priority: f.Priority, RetryAfter: f.RetryAfter, Futile: f.Futile}
}
