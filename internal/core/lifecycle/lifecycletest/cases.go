// Package lifecycletest holds the cases that both hosts of the engine,
// the gateway and the simulator, run through their own adapters, so a
// rule that once had a copy in each is checked to decide alike in both:
// each host's test feeds every case's inputs, in its own terms, to the
// code it serves requests with, and compares its decision with the
// case's. A case a host cannot express (the simulator has no request
// without a header, for one) says so, and that host skips it.
//
// The cases are data; the rules are lifecycle's (Classify, Answer,
// Degrade, Ending, Complete and Mend, Engine.Continue), whose own tests
// check them against the same tables.
package lifecycletest

import (
	"time"

	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/lifecycle"
)

// ClassifyCase is a request's claim to a class, and the class it gets.
type ClassifyCase struct {
	Name       string
	Claim      lifecycle.Claim
	Want       admission.Priority
	Downgraded bool
}

// SimExpresses reports whether the simulator has a stream that makes
// this claim: a key of its own class sends no header; a key without one
// sends the class it draws, capped at the default; a stream without a
// key stands for declared callers and sends what it draws.
func (c ClassifyCase) SimExpresses() bool {
	switch {
	case c.Claim.Keyed && !c.Claim.Asked:
		return true
	case c.Claim.Keyed:
		return true // a key without a class of its own: capped at Key
	}
	return c.Claim.Declared && c.Claim.Asked
}

var (
	critical    = admission.Critical
	interactive = admission.Interactive
	background  = admission.Background
)

// Classify are the priority-ceiling cases.
var Classify = []ClassifyCase{
	{"key, no header: the key's class", lifecycle.Claim{Keyed: true, Key: background}, background, false},
	{"key, header lower: lowered", lifecycle.Claim{Keyed: true, Key: interactive, Asked: true, Header: background}, background, false},
	{"key, header higher: the key's ceiling", lifecycle.Claim{Keyed: true, Key: interactive, Asked: true, Header: critical}, interactive, true},
	{"key, header equal", lifecycle.Claim{Keyed: true, Key: interactive, Asked: true, Header: interactive}, interactive, false},
	{"critical key, header critical", lifecycle.Claim{Keyed: true, Key: critical, Asked: true, Header: critical}, critical, false},
	{"declared, no header: critical", lifecycle.Claim{Declared: true, Default: interactive}, critical, false},
	{"declared, header lower", lifecycle.Claim{Declared: true, Asked: true, Header: background, Default: interactive}, background, false},
	{"declared, header critical", lifecycle.Claim{Declared: true, Asked: true, Header: critical, Default: interactive}, critical, false},
	{"anyone asking critical: interactive", lifecycle.Claim{Asked: true, Header: critical, Default: background}, interactive, true},
	{"anyone, no header: the default", lifecycle.Claim{Default: background}, background, false},
}

// AnswerCase is a refusal, and what its client is told: the status on
// OpenAI's API, the Retry-After in whole seconds (0: none) and whether
// it is told not to retry.
type AnswerCase struct {
	Name       string
	Rejection  admission.Rejection
	Want       lifecycle.Reply
	Status     int
	RetryAfter int
}

// Answers are the refusal cases.
var Answers = []AnswerCase{
	{"key budget: 429 with the exact wait", admission.Rejection{Reason: admission.ReasonKeyBudget, Priority: interactive, RetryAfter: 20 * time.Second, Dimension: "requests"},
		lifecycle.Reply{Kind: lifecycle.ReplyRateLimited, RetryAfter: 20 * time.Second}, 429, 20},
	{"key budget, larger than its burst: 413", admission.Rejection{Reason: admission.ReasonKeyBudget, Priority: interactive, RetryAfter: 5 * time.Second, Dimension: "input_tokens", TooLarge: true},
		lifecycle.Reply{Kind: lifecycle.ReplyTooLarge}, 413, 0},
	{"lane budget: an overload", admission.Rejection{Reason: admission.ReasonLaneBudget, Priority: background, RetryAfter: 3 * time.Second, Dimension: "input_tokens"},
		lifecycle.Reply{Kind: lifecycle.ReplyOverloaded, RetryAfter: 3 * time.Second}, 503, 3},
	{"lane budget, too large: 413", admission.Rejection{Reason: admission.ReasonLaneBudget, Priority: background, Dimension: "input_tokens", TooLarge: true},
		lifecycle.Reply{Kind: lifecycle.ReplyTooLarge}, 413, 0},
	{"queue full: shed", admission.Rejection{Reason: admission.ReasonQueueFull, Priority: background, RetryAfter: 2 * time.Second},
		lifecycle.Reply{Kind: lifecycle.ReplyOverloaded, RetryAfter: 2 * time.Second}, 503, 2},
	{"futile: shed, do not retry", admission.Rejection{Reason: admission.ReasonQueueFull, Priority: interactive, RetryAfter: time.Second, Futile: true},
		lifecycle.Reply{Kind: lifecycle.ReplyOverloaded, RetryAfter: time.Second, NoRetry: true}, 503, 1},
	{"no provider takes calls: shed", admission.Rejection{Reason: admission.ReasonUnavailable, Priority: interactive, RetryAfter: 4 * time.Second},
		lifecycle.Reply{Kind: lifecycle.ReplyOverloaded, RetryAfter: 4 * time.Second}, 503, 4},
	{"deadline in the queue: 504", admission.Rejection{Reason: admission.ReasonDeadline, Priority: interactive, RetryAfter: time.Second},
		lifecycle.Reply{Kind: lifecycle.ReplyTimedOut}, 504, 0},
}

// DegradeCase is a request of a model whose Degradation is Degrade, and
// how it is served. Its key's budget is 100 requests a minute, kept in a
// fleet's shared store with Remaining left (-1: the key has no budget
// there); Pressure is the engine's own verdict (Engine.ShouldDegrade).
type DegradeCase struct {
	Name       string
	Priority   admission.Priority
	KeyOptsOut bool
	Pressure   bool
	Remaining  int64
	MaxOutput  int64
	Want       lifecycle.Degrading
}

// Degradation is the cases' model's: served by "small" with max_tokens
// at most 128, when its key has less than a tenth of its budget left.
var Degradation = lifecycle.Degradation{To: "small", MaxTokens: 128, BudgetBelow: 0.1}

// Model is the cases' model's name.
const Model = "chat"

// Degrades are the degradation cases.
var Degrades = []DegradeCase{
	{"pressure", background, false, true, -1, 1024, lifecycle.Degrading{To: "small", MaxOutput: 128}},
	{"no pressure, no shared budget", background, false, false, -1, 1024, lifecycle.Degrading{}},
	{"shared budget nearly spent", background, false, false, 5, 1024, lifecycle.Degrading{To: "small", MaxOutput: 128}},
	{"shared budget at a tenth: not below it", background, false, false, 10, 1024, lifecycle.Degrading{}},
	{"shared budget full", background, false, false, 100, 1024, lifecycle.Degrading{}},
	{"shared budget spent, key opts out", background, true, true, 0, 1024, lifecycle.Degrading{}},
	{"interactive: never", interactive, false, true, 0, 1024, lifecycle.Degrading{}},
	{"a smaller ask keeps its max_tokens", background, false, false, 0, 64, lifecycle.Degrading{To: "small"}},
}

// EndingCase is how an upstream call ended, and what that means to the
// engine.
type EndingCase struct {
	Name   string
	Ending lifecycle.Ending
	Want   lifecycle.Outcome
}

// Endings are the call-ending cases both hosts can produce.
var Endings = []EndingCase{
	{"an answer", lifecycle.Ending{Kind: lifecycle.EndAnswered, Status: 200}, lifecycle.Outcome{Kind: lifecycle.OK, Status: 200}},
	{"429 with Retry-After", lifecycle.Ending{Kind: lifecycle.EndRefused, Status: 429, RetryAfter: 2 * time.Second}, lifecycle.Outcome{Kind: lifecycle.Overloaded, Status: 429, RetryAfter: 2 * time.Second}},
	{"503", lifecycle.Ending{Kind: lifecycle.EndRefused, Status: 503}, lifecycle.Outcome{Kind: lifecycle.Overloaded, Status: 503}},
	{"529", lifecycle.Ending{Kind: lifecycle.EndRefused, Status: 529}, lifecycle.Outcome{Kind: lifecycle.Overloaded, Status: 529}},
	{"500", lifecycle.Ending{Kind: lifecycle.EndRefused, Status: 500}, lifecycle.Outcome{Kind: lifecycle.Failed, Status: 500}},
	{"400", lifecycle.Ending{Kind: lifecycle.EndRefused, Status: 400}, lifecycle.Outcome{Kind: lifecycle.Failed, Status: 400}},
	{"a connection reset", lifecycle.Ending{Kind: lifecycle.EndUnreachable}, lifecycle.Outcome{Kind: lifecycle.ConnError}},
	{"a malformed answer", lifecycle.Ending{Kind: lifecycle.EndBroken, Status: 200}, lifecycle.Outcome{Kind: lifecycle.Failed, Status: 200}},
}

// RetryStep is one call of a request failing before any byte reached
// the client: its attempt (0 the first call, 1 the second, which a
// failed same-target retry's replacement is too), its status (0: the
// connection broke) and the provider's Retry-After, and whether the
// request then gets a retry: to which target, by which rule.
type RetryStep struct {
	Attempt    int
	Status     int
	RetryAfter time.Duration
	Retried    bool
	Target     int
	Why        lifecycle.RetryWhy
}

// RetryCase is a request's calls failing in turn. With Hedge, the
// request is hedged (its second call sent) before anything fails.
type RetryCase struct {
	Name  string
	Hedge bool
	Steps []RetryStep
}

// Retries are the retry cases. The engine's providers have no breaker,
// so every transient failure is a lone one; Retry-Afters are short, so a
// host that waits them out in real time stays fast.
var Retries = []RetryCase{
	{"the first call fails alone, with a 503: the next target", false, []RetryStep{{0, 503, 0, true, 1, lifecycle.RetryNext}}},
	{"the first call's connection breaks: the same target", false, []RetryStep{{0, 0, 0, true, 0, lifecycle.RetrySame}}},
	{"the first call fails with a 400", false, []RetryStep{{0, 400, 0, false, 0, 0}}},
	{"the retry fails too", false, []RetryStep{{0, 503, 0, true, 1, lifecycle.RetryNext}, {1, 503, 0, false, 0, 0}}},
	{"a lone 500: the same target, then the next", false, []RetryStep{{0, 500, 0, true, 0, lifecycle.RetrySame}, {1, 500, 0, true, 1, lifecycle.RetryNext}, {1, 500, 0, false, 0, 0}}},
	{"a short Retry-After is waited out on the same target", false, []RetryStep{{0, 429, 20 * time.Millisecond, true, 0, lifecycle.RetryWait}, {1, 429, 20 * time.Millisecond, true, 1, lifecycle.RetryNext}}},
	{"a long Retry-After moves on at once", false, []RetryStep{{0, 429, time.Minute, true, 1, lifecycle.RetryNext}, {1, 503, 0, false, 0, 0}}},
	{"the first call fails while its hedge is live", true, []RetryStep{{0, 503, 0, false, 0, 0}, {1, 503, 0, false, 0, 0}}},
	{"the hedge fails, then the first call", true, []RetryStep{{1, 503, 0, false, 0, 0}, {0, 503, 0, false, 0, 0}}},
}

// RetryConfig is the engine the retry cases run on: two targets, with
// budget to spare for hedges and retries.
func RetryConfig() lifecycle.Config {
	return lifecycle.Config{
		Admission: admission.Config{Global: admission.Fixed(100)},
		Scopes:    []lifecycle.ScopeConfig{{Fixed: 10}, {Fixed: 10}},
		Hedge:     lifecycle.HedgeConfig{Budget: 1, Burst: 10},
		Retry:     lifecycle.RetryConfig{Budget: 1, Burst: 10},
	}
}

// MendCase is how a committed stream ended: what the host saw of it and
// how its read loop stopped; whether it is complete, and whether a
// continuation is tried, for which cause (lifecycle.Complete, Mend).
type MendCase struct {
	Name     string
	Facts    lifecycle.StreamFacts
	Stop     lifecycle.StreamStop
	Complete bool
	Mended   bool
	Cause    lifecycle.BreakCause
}

// SimExpresses reports whether the simulator plans a stream that ends
// so: its answers are text, read whole, and break after their first
// token by a reset, an end without a finish reason, a connection that
// closes, a malformed event or a stall; or they finish, with or
// without their end marker.
func (c MendCase) SimExpresses() bool {
	f := c.Facts
	if !f.Text || f.Tool || f.Unread {
		return false
	}
	switch c.Stop {
	case lifecycle.StopCut, lifecycle.StopUnterminated, lifecycle.StopMalformed, lifecycle.StopStalled:
		return !f.Finished || c.Stop == lifecycle.StopUnterminated
	case lifecycle.StopClosed:
		return f.Finished
	}
	return false
}

var (
	text     = lifecycle.StreamFacts{Text: true}
	finished = lifecycle.StreamFacts{Text: true, Finished: true}
)

// Mends are the stream-end cases.
var Mends = []MendCase{
	{"finished and closed", finished, lifecycle.StopClosed, true, false, 0},
	{"finished, no end marker", finished, lifecycle.StopUnterminated, true, false, 0},
	{"finished, then cut", finished, lifecycle.StopCut, true, false, 0},
	{"finished, then stalled before its end marker", finished, lifecycle.StopStalled, true, false, 0},
	{"finished, then a malformed event: not whole, not continued", finished, lifecycle.StopMalformed, false, false, 0},
	{"finished, then an error event: not whole, not continued", finished, lifecycle.StopErrorEvent, false, false, 0},
	{"closed after its end marker without a finish reason: the provider says it is whole", text, lifecycle.StopClosed, true, false, 0},
	{"ends cleanly without a finish reason", text, lifecycle.StopUnterminated, false, true, lifecycle.BreakCut},
	{"cut", text, lifecycle.StopCut, false, true, lifecycle.BreakCut},
	{"a malformed event", text, lifecycle.StopMalformed, false, true, lifecycle.BreakMalformed},
	{"an error event", text, lifecycle.StopErrorEvent, false, true, lifecycle.BreakErrorEvent},
	{"stalled", text, lifecycle.StopStalled, false, true, lifecycle.BreakStall},
	{"an untranslatable event", text, lifecycle.StopUntranslatable, false, false, 0},
	{"the client left", text, lifecycle.StopClient, false, false, 0},
	{"the deadline", text, lifecycle.StopDeadline, false, false, 0},
	{"cut before any text was captured", lifecycle.StreamFacts{}, lifecycle.StopCut, false, false, 0},
	{"cut inside a tool call", lifecycle.StreamFacts{Text: true, Tool: true}, lifecycle.StopCut, false, false, 0},
	{"cut after an event that could not be read", lifecycle.StreamFacts{Text: true, Unread: true}, lifecycle.StopCut, false, false, 0},
	{"stalled inside a tool call", lifecycle.StreamFacts{Text: true, Tool: true}, lifecycle.StopStalled, false, false, 0},
}

// CapsCase is a target's continuation setting and its provider's (""
// for none: the kind's default), and what the target can do.
//
// A host runs a case as a model of two targets: first one on a provider
// of kind openai whose continuation is none (the one whose stream
// breaks), then the case's, on a provider of the case's kind and
// setting. It reads what each target can do as it serves requests
// (want: none, then Want), and asks where the stream goes on with those
// caps (ContinueOn; want: WantContinue).
type CapsCase struct {
	Name             string
	Kind             string
	Provider, Target string
	Want             lifecycle.ContinueCaps
}

// WantContinue is where the case's model's broken stream goes on: to
// the case's target, in its mode, or nowhere when it continues nothing.
func (c CapsCase) WantContinue() lifecycle.Continuation {
	if c.Want.Mode() == lifecycle.ContinueNone {
		return lifecycle.Continuation{Why: "no_capable_target"}
	}
	return lifecycle.Continuation{OK: true, Target: 1, Mode: c.Want.Mode()}
}

// ContinueOn is the engine's decision (Engine.Continue) for a request
// of two targets, each with a provider of its own (RetryConfig), whose
// stream broke on the first after its first token, given what each
// target can do as a host holds it.
func ContinueOn(caps []lifecycle.ContinueCaps) lifecycle.Continuation {
	e := lifecycle.New(RetryConfig())
	now := time.Unix(0, 0).UTC()
	a, _ := e.Arrive(now, lifecycle.Request{Targets: []int{0, 1}, Deadline: now.Add(time.Minute)})
	e.Commit(now, a.ID, 0)
	return e.Continue(now, a.ID, lifecycle.BreakCut, caps, 0, false)
}

var (
	prefillCaps = lifecycle.ContinueCaps{Prefill: true, Prompt: true}
	promptCaps  = lifecycle.ContinueCaps{Prompt: true}
)

// Caps are the continuation-capability cases: a target's own setting
// wins over its provider's, which wins over the kind's default.
var Caps = []CapsCase{
	{"anthropic by default: prefill", "anthropic", "", "", prefillCaps},
	{"openai by default: prompt", "openai", "", "", promptCaps},
	{"the provider's setting", "openai", "prefill", "", prefillCaps},
	{"the provider says none", "anthropic", "none", "", lifecycle.ContinueCaps{}},
	{"the target says none on a prefill provider", "openai", "prefill", "none", lifecycle.ContinueCaps{}},
	{"the target says prompt on a prefill provider", "anthropic", "prefill", "prompt", promptCaps},
	{"the target says prefill on a provider that says none", "openai", "none", "prefill", prefillCaps},
}
