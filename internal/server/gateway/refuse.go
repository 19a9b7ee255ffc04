package gateway

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/sluice-gw/sluice/internal/server/metrics"

	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	"github.com/sluice-gw/sluice/internal/core/quota"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// refuse answers a refusal from admission or from a budget, at the door,
// on arrival or from the queue, as lifecycle.Answer says; deadline is the
// request's, which a refusal from the queue may name.
func refuse(m *metrics.Metrics, w http.ResponseWriter, x *exchange, rej *admission.Rejection, deadline time.Time) {
	switch reply := lifecycle.Answer(*rej); {
	case reply.Kind == lifecycle.ReplyTimedOut:
		kind, outcome := replyStatus(reply)
		x.fail(w, kind, outcome, "queue_deadline",
			fmt.Sprintf("the request's %s deadline passed while it waited for admission", deadline.Sub(x.start).Round(time.Millisecond)), 0)
	case rej.Reason == admission.ReasonKeyBudget || rej.Reason == admission.ReasonLaneBudget:
		budgetRefused(m, w, x, rej)
	default:
		shed(w, x, rej)
	}
}

// replyStatus is how the gateway writes a reply: its dialect's error
// kind, and the outcome it records.
func replyStatus(r lifecycle.Reply) (protocol.Kind, string) {
	switch r.Kind {
	case lifecycle.ReplyRateLimited:
		return protocol.RateLimited, outcomeClientError
	case lifecycle.ReplyTooLarge:
		return protocol.TooLarge, outcomeClientError
	case lifecycle.ReplyTimedOut:
		return protocol.Timeout, outcomeTimeout
	}
	return protocol.Overloaded, outcomeShed
}

// budgetRefused answers a request its key's budget, or the large-context
// lane's, refused, as lifecycle.Answer says: 429 with the exact wait and
// the key's rate-limit headers; a request larger than the budget's burst
// gets 413 instead, since no wait would let it through; the lane's
// refusal is an overload.
func budgetRefused(m *metrics.Metrics, w http.ResponseWriter, x *exchange, rej *admission.Rejection) {
	reply := lifecycle.Answer(*rej)
	who := "lane:large_context"
	if rej.Reason == admission.ReasonKeyBudget && x.key != nil {
		who = x.key.name
	}
	m.BudgetRefusals.WithLabelValues(who, rej.Dimension).Inc()
	subject := "this key's"
	if rej.Reason == admission.ReasonLaneBudget {
		subject = "the large-context lane's"
	}
	dim := strings.ReplaceAll(rej.Dimension, "_", " ")
	kind, outcome := replyStatus(reply)
	if reply.Kind == lifecycle.ReplyTooLarge {
		if o := x.key; o != nil && rej.Reason == admission.ReasonKeyBudget && rej.Dimension == quota.OutputTokens.String() && !x.namedMax {
			// Leaving max_tokens out is asking for the model's default
			// cap, for each answer (lifecycle.DefaultMaxOutput).
			whole := max(o.limits[quota.OutputTokens].Burst, o.limits[quota.OutputTokens].PerMinute)
			x.fail(w, kind, outcome, string(rej.Reason),
				fmt.Sprintf("the request names no max_tokens, so each of its %d answers reserves the model's default output cap (default_max_tokens), which together need more output tokens than this key's whole per-minute budget (%d); set max_tokens to at most %d", x.choices, whole, whole/max(x.choices, 1)), 0)
			return
		}
		x.fail(w, kind, outcome, string(rej.Reason),
			fmt.Sprintf("the request needs more %s than %s whole per-minute budget (%d input tokens counted, max_tokens reserved); shorten it or lower max_tokens", dim, subject, x.inputTokens), 0)
		return
	}
	x.fail(w, kind, outcome, string(rej.Reason),
		fmt.Sprintf("%s per-minute budget of %s is spent; retry after %s", subject, dim, rej.RetryAfter.Round(time.Millisecond)), reply.RetryAfter)
}
