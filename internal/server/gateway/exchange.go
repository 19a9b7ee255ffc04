package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	"github.com/sluice-gw/sluice/internal/core/price"
	"github.com/sluice-gw/sluice/internal/core/quota"
	"github.com/sluice-gw/sluice/internal/core/spend"
	"github.com/sluice-gw/sluice/internal/server/spendstore"
	"github.com/sluice-gw/sluice/internal/wire/contract"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// Outcomes label sluice_requests_total and the request log.
const (
	outcomeOK            = "ok"
	outcomeShed          = "shed"
	outcomeClientError   = "client_error"
	outcomeUpstreamError = "upstream_error"
	outcomeTimeout       = "timeout"
	outcomeCancelled     = "cancelled" // the client went away
	outcomeInternal      = "internal_error"
)

// exchange is the record of one client request, filled in along the
// request path and reported once, when the handler returns. Its parts
// are owned by the stages that fill them (stages.go): each is written by
// one stage, or by the relay, and read by the stages after it and by the
// record (finish).
type exchange struct {
	start    time.Time
	endpoint protocol.Endpoint
	stream   bool
	// writeTimeout bounds the write of an error answer
	// (server.write_timeout; zero: unbounded, in tests).
	writeTimeout  time.Duration
	who           // identity: the key and the class (keys.go, inference.go)
	record        // what the client was answered, for the log and metrics
	budgetHold    // the counted input and the fleet's take (budgets.go, fleet.go)
	contractState // the declared structured output and its verdict (validation.go)
	spendState    // the spend reservations (spend.go)
	routeState    // the model and what changed it (contextroute.go, budgets.go, translate.go)
	upstreamState // the calls made (attempt.go, forward.go)
	relayState    // the answer's stream and usage (relay.go)
	// tally sums the request's call records, for its log line
	// (ledger.go).
	tally tally
}

// who is the request's identity: its key and its class.
type who struct {
	priority admission.Priority
	// downgraded: the client asked for a class its key does not allow.
	downgraded bool
	// key is the client's virtual key, when keys are configured and it
	// sent a known one.
	key *virtualKey
	// idem is what its Idempotency-Key made of the request (leader,
	// joined, replayed, ...; idempotency.go); borrowed: its answer is
	// another request's, which spent the tokens.
	idem     string
	borrowed bool
	// span is the request's trace span; nil with tracing off
	// (tracing.go).
	span trace.Span
}

// record is what the client was answered.
type record struct {
	status      int // sent to the client; 499 when the client left first
	wroteHeader bool
	outcome     string
	reason      string
	bytesOut    int64
	// abort: the answer broke after its status went out; the connection
	// is aborted so the client cannot take a short body for a whole one.
	abort bool
	// stalled: a write to the client timed out (it stopped reading).
	stalled bool
	// cache is what the response cache did, as X-Sluice-Cache said
	// (hit, miss, bypass; cache.go); "" when the cache is off.
	cache string
}

// budgetHold is the request's count and what the fleet's shared budget
// holds for it.
type budgetHold struct {
	// inputTokens is the request's input as counted before admission
	// (budgets.go); zero when nothing needs it counted.
	inputTokens int64
	exactCount  bool // inputTokens is in the model's own encoding
	// namedMax: the request named its max_tokens (a 413 for its output
	// says what to set when it did not).
	namedMax bool
	// shared: the key's budget in the fleet's store holds sharedReserved
	// for this request; sharedStatus is that budget as the store last
	// answered (haveShared), for the rate-limit headers.
	shared         bool
	haveShared     bool
	sharedStatus   [3]quota.Status
	sharedReserved quota.Cost
}

// contractState is the structured output the request declared (nil:
// none), onInvalid its model's action; verdict, invalid and
// invalidReason the answer's verdict (validation.go); verdictEvent: the
// model sends a stream's verdict as a trailing event too
// (validation.stream_event).
type contractState struct {
	contract      *contract.Contract
	verdictEvent  bool
	onInvalid     string
	verdict       uint8
	invalid       bool
	invalidReason string
}

// spendState is the request's spend: spendHold its reservation until its
// first call takes it; spendWinner the answering call's, settled when
// the hop ends with what its call records cost (spend.go, ledger.go).
type spendState struct {
	spendHold, spendWinner *spendHold
	// spendBase is the request's first reservation, whose sizes price
	// a second call's.
	spendBase *spendHold
}

// routeState is the model the request runs on and what changed it.
type routeState struct {
	model string
	// requested is the model the client asked for; model the one that
	// served it, which differs when degraded names how.
	requested, degraded string
	// dropped is what the answer's X-Sluice-Dropped named.
	dropped string
	// cross is the request translated for its model's targets of the
	// other API, when it has any (translate.go).
	cross *crossRequest
	// contextRoute is the route of the model the current hop runs on;
	// contextNext the model a context-length refusal sends the request
	// to instead (contextroute.go).
	contextRoute *lifecycle.Route
	contextNext  *model
	// bridge is set when a Responses API request is served as a chat
	// one (responses_bridge.go); endpoint is then chat_completions.
	bridge *responsesBridge
}

// upstreamState is the calls the request made.
type upstreamState struct {
	admitted bool // the engine started it
	waited   time.Duration
	provider string
	attempts int // upstream calls made
	// second is what made the call that answered, when not the first:
	// hedge, rescue, retry, retry_same, retry_after or first_token (X-Sluice-Second-Call).
	second         string
	upstreamStatus int
	upstreamStart  time.Time
	upstreamDur    time.Duration
	upstreamModel  string
	requestID      string // the provider's request id, safe to log
	// unknownModel: the provider's 404 said the model or the path is
	// unknown there (protocol.UnknownModel), not something the body names.
	unknownModel bool
	// retryAfter is the provider's Retry-After on a refusal, for the
	// engine (which bounds it).
	retryAfter time.Duration
	// creds are the secrets the calls were made with: whatever leaves
	// for the client, the log or a trace is scrubbed of them
	// (redact.go).
	creds credentials
}

// relayState is the answer as it was relayed.
type relayState struct {
	ttft time.Duration
	// finish is the provider's finish or stop reason, when its answer
	// said (for traces).
	finish       string
	outputTokens int // from the answer's usage, or estimated from SSE events
	// usageKnown: outputTokens is the provider's own count.
	usageKnown bool
	// injectedUsage: Sluice asked an OpenAI-style stream for its usage
	// chunk, which the client did not ask for and is not sent.
	injectedUsage bool
	// reportedInput is the input count the provider's usage reported
	// (0: none), which settles the key's input and is what the metrics
	// and the log show when there is one.
	reportedInput int64
	// reportedCached is how much of reportedInput the provider served
	// from its prompt cache (OpenAI's cached_tokens, Anthropic's
	// cache_read_input_tokens), priced at the cached-input price.
	reportedCached int64
	// relayed is the check of the stream being relayed to the client,
	// once one is (streamErrorEvent numbers a Responses API error event
	// after its last event).
	relayed *protocol.StreamCheck
	// cont is what a broken stream needs to be continued, and names the
	// continuation when it was (relay_continue.go).
	cont contState
	// outputLimit is how much output is relayed of the answer, for all
	// its choices answers (runner.Call.OutputLimit; 0: no limit), where
	// a stream is cut as a length stop (relay_cap.go).
	outputLimit, choices int64
}

// fail is the one place an error answer is written and recorded.
func (x *exchange) fail(w http.ResponseWriter, k protocol.Kind, outcome, reason, msg string, retryAfter time.Duration) {
	x.failParam(w, k, outcome, reason, msg, "", retryAfter)
}

// failParam is fail for an error that request parameter param caused,
// which an OpenAI-shaped answer names in its "param" field.
func (x *exchange) failParam(w http.ResponseWriter, k protocol.Kind, outcome, reason, msg, param string, retryAfter time.Duration) {
	x.outcome, x.reason = outcome, reason
	if x.wroteHeader {
		return // a stream already started; relay wrote its own error event
	}
	x.wroteHeader = true
	x.status = x.endpoint.Dialect.Status(k)
	if x.writeTimeout > 0 {
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(x.writeTimeout))
	}
	x.endpoint.Dialect.WriteErrorParam(w, k, msg, param, retryAfter)
}

// logAttrs is the request's log line. Its tokens and cost are its call
// records' sums (ledger.go), read once every call is recorded.
func (x *exchange) logAttrs(model, provider string) []slog.Attr {
	t := &x.tally
	t.mu.Lock()
	defer t.mu.Unlock()
	dur := t.dur
	attrs := make([]slog.Attr, 0, 16)
	attrs = append(attrs,
		slog.String("endpoint", x.endpointName()),
		slog.String("model", model),
		slog.String("provider", provider),
		slog.String("priority", x.priority.String()),
		slog.Bool("stream", x.stream),
		slog.Int("status", x.status),
		slog.String("outcome", x.outcome),
		slog.Duration("duration", dur),
	)
	if x.reason != "" {
		attrs = append(attrs, slog.String("reason", x.reason))
	}
	if x.downgraded {
		attrs = append(attrs, slog.String("priority_note", "critical is reserved for declared keys; served as interactive"))
	}
	if x.waited > 0 {
		attrs = append(attrs, slog.Duration("queue_wait", x.waited))
	}
	if x.upstreamStatus != 0 {
		attrs = append(attrs, slog.Int("upstream_status", x.upstreamStatus), slog.Duration("ttft", x.ttft), slog.Duration("upstream_duration", x.upstreamDur))
	}
	if x.requestID != "" {
		attrs = append(attrs, slog.String("upstream_request_id", x.requestID))
	}
	if x.bytesOut > 0 {
		attrs = append(attrs, slog.Int64("bytes_out", x.bytesOut))
	}
	if t.calls > 0 {
		attrs = append(attrs, slog.Int("calls", t.calls))
	}
	switch {
	case t.inKnown && t.billed > 0:
		attrs = append(attrs, slog.Int64("input_tokens", t.use.Input+t.use.CachedInput))
	case t.billed == 0 && x.inputTokens > 0:
		// No call was billed: the count is what the request would
		// have sent, not what it used.
		attrs = append(attrs, slog.Int64("counted_input_tokens", x.inputTokens))
	}
	if t.use.Output > 0 {
		attrs = append(attrs, slog.Int64("output_tokens", t.use.Output))
	}
	if t.cost > 0 {
		attrs = append(attrs, slog.Float64("cost_dollars", t.cost.Dollars()))
	}
	if x.key != nil {
		attrs = append(attrs, slog.String("key", x.key.name), slog.String("tenant", x.key.tenant))
	}
	if x.degraded != "" {
		attrs = append(attrs, slog.String("requested_model", x.requested), slog.String("degraded", x.degraded))
	}
	if x.dropped != "" {
		attrs = append(attrs, slog.String("dropped", x.dropped))
	}
	if x.idem != "" {
		attrs = append(attrs, slog.String("idempotency", x.idem))
	}
	if x.cache != "" {
		attrs = append(attrs, slog.String("cache", x.cache))
	}
	if x.second != "" {
		attrs = append(attrs, slog.String("second_call", x.second), slog.Int("attempts", x.attempts))
	}
	if x.cont.continued != "" {
		attrs = append(attrs, slog.String("continued", x.cont.continued))
	}
	return attrs
}

// crossRequest is a request's body in the other dialect.
type crossRequest struct {
	body *protocol.Body // model still the client's
	// includeUsage: the client (not the gateway) asked for a usage chunk.
	includeUsage bool
	dropped      string // comma-separated, for X-Sluice-Dropped
}

// spendHold is one call's reservation.
type spendHold struct {
	// store keeps the reservation; log hears of a settlement it lost.
	store    spendstore.Store
	log      *slog.Logger
	buckets  []spend.Bucket
	reserved price.Micros
	// input, choices and output (per choice) are the request's, which
	// price a second call's reservation and a call that lost a race.
	input, choices, output int64
	once                   sync.Once
}

// settle replaces the reservation with what the call cost, once.
func (h *spendHold) settle(actual price.Micros) {
	if h == nil {
		return
	}
	h.once.Do(func() {
		if d := actual - h.reserved; d != 0 {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := h.store.Adjust(ctx, h.buckets, d); err != nil {
				h.log.Warn("spend: a settlement was not recorded", "cause", err.Error())
			}
		}
	})
}
