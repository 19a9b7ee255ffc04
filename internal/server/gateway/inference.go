package gateway

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	"github.com/sluice-gw/sluice/internal/server/idempotency"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// serveInference carries one inference request along the path described
// in the package comment.
func (g *Gateway) serveInference(w http.ResponseWriter, r *http.Request, ep protocol.Endpoint) {
	x := &exchange{start: g.now(), writeTimeout: g.writeTimeout, endpoint: ep}
	x.priority = g.defaultPri
	r = g.tracing.request(r, x)
	defer g.finish(x)
	defer func() {
		// The admission permit is released by its own defer before this
		// runs; here the panic only has to become one well-formed 500.
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			g.log.Error("handler panic", "panic", fmt.Sprint(v), "endpoint", ep.Name)
			x.fail(w, protocol.Internal, outcomeInternal, "panic", "internal error in the gateway", 0)
		}
	}()
	g.serve(w, r, x)
	if x.abort {
		// After the deferred releases and the log line: the client must
		// see a broken response, not a short one that looks whole.
		panic(http.ErrAbortHandler)
	}
}

// bodyFailed answers a request whose body could not be read.
func (g *Gateway) bodyFailed(w http.ResponseWriter, r *http.Request, x *exchange, err error) {
	// The rest of the body is not wanted: the connection closes after
	// the answer, rather than the server waiting to read it first.
	w.Header().Set("Connection", "close")
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		x.fail(w, protocol.TooLarge, outcomeClientError, "body_too_large",
			fmt.Sprintf("request body is larger than the gateway's limit of %d bytes (max_body_bytes)", g.intake.maxBody), 0)
	case errors.Is(err, errBodyShare):
		x.fail(w, protocol.RateLimited, outcomeClientError, "body_share",
			"the requests from your key (or, without one, your address) hold their whole share of the gateway's request-body memory (server.max_body_bytes_per_client); retry when they finish", time.Second)
	case errors.Is(err, errBodyBudget):
		x.fail(w, protocol.Overloaded, outcomeShed, "body_budget",
			"Sluice is holding as many request bodies as it may (server.max_body_bytes_in_flight); retry shortly", time.Second)
	case errors.Is(err, errBodyTimeout):
		x.fail(w, protocol.RequestTimeout, outcomeClientError, "body_timeout",
			fmt.Sprintf("the request body did not arrive within %s (server.body_read_timeout)", g.intake.timeout), 0)
	case r.Context().Err() != nil:
		g.clientGone(w, r, x)
	default:
		// The error text would name socket addresses; the client
		// knows its own connection broke.
		x.fail(w, protocol.InvalidRequest, outcomeClientError, "body_read",
			"the request body could not be read: the connection broke or the chunked encoding was malformed", 0)
	}
}

// readRequest reads a request's body and finds the model it names,
// which the caller's key must be allowed; otherwise it answers, and ok is
// false. The caller gives held back to the body budget when the request
// is done with its body, whatever ok is.
func (g *Gateway) readRequest(w http.ResponseWriter, r *http.Request, x *exchange) (m *model, body *protocol.Body, raw []byte, held bodyHold, ok bool) {
	raw, held, err := g.intake.read(w, r, g.intake.sourceOf(r, x))
	if err != nil {
		g.bodyFailed(w, r, x, err)
		return nil, nil, nil, held, false
	}
	m, body, ok = g.modelOf(w, x, raw)
	return m, body, raw, held, ok
}

// modelOf parses a request body and finds the model it names, which the
// caller's key must be allowed; otherwise it answers, and ok is false.
func (g *Gateway) modelOf(w http.ResponseWriter, x *exchange, raw []byte) (m *model, body *protocol.Body, ok bool) {
	body, err := protocol.ParseBodyWithin(raw, g.bodyLimits)
	if le, ok := protocol.IsLimit(err); ok {
		// Before any token is counted or byte translated: the work on
		// a body grows with its pieces as well as its bytes.
		kind, reason, param := protocol.TooLarge, "too_many_messages", "messages"
		if errors.Is(le, protocol.ErrTooDeep) {
			kind, reason, param = protocol.InvalidRequest, "too_deep", ""
		}
		x.failParam(w, kind, outcomeClientError, reason, le.Msg, param, 0)
		return nil, nil, false
	}
	if err != nil {
		param := ""
		if pe, ok := errors.AsType[*protocol.ParamError](err); ok {
			param = pe.Param
		}
		x.failParam(w, protocol.InvalidRequest, outcomeClientError, "malformed_body", strings.TrimPrefix(err.Error(), protocol.ErrMalformed.Error()+": "), param, 0)
		return nil, nil, false
	}
	x.stream = body.Stream
	m, ok = g.models[body.Model]
	if !ok {
		x.model = "unknown"
		x.fail(w, protocol.NotFound, outcomeClientError, "unknown_model",
			fmt.Sprintf("model %q is not configured on this gateway; available models: %s", body.Model, strings.Join(g.keys.usableModels(x), ", ")), 0)
		return nil, nil, false
	}
	x.model, x.requested = m.name, m.name
	return m, body, g.keys.mayUse(w, x, m.name)
}

// serve is serveInference's path, once a request is on record.
func (g *Gateway) serve(w http.ResponseWriter, r *http.Request, x *exchange) {
	ep := x.endpoint
	d := ep.Dialect
	if n := countFields(r.Header); n > g.maxHeaders {
		x.fail(w, protocol.HeadersTooLarge, outcomeClientError, "too_many_headers",
			fmt.Sprintf("the request has %d header fields; the gateway takes at most %d (server.max_headers)", n, g.maxHeaders), 0)
		return
	}

	if !g.keys.authenticate(w, r, x) {
		return
	}
	if err := g.classify(r, x); err != nil {
		x.fail(w, protocol.InvalidRequest, outcomeClientError, "bad_priority", err.Error(), 0)
		return
	}
	clientTimeout, err := clientDeadline(r.Header)
	if err != nil {
		x.fail(w, protocol.InvalidRequest, outcomeClientError, "bad_timeout", err.Error(), 0)
		return
	}

	// Shed from the headers alone when the global limit and the queue
	// have no room for this class: no body read, no upstream socket.
	if rej := g.runner.Check(lifecycle.Request{Priority: x.priority, Scope: admission.NoScope}); rej != nil && !g.idem.answered(r, x) {
		refuse(g.metrics, w, x, rej, time.Time{})
		return
	}

	m, body, raw, held, ok := g.readRequest(w, r, x)
	defer g.intake.bodies.give(held)
	if !ok {
		return
	}
	// A Responses API request is passed through to targets that serve
	// the API, or bridged: served as a chat request from here on, its
	// answer put back in the Responses API's shape (responses_bridge.go).
	if ep.IsResponses() {
		var bw http.ResponseWriter
		if m, body, bw, ok = g.bridgeResponses(w, x, m, body); !ok {
			return
		}
		if rw, bridged := bw.(*responsesWriter); bridged {
			defer rw.finish()
			w, ep, d = rw, x.endpoint, x.endpoint.Dialect
		}
	}
	// A model's targets of the other API are served by translating
	// (translate.go), which only chat requests can be.
	if p := m.targets[0].provider; !translates(ep) && !m.speaks(d) {
		x.fail(w, protocol.InvalidRequest, outcomeClientError, "wrong_dialect",
			fmt.Sprintf("model %q is served by an %s-style provider; call it through that API's endpoint, not %s", m.name, p.dialect, ep.Path), 0)
		return
	}
	// With an Idempotency-Key, the request may share another's
	// generation or stored answer instead (idempotency.go); without
	// one, this is a map lookup.
	if vv, ok := r.Header[idempotency.HeaderKey]; ok && g.idem != nil {
		g.idem.serve(w, r, x, vv, raw, m.route.Wait(clientTimeout), func(w http.ResponseWriter, r *http.Request) {
			g.generateCached(w, r, x, m, body, clientTimeout)
		})
		return
	}
	g.generateCached(w, r, x, m, body, clientTimeout)
}

// classify sets the request's priority from X-Sluice-Priority and the
// client's key, as lifecycle.Classify decides: priority is earned, not
// claimed.
func (g *Gateway) classify(r *http.Request, x *exchange) error {
	c, err := g.claim(r, x)
	if err != nil {
		return err
	}
	x.priority, x.downgraded = lifecycle.Classify(c)
	return nil
}

// claim is what a request says about its class (lifecycle.Claim): its
// X-Sluice-Priority, its key's class, or whether its credential is a
// declared critical key.
func (g *Gateway) claim(r *http.Request, x *exchange) (lifecycle.Claim, error) {
	c := lifecycle.Claim{Default: x.priority} // g.defaultPri, from the exchange
	if h := r.Header.Get("X-Sluice-Priority"); h != "" {
		if c.Header, c.Asked = admission.ParsePriority(strings.ToLower(h)); !c.Asked {
			return c, fmt.Errorf("X-Sluice-Priority: %q is not a priority class; use critical, interactive or background", h)
		}
	}
	switch {
	case x.key != nil:
		c.Keyed, c.Key = true, x.key.priority
	case g.keys.critical != nil:
		_, c.Declared = g.keys.critical[sha256.Sum256([]byte(clientKey(r)))]
	}
	return c, nil
}

// clientKey is the credential the client sent (which never goes
// upstream): a bearer token, or an x-api-key / api-key header.
func clientKey(r *http.Request) string {
	if a := r.Header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		return strings.TrimSpace(a[7:])
	}
	if k := r.Header.Get("X-Api-Key"); k != "" {
		return k
	}
	return r.Header.Get("Api-Key")
}

// clientDeadline is how long the client will wait for this attempt, when
// it says: X-Sluice-Timeout, or else X-Stainless-Timeout, the per-attempt
// timeout in seconds that the official OpenAI and Anthropic SDKs send.
// Zero: it did not say. Knowing it, Sluice stops waiting on an answer
// that cannot come in time (lifecycle's answering early), and the
// request's own deadline is never longer than the route's timeout, so a
// client can only shorten its own wait, never anyone else's.
func clientDeadline(h http.Header) (time.Duration, error) {
	if v := h.Get("X-Sluice-Timeout"); v != "" {
		return parseTimeout("X-Sluice-Timeout", v)
	}
	if v := h.Get("X-Stainless-Timeout"); v != "" {
		return parseTimeout("X-Stainless-Timeout", v)
	}
	return 0, nil
}

// parseTimeout reads a timeout header: a Go duration ("2.5s", "800ms")
// or a number of seconds.
func parseTimeout(name, v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		secs, ferr := strconv.ParseFloat(v, 64)
		if ferr != nil || math.IsNaN(secs) || math.IsInf(secs, 0) || secs > maxClientTimeout.Seconds() {
			return 0, fmt.Errorf("%s: %q is not a duration; write e.g. 30s or 1500ms", name, v)
		}
		d = time.Duration(secs * float64(time.Second))
	}
	if d <= 0 {
		return 0, fmt.Errorf("%s: %q must be positive", name, v)
	}
	return d, nil
}

// maxClientTimeout bounds a timeout header's seconds before they are
// converted, so that a huge number cannot overflow into a negative
// duration. The route's timeout caps the deadline anyway.
const maxClientTimeout = 24 * time.Hour

// shed answers a refusal from admission: 503 (OpenAI) or 529 (Anthropic)
// with the dialect's overloaded_error and an estimated Retry-After
// (lifecycle.Answer).
func shed(w http.ResponseWriter, x *exchange, rej *admission.Rejection) {
	reply := lifecycle.Answer(*rej)
	msg := fmt.Sprintf("Sluice is at capacity for %s requests (%s); retry after %s", rej.Priority, rej.Reason, rej.RetryAfter.Round(time.Millisecond))
	switch rej.Reason {
	case admission.ReasonUnavailable:
		msg = fmt.Sprintf("no provider for model %q is taking calls now (%s: breakers open, a provider asked for a pause, or its per-minute budget is spent); retry after %s", x.model, rej.Reason, rej.RetryAfter.Round(time.Millisecond))
	case admission.ReasonTooSlow:
		msg = fmt.Sprintf("provider %s is out of rotation and too slow to answer before this request's deadline, and no other target can take it (%s); retry after %s", x.provider, rej.Reason, rej.RetryAfter.Round(time.Millisecond))
	}
	if reply.NoRetry {
		// Most of this class is being refused: a retry would more likely
		// be refused than served (admission.fail_fast). The
		// OpenAI and Anthropic SDKs read this header before the status.
		w.Header().Set("X-Should-Retry", "false")
		msg += "; most " + rej.Priority.String() + " requests are being refused, so a retry is unlikely to be served: do not retry at once"
	}
	kind, outcome := replyStatus(reply)
	x.fail(w, kind, outcome, string(rej.Reason), msg, reply.RetryAfter)
}

// ErrShutdown is the cause of every request's context once a shutdown
// stops waiting for in-flight work (Host.Shutdown).
var ErrShutdown = errors.New("gateway: shutting down")

// clientGone records a request whose client left, or stopped reading
// until a write timed out; nobody is left to answer. A request ended by
// shutdown is told so instead: a 503/529, or an error event mid-stream.
func (g *Gateway) clientGone(w http.ResponseWriter, r *http.Request, x *exchange) {
	if errors.Is(context.Cause(r.Context()), ErrShutdown) {
		msg := "Sluice is shutting down; retry the request"
		switch {
		case !x.wroteHeader:
			x.fail(w, protocol.Overloaded, outcomeCancelled, "shutdown", msg, time.Second)
		case x.stream:
			writerFor(w, x, g.writeTimeout).write(x.streamErrorEvent(protocol.Overloaded, msg))
		default:
			x.abort = true
		}
		x.outcome, x.reason = outcomeCancelled, "shutdown"
		return
	}
	x.outcome, x.reason = outcomeCancelled, "client_disconnected"
	if x.stalled {
		x.reason = "client_stalled" // connected, but a write timed out
	}
	if !x.wroteHeader {
		x.status = 499
	}
}

// finish records the exchange in metrics and writes its log line, now
// or, when a race's loser is still to be recorded, once it is
// (ledger.go).
func (g *Gateway) finish(x *exchange) {
	dur := g.now().Sub(x.start)
	g.tracing.endRequest(x)
	model, provider := x.model, x.provider
	if model == "" {
		model = "-"
	}
	if provider == "" {
		provider = "-"
	}
	m := g.metrics
	m.Requests.WithLabelValues(x.endpointName(), model, provider, x.priority.String(), x.outcome, x.reason).Inc()
	m.Duration.WithLabelValues(x.endpointName(), model, x.outcome).Observe(dur.Seconds())
	if x.upstreamStatus != 0 {
		m.Upstream.WithLabelValues(provider, model).Observe(x.upstreamDur.Seconds())
		if x.ttft > 0 {
			m.TTFT.WithLabelValues(provider, model).Observe(x.ttft.Seconds())
		}
	}
	if x.tally.finish(dur) {
		g.logRequest(x)
	}
}
