package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/sluice-gw/sluice/internal/server/metrics"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/wire/contract"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// Structured output, held to whichever backend serves it. A chat request
// that declares a response_format (json_schema or json_object) or tools
// with input schemas gets its contract compiled once, before admission
// (validate.ForRequest; a schema that does not compile, or is over the
// limits, is a 400 in the client's API). Every answer made for it is
// then checked, in whatever dialect its provider spoke:
//
//   - A whole answer is read whole before its call is committed
//     (readAnswer), so its verdict can still change what the client gets.
//     Invalid with on_invalid retry, the call is not usable: forward
//     treats it as a failed call, and the engine's Retry (the one path
//     every failure takes, under the retries: budget) may send the
//     request again, on the next target or the same one; with no retry
//     left it is relayed annotated. With refuse it is a 502; with
//     annotate it is relayed. Either way X-Sluice-Validation says the
//     verdict, and X-Sluice-Validation-Reason why.
//   - A stream is checked at its end, from the text and tool-call
//     arguments collected as it passed (validate.Collector, bounded);
//     its answer has gone out by then, so it cannot be retried or
//     refused, and its verdict goes in HTTP trailers,
//     X-Sluice-Validation and X-Sluice-Validation-Reason. Nothing is
//     added to the stream itself: a client that parses every event as
//     its vendor's (the Vercel AI SDK does) fails on one its vendor
//     never sends. A model whose operator opts in
//     (validation.stream_event) also gets the verdict as a trailing
//     event, "event: sluice.validation" after the stream's own last
//     event.
//
// Every verdict is counted in sluice_validation_total against the
// provider that made the answer, and is an error in its breaker when the
// model's validation.count_in_breaker says so (lifecycle.Outcome.Invalid).
// A request that declares no structured output costs two span checks.

const (
	headerVerdict = "X-Sluice-Validation"
	headerReason  = "X-Sluice-Validation-Reason"
	// trailerEvent names the stream trailer's event.
	trailerEvent = "sluice.validation"
	// maxReason bounds the reason's length in a header or trailer.
	maxReason = 300
)

// contractOf compiles the structured output a request declares, for
// chat endpoints; ok false: it could not be, and the client has its 400
// (or its 504, when its deadline passed while compiles ahead of it ran).
func (h *hop) contractOf() bool {
	g, w, r, x, m, body, out, deadline := h.g, h.w, h.r, h.x, h.m, h.body, h.out, h.req.Deadline
	if !translates(x.endpoint) {
		return true
	}
	rf, tools := body.StructuredOutput(x.endpoint.Dialect), body.Tools()
	if rf == nil && tools == nil {
		return true
	}
	ctx, cancel := context.WithDeadline(r.Context(), deadline)
	defer cancel()
	c, err := contract.ForRequest(ctx, x.endpoint.Dialect, rf, tools)
	switch {
	case err == nil:
	case r.Context().Err() != nil:
		g.clientGone(w, r, x)
		return false
	case ctx.Err() != nil:
		x.fail(w, protocol.Timeout, outcomeTimeout, "compile_deadline",
			fmt.Sprintf("the request's %s deadline passed while it waited to have its schemas compiled", deadline.Sub(x.start).Round(time.Millisecond)), 0)
		return false
	default:
		x.fail(w, protocol.InvalidRequest, outcomeClientError, "bad_schema",
			fmt.Sprintf("the request's structured output cannot be checked: %v", err), 0)
		return false
	}
	if c != nil {
		out.contract, out.onInvalid, out.model = c, m.onInvalid, m.name
		x.contract, x.onInvalid, x.verdictEvent = c, m.onInvalid, m.verdictEvent
	}
	return true
}

// onInvalidOf is a model's validation.on_invalid, annotate when unset.
func onInvalidOf(v config.Validation) string {
	if v.OnInvalid == "" {
		return config.OnInvalidAnnotate
	}
	return v.OnInvalid
}

// bodyOf puts bytes already read back in front of a response's body, so
// the relays read the answer as it came.
type bodyOf struct {
	io.Reader
	io.Closer
}

// readAnswer reads a whole 2xx answer to a request with a contract and
// checks it, before the call is committed. A read that breaks is a
// failed call, like a stream cut before its first token. An answer that
// is not JSON is left for relayWhole to refuse as malformed.
func readAnswer(m *metrics.Metrics, a *attempt, out *outgoing) {
	data, err := io.ReadAll(io.LimitReader(a.resp.Body, maxTranslatedBody+1))
	if err != nil {
		a.resp.Body.Close()
		a.resp, a.err = nil, errOrEOF(err)
		return
	}
	a.resp.Body = bodyOf{bytes.NewReader(data), a.resp.Body}
	if !isJSON(a.resp.Header) || !json.Valid(data) && len(data) <= maxTranslatedBody {
		return
	}
	a.checked = true
	a.retryInvalid = out.onInvalid == config.OnInvalidRetry
	if len(data) > maxTranslatedBody {
		a.invalid = fmt.Sprintf("the answer is over %d bytes, more than the gateway checks", maxTranslatedBody)
	} else {
		ans, err := contract.ParseAnswer(a.t.provider.dialect, data)
		if err == nil {
			err = out.contract.Check(ans)
		}
		switch {
		case contract.IsCostly(err):
			a.unchecked = reasonText(a.creds.scrubber(), err.Error())
		case err != nil:
			a.invalid = reasonText(a.creds.scrubber(), err.Error())
		}
	}
	countVerdict(m, a.t.provider.name, out.model, resultOf(a.invalid == "", a.unchecked != ""), false)
}

// resultOf is a verdict's sluice_validation_total result.
func resultOf(valid, unchecked bool) string {
	switch {
	case unchecked:
		return "unchecked"
	case valid:
		return "valid"
	}
	return "invalid"
}

func countVerdict(m *metrics.Metrics, provider, model, result string, stream bool) {
	s := "false"
	if stream {
		s = "true"
	}
	m.Validation.WithLabelValues(provider, model, result, s).Inc()
}

// reasonText makes a verdict's reason fit for a header: printable ASCII,
// bounded, and scrubbed of the provider's key (the reason quotes bits of
// its answer). It scrubs first: a bound that cut through the key would
// leave a part of it that no longer matches.
func reasonText(k *keyScrub, s string) string {
	b := k.text([]byte(s))
	if len(b) > maxReason {
		b = append(b[:maxReason:maxReason], "..."...)
	}
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			b[i] = '?'
		}
	}
	return string(b)
}

// markVerdict tells the client a checked whole answer's verdict, in
// headers, as it is relayed.
func markVerdict(h http.Header, x *exchange) {
	switch x.verdict {
	case verdictValid:
		h.Set(headerVerdict, "valid")
	case verdictInvalid:
		h.Set(headerVerdict, "invalid")
		h.Set(headerReason, x.invalidReason)
	case verdictUnchecked:
		h.Set(headerVerdict, "unchecked")
		h.Set(headerReason, x.invalidReason)
	}
}

// Verdicts on an exchange's answer.
const (
	verdictNone uint8 = iota
	verdictValid
	verdictInvalid
	// verdictUnchecked: checking took too long (validate.ErrCostly); the
	// answer goes out as it came, its reason in invalidReason.
	verdictUnchecked
)

// judged records attempt a's verdict on x, as it is about to be relayed
// or refused; true: the client is to get a 502 instead (on_invalid
// refuse).
func judged(x *exchange, a *attempt, onInvalid string) (refuse bool) {
	if !a.checked {
		return false
	}
	if a.unchecked != "" {
		x.verdict, x.invalidReason = verdictUnchecked, a.unchecked
		return false
	}
	if a.invalid == "" {
		x.verdict = verdictValid
		return false
	}
	x.verdict, x.invalid, x.invalidReason = verdictInvalid, true, a.invalid
	return onInvalid == config.OnInvalidRefuse
}

// refuseInvalid answers a 502 for an answer that failed validation.
func refuseInvalid(w http.ResponseWriter, x *exchange, a *attempt, now time.Time) {
	a.resp.Body.Close()
	x.upstreamDur = now.Sub(x.upstreamStart)
	w.Header().Set(headerVerdict, "invalid")
	w.Header().Set(headerReason, x.invalidReason)
	x.fail(w, protocol.Upstream, outcomeUpstreamError, reasonInvalidAnswer,
		fmt.Sprintf("provider %s's answer failed validation against the request's declared structured output: %s", a.t.provider.name, x.invalidReason), 0)
}

// streamVerdict judges a stream that ended well, from what its collector
// gathered, counts it, and sets it in the response's trailers (h, the
// response's header map, whose http.TrailerPrefix keys net/http sends
// after the body). It returns the verdict as the stream's trailing
// event only when the model asks for one (validation.stream_event).
func streamVerdict(m *metrics.Metrics, h http.Header, x *exchange, p *provider, k *contract.Collector) []byte {
	ans, err := k.Answer()
	if err == nil {
		err = x.contract.Check(ans)
	}
	valid := err == nil
	t := trailer{Type: trailerEvent, Valid: &valid}
	x.verdict = verdictValid
	switch {
	case contract.IsCostly(err):
		t.Valid, t.Reason = nil, reasonText(x.creds.scrubber(), err.Error())
		x.verdict, x.invalidReason = verdictUnchecked, t.Reason
	case err != nil:
		t.Reason = reasonText(x.creds.scrubber(), err.Error())
		x.verdict, x.invalid, x.invalidReason = verdictInvalid, true, t.Reason
	}
	countVerdict(m, p.name, x.model, resultOf(valid, t.Valid == nil), true)
	trailers := http.Header{}
	markVerdict(trailers, x)
	for k, v := range trailers {
		h[http.TrailerPrefix+k] = v
	}
	if !x.verdictEvent {
		return nil
	}
	data, _ := json.Marshal(t)
	ev := make([]byte, 0, len(data)+40)
	ev = append(ev, "event: "+trailerEvent+"\ndata: "...)
	return append(append(ev, data...), "\n\n"...)
}

// trailer is a stream's verdict event's data; Valid is null for an
// answer that could not be judged (verdictUnchecked).
type trailer struct {
	Type   string `json:"type"`
	Valid  *bool  `json:"valid"`
	Reason string `json:"reason,omitempty"`
}
