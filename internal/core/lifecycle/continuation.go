package lifecycle

import "time"

// Mid-stream continuation. Once a stream's first token has gone to the
// client its answer is never restarted (a restart would repeat what the
// client already has); a stream that breaks after that is continued:
// another call is asked to go on from the text already sent, and its
// text is relayed after it, so that the client gets one stream with the
// whole answer exactly once. The decisions are here, once, for both
// hosts: whether a break is continued, on which target, how (an
// assistant prefill, or a prompt asking to continue), and how long a
// stream may go quiet before it counts as broken (StallDeadline). The
// gateway carries them out in its stream relay; the simulator plays
// them on its virtual clock.

// BreakCause is how a committed stream broke.
type BreakCause uint8

const (
	// BreakCut: the provider closed the stream, or the connection broke,
	// before the stream carried its finish reason.
	BreakCut BreakCause = iota
	// BreakStall: nothing came for the stall deadline (StallDeadline).
	BreakStall
	// BreakMalformed: an event was not well-formed.
	BreakMalformed
	// BreakErrorEvent: the provider sent an error event mid-stream.
	BreakErrorEvent
)

func (c BreakCause) String() string {
	switch c {
	case BreakStall:
		return "stall"
	case BreakMalformed:
		return "malformed"
	case BreakErrorEvent:
		return "error_event"
	}
	return "cut"
}

// ContinueMode is how a continuation call is asked to go on.
type ContinueMode uint8

const (
	// ContinueNone: the target cannot continue an answer.
	ContinueNone ContinueMode = iota
	// ContinuePrefill: the text so far is sent as the start of the
	// assistant's own message, which the model extends (Anthropic's
	// trailing assistant message; vLLM's and SGLang's
	// continue_final_message). Nothing is repeated.
	ContinuePrefill
	// ContinuePrompt: the text so far is sent as an assistant message,
	// followed by a user message asking to continue exactly from its
	// end; the model may repeat the last words, which the host trims
	// (Overlap).
	ContinuePrompt
)

func (m ContinueMode) String() string {
	switch m {
	case ContinuePrefill:
		return "prefill"
	case ContinuePrompt:
		return "prompt"
	}
	return "none"
}

// ContinueCaps is what a target can do for a continuation, from its
// config: whether it accepts an assistant prefill, whether a
// continuation prompt may be sent to it.
type ContinueCaps struct {
	Prefill, Prompt bool
}

// Mode is the best way to continue on a target with these capabilities:
// a prefill when it takes one (the model goes on from the very byte),
// else a prompt.
func (c ContinueCaps) Mode() ContinueMode {
	switch {
	case c.Prefill:
		return ContinuePrefill
	case c.Prompt:
		return ContinuePrompt
	}
	return ContinueNone
}

// MaxContinuations bounds the continuations of one answer: a stream that
// breaks again on its continuation is continued once more, and then ends
// with its error. Two, because a second break after a continuation is
// rare unless the fleet is failing, and then more calls only add load.
const MaxContinuations = 2

// ContinueCandidate is one of a request's targets, as a continuation
// sees it: what it can do, whether it can take a call now (its breaker
// lets calls through, its provider is not paused and has room), and
// whether it is the same provider as the broken call's.
type ContinueCandidate struct {
	Caps         ContinueCaps
	Healthy      bool
	SameProvider bool
}

// ContinueAsk is what DecideContinue needs: the broken call's target,
// the request's targets in failover order, whether a token went to the
// client, how many continuations the answer has had, and whether the
// broken call's provider has retry budget for a call on itself.
type ContinueAsk struct {
	Cause      BreakCause
	Sent       bool
	Current    int
	Candidates []ContinueCandidate
	Done       int
	SameBudget bool
	// Tool: the break came inside a tool call's arguments, which a
	// continuation cannot splice.
	Tool bool
}

// Continuation is the decision: continue on Target, in Mode; or not, and
// then Why.
type Continuation struct {
	OK     bool
	Target int
	Mode   ContinueMode
	Why    string
}

// DecideContinue decides whether, and where, a broken stream is
// continued. Nothing sent: no continuation, a clean restart is the
// host's (the retry and rescue paths). Otherwise the next healthy target
// after the broken one, in failover order (then those before it), that
// can continue, with a prefill where it takes one; a target on the same
// provider as the broken call only when no other can, and only within
// that provider's retry budget, since it adds load where the failure
// was. A call to another provider adds none, so it is bounded by that
// provider's own admission (Healthy), not by a budget.
func DecideContinue(a ContinueAsk) Continuation {
	switch {
	case !a.Sent:
		return Continuation{Why: "nothing_sent"}
	case a.Tool:
		return Continuation{Why: "tool_call"}
	case a.Done >= MaxContinuations:
		return Continuation{Why: "max_continuations"}
	}
	n := len(a.Candidates)
	capable := false
	same := -1
	for k := 1; k <= n; k++ {
		i := (a.Current + k) % n
		c := a.Candidates[i]
		if c.Caps.Mode() == ContinueNone {
			continue
		}
		capable = true
		if !c.Healthy {
			continue
		}
		if c.SameProvider || i == a.Current {
			if same < 0 {
				same = i
			}
			continue
		}
		return Continuation{OK: true, Target: i, Mode: c.Caps.Mode()}
	}
	switch {
	case same >= 0 && a.SameBudget:
		return Continuation{OK: true, Target: same, Mode: a.Candidates[same].Caps.Mode()}
	case same >= 0:
		return Continuation{Why: "no_budget"}
	case !capable:
		return Continuation{Why: "no_capable_target"}
	}
	return Continuation{Why: "no_healthy_target"}
}

// StallConfig bounds the stall deadline: Floor and Ceiling bound it,
// Factor scales the stream's typical gap between reads, and MinGaps is
// how many gaps must be seen before they are trusted (until then the
// deadline is Ceiling).
type StallConfig struct {
	Floor, Ceiling time.Duration
	Factor         float64
	MinGaps        int
}

// Default stall bounds. A stream's tokens come every 10-100 ms; a pause
// of many times its own typical gap is a stall, not a slow token. The
// floor (5 s) keeps a fast stream from being cut over a slow batch step,
// a preempted sequence's recompute or a GC pause at the provider, pauses
// of a second or two; the ceiling (15 s) is well under
// the 60 s idle timeout, so a stalled answer is continued while the
// client still waits, and it is the deadline until enough gaps (4) have
// been seen to judge the stream by. The factor (20) leaves a stream
// that is merely slow, a long prompt's prefill of a tool result say,
// untouched.
const (
	DefaultStallFloor   = 5 * time.Second
	DefaultStallCeiling = 15 * time.Second
	DefaultStallFactor  = 20
	DefaultStallMinGaps = 4
)

// WithDefaults fills in the zero fields.
func (c StallConfig) WithDefaults() StallConfig {
	if c.Floor <= 0 {
		c.Floor = DefaultStallFloor
	}
	if c.Ceiling <= 0 {
		c.Ceiling = DefaultStallCeiling
	}
	if c.Ceiling < c.Floor {
		c.Ceiling = c.Floor
	}
	if c.Factor <= 0 {
		c.Factor = DefaultStallFactor
	}
	if c.MinGaps <= 0 {
		c.MinGaps = DefaultStallMinGaps
	}
	return c
}

// Gaps tracks a stream's gaps between reads: a running mean, kept with
// an exponential weight so that a stream that speeds up or slows down is
// judged by its recent pace.
type Gaps struct {
	N    int
	Mean time.Duration
}

// Add records a gap.
func (g *Gaps) Add(d time.Duration) {
	g.N++
	if g.N == 1 {
		g.Mean = d
		return
	}
	// Weight 1/4: a few gaps move it, one outlier does not.
	g.Mean += (d - g.Mean) / 4
}

// StallDeadline is how long a stream whose gaps are g may go quiet
// before it counts as stalled: Factor times its mean gap, within
// [Floor, Ceiling], and Ceiling until MinGaps gaps have been seen.
func StallDeadline(c StallConfig, g Gaps) time.Duration {
	if g.N < c.MinGaps {
		return c.Ceiling
	}
	d := time.Duration(float64(g.Mean) * c.Factor)
	return min(max(d, c.Floor), c.Ceiling)
}

// Overlap is how many bytes at the start of next repeat the end of
// sofar: the longest suffix of sofar that is a prefix of next and that
// begins at a word's start in sofar (after a space, or at its start). A
// model asked to continue a text often repeats its last words; a
// one-letter match inside a word ("hel" + "lo") is a coincidence, not a
// repeat, and is kept.
func Overlap(sofar, next string) int {
	for k := min(len(sofar), len(next)); k > 0; k-- {
		start := len(sofar) - k
		if start > 0 && !isSpace(sofar[start-1]) {
			continue
		}
		if sofar[start:] == next[:k] {
			return k
		}
	}
	return 0
}

func isSpace(b byte) bool { return b == ' ' || b == '\n' || b == '\t' || b == '\r' }
