package upstream

import "time"

// Failure kinds.
const (
	FailStatus    = "status"    // an HTTP error in the protocol's shape
	FailReset     = "reset"     // TCP RST, before or mid-response
	FailHang      = "hang"      // silence before headers: for a while (for), or until the client gives up
	FailMalformed = "malformed" // 200 with a body that is not JSON, or a garbage event after N tokens
	FailTruncate  = "truncate"  // close the connection partway through
	// FailStall sends after_tokens tokens (0: headers only), goes silent
	// for its for (0: forever), then does what then says (resume by
	// default). After 0 tokens it is silence before the first token.
	FailStall = "stall"
	// FailEOF ends the response cleanly after after_tokens tokens, as a
	// complete HTTP message, with no finish reason, usage or end event:
	// the stream a client cannot tell from a finished one by framing.
	FailEOF = "eof"
	// FailNoDone leaves out a stream's end marker and nothing else: every
	// token, the finish reason and the usage arrive and the body ends
	// cleanly, without OpenAI's data: [DONE] or Anthropic's
	// message_stop (whose message_delta already carries stop_reason and
	// usage). A whole answer is unaffected.
	FailNoDone = "no_done"
	// FailContextLength answers 400 as a provider does for a prompt
	// longer than its context window (Config.ContextWindow does it for
	// prompts that really are).
	FailContextLength = "context_length"
	// FailContentFilter answers 400 as a provider's content filter does.
	FailContentFilter = "content_filter"
)

// What a stall or a malformed event leads to (Failure.Then).
const (
	ThenResume   = "resume"   // the answer goes on to its normal end
	ThenEOF      = "eof"      // the body ends cleanly there (FailEOF)
	ThenTruncate = "truncate" // the connection closes there (FailTruncate)
	ThenReset    = "reset"    // TCP RST there (FailReset)
)

// Failure injects an error into a fraction of calls.
type Failure struct {
	Kind string `yaml:"kind"`
	// Status is the HTTP code for kind status (default 500).
	Status int `yaml:"status"`
	// RetryAfter, if set, is sent as retry-after (and retry-after-ms on 429).
	RetryAfter time.Duration `yaml:"retry_after"`
	// Rate is the fraction of calls hit (0 means 1, i.e. every call in the
	// window, which is what a window-limited outage usually wants).
	Rate float64 `yaml:"rate"`
	// Start and End limit the rule to calls starting in that window, as
	// offsets from the provider's start; both zero means always.
	Start time.Duration `yaml:"start"`
	End   time.Duration `yaml:"end"`
	// Delay is waited before a status, reset (before response) or hang
	// failure, because real errors are rarely instant.
	Delay time.Duration `yaml:"delay"`
	// AfterTokens is where reset, truncate, eof, stall and malformed act:
	// reset with 0 cuts before any byte is sent; truncate and eof with 0
	// cut halfway; stall with 0 sends the headers only; malformed with 0
	// sends one bad event and nothing else. On a whole (non-streaming)
	// answer, reset, truncate and eof cut the body just after the N-th
	// token's text, and malformed ignores it.
	AfterTokens int `yaml:"after_tokens"`
	// For is how long a hang or a stall is silent; 0 is forever (until
	// the client gives up). A hang with for is admitted like any call,
	// is silent for delay + for (nothing sent, not even headers), then
	// answers normally: its silence adds to the time to first byte.
	For time.Duration `yaml:"for"`
	// Then is what follows a stall (default resume) or a malformed event
	// (default eof): resume, eof, truncate or reset.
	Then string `yaml:"then"`
	// Encoding, if set, is how the HTTP mock writes the streams of the
	// calls this rule hits, in place of Config.Encoding ("spaced",
	// "pydefault+keepalive": a stall that sends keepalives). Not
	// simulated.
	Encoding string `yaml:"encoding"`
}

// StatusCode is the HTTP code a status failure answers with: its
// status, 500 when it names none; context_length and content_filter
// answer 400.
func (f *Failure) StatusCode() int {
	switch f.Kind {
	case FailContextLength, FailContentFilter:
		return 400
	}
	if f.Status == 0 {
		return 500
	}
	return f.Status
}

// Early reports whether the failure replaces the whole call (status,
// context_length, content_filter, a hang without end, reset before any
// byte), after its delay. Such a call never reaches the capacity model:
// it holds no slot, never waits and is never refused. The other kinds
// corrupt or delay an answer that is otherwise generated normally, under
// capacity like any other.
func (f *Failure) Early() bool {
	switch f.Kind {
	case FailStatus, FailContextLength, FailContentFilter:
		return true
	case FailHang:
		return f.For == 0
	case FailReset:
		return f.AfterTokens == 0
	}
	return false
}

// Ending is what follows a stall or a malformed event: Then, or the
// kind's default (resume after a stall, eof after a malformed event).
// Other kinds have none ("").
func (f *Failure) Ending() string {
	switch {
	case f.Kind != FailStall && f.Kind != FailMalformed:
		return ""
	case f.Then != "":
		return f.Then
	case f.Kind == FailStall:
		return ThenResume
	}
	return ThenEOF
}

// RefusalStatus is the HTTP status of a call the provider refuses
// because its running batch and its queue are full (workload.Refuse):
// 503 on OpenAI's API, as vLLM answers, and 529 overloaded_error on
// Anthropic's.
func RefusalStatus(anthropic bool) int {
	if anthropic {
		return 529
	}
	return 503
}
