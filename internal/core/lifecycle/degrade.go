package lifecycle

import (
	"time"

	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/quota"
)

// DegradeAsk is what a host knows of a request, beyond its Request, that
// Degrade reads.
type DegradeAsk struct {
	// Degrade is the request's route's (Route.Degrade); nil: its model
	// is never degraded.
	Degrade *Degradation
	// KeyOptsOut: the request's key asked never to be degraded
	// (keys[].degrade: false).
	KeyOptsOut bool
	// Shared is the request's key budget as the fleet's shared store
	// last reported it, when the host keeps the key's budget there
	// (Budgets.SharedKeys); nil when the engine keeps it, when the key
	// has none, or before the store has reported it.
	Shared *[3]quota.Status
	// Pressure reports whether the engine is under pressure for r
	// (Engine.ShouldDegrade, asked through the host's shell). It is asked
	// only for a request that may be degraded, so a host pays for it only
	// then.
	Pressure func(r Request, d Degradation) bool
}

// Degrading is how a request is served degraded; the zero value serves
// it as asked.
type Degrading struct {
	// To is the client-facing model that serves it instead ("": its
	// own).
	To string
	// MaxOutput caps its max_tokens (0: unchanged).
	MaxOutput int64
	// TrimTo: drop its oldest messages until its input fits this many
	// tokens (0: no trim). Only the host holds the messages, so it trims.
	TrimTo int64
}

// Degrade decides whether r is served degraded, and how (see
// "Degradation" in the package doc):
//
//   - who: a background request of a route with a Degradation, whose key
//     does not opt out;
//   - when: the engine is under pressure for it (Engine.ShouldDegrade:
//     the oldest waiter has waited QueueAge, r would be refused at once,
//     or its key's budget in the engine is low or cannot take r), or its
//     key's budget in the fleet's shared store is low (BudgetLow of
//     a.Shared, below BudgetBelow);
//   - what: another model (To, when it is not r's own), a lower
//     max_tokens (when r asks for more, or names none), a shorter history
//     (when r's input is longer than TrimTo). A change that would change
//     nothing is left out, so a request with nothing to change is served
//     as asked.
func Degrade(r Request, a DegradeAsk) Degrading {
	d := a.Degrade
	if d == nil || a.KeyOptsOut || r.Priority != admission.Background {
		return Degrading{}
	}
	if !a.Pressure(r, *d) && (a.Shared == nil || !BudgetLow(*a.Shared, d.BudgetBelow)) {
		return Degrading{}
	}
	var out Degrading
	if d.To != "" && d.To != r.Model {
		out.To = d.To
	}
	if d.MaxTokens > 0 && (r.MaxOutput == 0 || r.MaxOutput > d.MaxTokens) {
		out.MaxOutput = d.MaxTokens
	}
	if d.TrimTo > 0 && r.InputTokens > d.TrimTo {
		out.TrimTo = d.TrimTo
	}
	return out
}

// Apply is r served as d says, but for the trim: rebuilt on to, the
// route of d.To (ignored when To is empty), with its deadline from its
// arrival and the client's own timeout as Route.Request sets it, keeping
// its key and its token counts; its output capped; and marked Degraded
// when either changed. A host that trims the history (TrimTo) sets
// InputTokens to what is left, and Degraded when it dropped anything.
func (d Degrading) Apply(r Request, to Route, arrived time.Time, clientTimeout time.Duration) Request {
	if d.To != "" {
		next := to.Request(r.Priority, r.Stream, arrived, clientTimeout)
		next.Key, next.InputTokens, next.MaxOutput, next.Choices = r.Key, r.InputTokens, r.MaxOutput, r.Choices
		r = next
		r.Degraded = true
	}
	if d.MaxOutput > 0 {
		r.MaxOutput = d.MaxOutput
		r.Degraded = true
	}
	return r
}
