package upstream

import "time"

// Failure kinds.
const (
	FailStatus    = "status"    // an HTTP error in the protocol's shape
	FailReset     = "reset"     // TCP RST, before or mid-response
	FailHang      = "hang"      // never answer; wait for the client to give up
	FailMalformed = "malformed" // 200 with a body that is not JSON
	FailTruncate  = "truncate"  // close the connection partway through
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
	// AfterTokens is where reset and truncate cut the response: reset
	// with 0 cuts before any byte is sent; truncate with 0 cuts halfway.
	AfterTokens int `yaml:"after_tokens"`
}

// StatusCode is the HTTP code a status failure answers with: its
// status, 500 when it names none.
func (f *Failure) StatusCode() int {
	if f.Status == 0 {
		return 500
	}
	return f.Status
}

// Early reports whether the failure replaces the whole call (status,
// hang, reset before any byte), after its delay. Such a call never
// reaches the capacity model: it holds no slot, never waits and is never
// refused. The other kinds corrupt an answer that is otherwise generated
// normally, under capacity like any other.
func (f *Failure) Early() bool {
	switch f.Kind {
	case FailStatus, FailHang:
		return true
	case FailReset:
		return f.AfterTokens == 0
	}
	return false
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
