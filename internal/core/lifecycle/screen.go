package lifecycle

import (
	"time"

	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/quota"
)

// Screening: refusals that cost the host nothing to act on come before
// the work that costs it most. Before a request is admitted the host
// counts its input tokens and, for a target of the other API,
// translates its body; on a body of many small pieces that is the most
// CPU and memory a request takes from the gateway before its first
// byte goes upstream. A key already over its budget must not pay it,
// nor make the gateway pay it, to hear 429. So the host asks Screen
// twice before Arrive:
//
//  1. with Floor(r), once the body is parsed: no input counted and no
//     output reserved, since neither is known yet (degradation may
//     still lower max_tokens and trim the history). A budget that
//     refuses the floor refuses r whatever its count comes to: a key in
//     debt in any dimension, or out of requests. Nothing is counted.
//  2. with r itself, once counted, degraded and routed by context
//     length: the budgets' verdict Arrive would give now. Nothing is
//     translated.
//
// Screen takes nothing from any budget: Arrive takes the reservation,
// and may still refuse (another request took what was left meanwhile).
// Admission's own room is checked from the headers alone, before the
// body is read (Check); neither touches a provider's budget, which
// Arrive consults per target as it routes.

// Floor is r as the least it could cost before the host has counted its
// input and applied degradation: no input tokens and no output
// reserved.
func Floor(r Request) Request {
	r.InputTokens, r.MaxOutput = 0, NoOutput
	return r
}

// Screen reports whether r would be refused by its key's budget or the
// large-context lane's on arrival now, as Arrive would refuse it (the
// same Refusal and budget verdict), without taking anything. ok false:
// refused.
func (e *Engine) Screen(now time.Time, r Request) (Arrival, bool) {
	c := e.books.cost(r)
	if kb := e.books.key(r.Key); kb != nil {
		if v := kb.Check(now, c); !v.OK {
			return refusedBy(r, admission.ReasonKeyBudget, v), false
		}
	}
	if e.books.isLarge(r) && e.books.large != nil {
		if v := e.books.large.Check(now, c); !v.OK {
			return refusedBy(r, admission.ReasonLaneBudget, v), false
		}
	}
	return Arrival{}, true
}

func refusedBy(r Request, why admission.Reason, v quota.Verdict) Arrival {
	return Arrival{Verdict: admission.Rejected, Budget: v,
		Refusal: admission.Refusal{Priority: r.Priority, Reason: why, RetryAfter: v.RetryAfter}}
}
