package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"

	"github.com/sluice-gw/sluice/internal/wire/protocol"
	"github.com/sluice-gw/sluice/internal/wire/translate"
)

// The Responses API bridge. A /v1/responses request for a model whose
// targets do not all serve the Responses API is translated once into a
// Chat Completions request (translate.ResponsesToChat) and from then on
// is a chat request: every stage of the gateway (budgets, validation,
// routing, translation on to Anthropic and the native codecs, failover,
// hedging, continuation) treats it as one. Only what the client reads
// is put back in the Responses API's shape, by responsesWriter, which
// stands between the gateway and the client's connection: a whole
// chat.completion becomes a response object, a chunk stream the
// response.* event sequence. Error answers need nothing: the two APIs
// share OpenAI's error body.
//
//   - A model all of whose targets serve the Responses API is passed
//     through as before (responses.go): nothing is translated.
//   - What the bridge cannot carry (previous_response_id, built-in tools,
//     background mode, stored prompts: translate.ResponsesToChat's
//     refusals) goes to the targets that serve the API natively, passed
//     through; with none, the client has a 400 naming the parameter.
//   - A mixed model (some targets serve it, some do not) is bridged for
//     all of them, so one request reads the same whichever target
//     answers, and a failover may cross from one kind to the other.
//   - What the bridge dropped is named in X-Sluice-Dropped, ahead of
//     what a further translation dropped.
//   - The request is logged and counted as endpoint responses.

// responsesBridge is what a bridged request keeps: what the bridge
// dropped, for X-Sluice-Dropped.
type responsesBridge struct {
	dropped string
	// keep: the answer's items are kept for item_reference (the client
	// did not say store: false).
	keep bool
}

// bridgeResponses decides how a /v1/responses request for m is served:
// passed through to the targets that serve the API, or translated to a
// chat request for all of them. It returns the model and body to serve,
// and the writer to answer into; ok false: the client has its 400.
func (g *Gateway) bridgeResponses(w http.ResponseWriter, x *exchange, m *model, body *protocol.Body) (*model, *protocol.Body, http.ResponseWriter, bool) {
	native := m.keep(func(t target) bool { return t.provider.responses.Load() })
	if len(native.targets) == len(m.targets) {
		return m, body, w, true
	}
	tr, err := translate.ResponsesToChat(body.Raw(), translate.Options{Unsupported: m.unsupported, Items: g.items.of(x)})
	var chat *protocol.Body
	if err == nil {
		chat, err = protocol.ParseBodyWithin(tr.Body, g.bodyLimits)
		if err != nil {
			// The translator's own output did not parse: a gateway
			// bug, never the client's.
			g.log.Error("bridged Responses API request does not parse", "error", err.Error(), "model", m.name)
		}
	}
	if err == nil {
		x.endpoint = protocol.Endpoints[0] // chat_completions, from here on
		x.bridge = &responsesBridge{dropped: strings.Join(tr.Dropped, ","), keep: !tr.NoStore}
		return m, chat, &responsesWriter{g: g, x: x, w: w}, true
	}
	if len(native.targets) > 0 {
		return native, body, w, true
	}
	why, param := "it could not be translated: "+err.Error(), ""
	if te, ok := errors.AsType[*translate.Error](err); ok {
		why = fmt.Sprintf("parameter %s (at %s) has no counterpart in the chat completions API: %s", te.Param, te.Path, te.Reason)
		param = te.Path
	}
	var names []string
	for _, t := range m.targets {
		names = append(names, t.provider.name)
	}
	x.failParam(w, protocol.InvalidRequest, outcomeClientError, "no_responses_target",
		fmt.Sprintf("model %q cannot take this Responses API request: none of its providers (%s) serves /v1/responses natively, and %s",
			m.name, strings.Join(names, ", "), why), param, 0)
	return m, body, w, false
}

// endpointName is the request's endpoint for metrics, traces and the
// log: the client's, also when the request was bridged.
func (x *exchange) endpointName() string {
	if x.bridge != nil {
		return protocol.Responses.Name
	}
	return x.endpoint.Name
}

// responsesWriter puts a bridged request's chat answer in the Responses
// API's shape on its way to the client. A stream is translated event by
// event as it is written; a whole answer is held until the handler is
// done (finish), because the two bodies differ in length and a failure
// to translate must still be able to become a 502.
type responsesWriter struct {
	g *Gateway
	x *exchange
	w http.ResponseWriter

	status  int  // a whole 2xx answer's, held
	stream  bool // a 2xx event stream: translated as it goes
	tr      translate.Stream
	failed  bool   // the stream could not be translated; the rest is dropped
	pending []byte // a part event, until the rest of it comes
	sent    int    // events written: the next one's sequence_number
	whole   bytes.Buffer
	out     []byte
}

func (b *responsesWriter) Header() http.Header { return b.w.Header() }

// Unwrap lets http.ResponseController reach the connection (write
// deadlines, flushes).
func (b *responsesWriter) Unwrap() http.ResponseWriter { return b.w }

func (b *responsesWriter) WriteHeader(status int) {
	if b.status != 0 || b.stream {
		return
	}
	h := b.w.Header()
	if d := b.x.bridge.dropped; d != "" {
		if more := h.Get("X-Sluice-Dropped"); more != "" {
			d += "," + more
		}
		h.Set("X-Sluice-Dropped", d)
	}
	if status < 200 || status > 299 {
		// An error body is OpenAI's, in both APIs.
		b.status = -1
		b.w.WriteHeader(status)
		return
	}
	h.Del("Content-Length")
	if mt, _, _ := mime.ParseMediaType(h.Get("Content-Type")); mt == "text/event-stream" {
		b.stream = true
		b.tr = translate.NewStreamToResponses(translate.StreamConfig{Created: b.g.now().Unix()})
		b.w.WriteHeader(status)
		return
	}
	b.status = status
}

func (b *responsesWriter) Write(p []byte) (int, error) {
	switch {
	case b.status == 0 && !b.stream:
		b.WriteHeader(http.StatusOK)
		return b.Write(p)
	case b.status == -1:
		return b.w.Write(p)
	case !b.stream:
		return b.whole.Write(p)
	}
	if b.failed {
		return len(p), nil
	}
	b.pending = append(b.pending, p...)
	events, n := translate.ParseEvents(b.pending)
	b.out = b.out[:0]
	for _, ev := range events {
		if strings.HasPrefix(ev.Name, "sluice.") {
			// Sluice's own event, which a model's operator opted into
			// (validation.stream_event): passed on as it is.
			b.out = translate.AppendEvent(b.out, ev)
			continue
		}
		outs, err := b.tr.Feed(ev)
		for _, o := range outs {
			b.out = translate.AppendEvent(b.out, o)
			if r := responseOf(o.Name, o.Data); r != nil && b.x.bridge.keep {
				b.g.items.keep(itemScope(b.x), r)
			}
		}
		b.sent += len(outs)
		if err != nil {
			b.failed = true
			b.g.log.Error("a bridged stream could not be put in the Responses API's shape", "error", err.Error(), "model", b.x.model)
			b.out = append(b.out, protocol.ResponsesStreamErrorEvent(protocol.Upstream, "the answer could not be put in the Responses API's shape", int64(b.sent))...)
			break
		}
	}
	b.pending = append(b.pending[:0], b.pending[n:]...)
	if len(b.out) > 0 {
		if _, err := b.w.Write(b.out); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Flush sends what a stream has written; a whole answer is held.
func (b *responsesWriter) Flush() {
	if b.stream {
		_ = http.NewResponseController(b.w).Flush()
	}
}

// finish writes a whole answer, translated, once the handler is done
// with it.
func (b *responsesWriter) finish() {
	if b.status <= 0 || b.stream {
		return
	}
	out, err := translate.ChatToResponse(b.whole.Bytes(), b.g.now().Unix())
	if err != nil {
		b.g.log.Error("a bridged answer could not be put in the Responses API's shape", "error", err.Error(), "model", b.x.model)
		b.x.wroteHeader = false
		b.x.fail(b.w, protocol.Upstream, outcomeUpstreamError, "upstream_untranslatable",
			fmt.Sprintf("provider %s sent an answer that cannot be put in the Responses API's shape", b.x.provider), 0)
		return
	}
	if b.x.bridge.keep {
		b.g.items.keep(itemScope(b.x), out)
	}
	b.w.WriteHeader(b.status)
	_, _ = b.w.Write(out)
}
