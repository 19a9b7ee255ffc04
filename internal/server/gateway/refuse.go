package gateway

import (
	"fmt"
	"github.com/sluice-gw/sluice/internal/server/metrics"
	"net/http"
	"time"

	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/lifecycle"
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
