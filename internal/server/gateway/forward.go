package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	"github.com/sluice-gw/sluice/internal/server/runner"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
	"github.com/sluice-gw/sluice/internal/wire/translate"
)

// Non-streaming answers are relayed as they arrive, not held whole: a
// 2,048-input embeddings call answers tens of megabytes, and sixteen of
// those buffered at once would be the process's memory. The sizes below
// bound what is held.
const (
	// wholeBodyLimit: a success answer up to this size is read whole and
	// checked before its status goes out, so a malformed one becomes a
	// 502; a longer one is relayed as it arrives and checked on the way
	// (relayLarge). Chat answers are almost all under it.
	wholeBodyLimit = 64 << 10
	// errorBodyLimit bounds a provider's error answer, which is read
	// whole, checked and scrubbed before the client sees it.
	errorBodyLimit = 64 << 10
	// relayChunk is the read size when relaying a large answer.
	relayChunk = 32 << 10
)

// upstreamRequest builds the call to t's provider at base (its API root,
// or its replica's): the client headers its
// API needs and nothing else (headers.go), the operator's own headers,
// the provider's key, the body with its model rewritten (read from the
// request's one buffer, not copied), and the time left.
func upstreamRequest(ctx context.Context, r *http.Request, t target, base string, ep protocol.Endpoint, out *outgoing, deadline time.Time, creds *credentials) (*http.Request, error) {
	p := t.provider
	// The request's set knows the call's secrets before it is made: the
	// provider's own now, its signer's as it signs.
	ctx = creds.calling(ctx, p)
	// The client's query string is not passed on either: no model API's
	// POST takes one from the caller, and a provider that routes on one
	// would let a client's query fail its calls for everyone.
	ctx, path := adapterOf(out.client, t).call(ctx, out, t, ep)
	br := out.reader(t)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.callURL(base, path, t.model), br)
	if err != nil {
		return nil, err
	}
	req.ContentLength = br.Len()
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(out.reader(t)), nil }
	copyRequestHeaders(req.Header, r.Header, p.forward)
	for k, vv := range p.headers {
		req.Header[k] = vv
	}
	p.authorize(req.Header)
	req.Header["User-Agent"] = userAgentValue
	// A downstream Sluice (or any upstream that reads it) learns how much
	// time is left; the context enforces it here either way.
	req.Header.Set("X-Sluice-Timeout", strconv.FormatInt(time.Until(deadline).Milliseconds(), 10)+"ms")
	return req, nil
}

// callURL is where a call to API path (below the version prefix, e.g.
// /chat/completions) for upstream model goes. Azure OpenAI names the
// model in the path, as a deployment, and the API's version in a query:
// {endpoint}/openai/deployments/{deployment}/chat/completions?api-version=V.
func (p *provider) callURL(base, path, model string) string {
	if p.azureVersion == "" {
		return base + path
	}
	return base + "/openai/deployments/" + url.PathEscape(model) + path + "?api-version=" + url.QueryEscape(p.azureVersion)
}

// anyBase is an API root of the provider for the gateway's own calls
// (evals, probes, counts): its base_url, or a pool's first replica's.
func (p *provider) anyBase() string {
	if p.baseURL == "" && len(p.replicas) > 0 {
		return p.replicas[0].baseURL
	}
	return p.baseURL
}

// authorize sets the provider's own credentials and content type on an
// upstream request's headers; a client's Anthropic-Version is kept.
// Azure OpenAI takes its key in api-key, not as a bearer token. The
// values are slices made once (keyHeader) and shared by every call, as
// the operator's own headers are: nothing writes into a request's header
// values in place.
func (p *provider) authorize(h http.Header) {
	h["Content-Type"] = jsonContentType
	if p.native != nil {
		return // its Transport's signer sets the vendor's credentials
	}
	if p.keyHeader != nil {
		h[p.keyHeaderName()] = p.keyHeader
	}
	if p.azureVersion == "" && p.dialect == protocol.Anthropic && h.Get("Anthropic-Version") == "" {
		h["Anthropic-Version"] = anthropicVersion
	}
}

// keyHeaderName is the header that carries the provider's key:
// Azure's api-key, Anthropic's x-api-key, or else a bearer token.
func (p *provider) keyHeaderName() string {
	switch {
	case p.azureVersion != "":
		return "Api-Key"
	case p.dialect == protocol.Anthropic:
		return "X-Api-Key"
	}
	return "Authorization"
}

// keyHeaderValue is keyHeaderName's value for key.
func (p *provider) keyHeaderValue(key string) string {
	if p.keyHeaderName() == "Authorization" {
		return "Bearer " + key
	}
	return key
}

// Header values every upstream call carries, made once.
var (
	jsonContentType  = []string{"application/json"}
	anthropicVersion = []string{"2023-06-01"}
	userAgentValue   = []string{userAgent}
)

// timedOut reports whether ctx ended because the request's deadline
// passed: the engine expired it, or the context's own deadline fired.
func timedOut(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), runner.ErrDeadline) || errors.Is(ctx.Err(), context.DeadlineExceeded)
}

// outcomeOf tells the engine how the call ended, for the provider's
// adaptive limit and breaker.
func outcomeOf(x *exchange) lifecycle.Outcome { return endingOf(x).Outcome() }

// The reasons, of those an exchange records, that say how its upstream
// call ended (endingOf).
const (
	// reasonInvalidAnswer: refused by the gateway (on_invalid: refuse);
	// the provider did answer.
	reasonInvalidAnswer = "invalid_answer"
	// reasonConnect: the provider could not be reached, or broke the
	// connection.
	reasonConnect = "upstream_connect"
)

// endingOf is how the call whose answer the client got ended, in the
// engine's terms (lifecycle.Ending), from what the exchange recorded.
func endingOf(x *exchange) lifecycle.Ending {
	// The usage goes with every kind: what the provider reported, or
	// what was relayed of an answer cut short (by the provider, the
	// deadline or the client), settles the key's budget, and a call
	// that failed before answering has none. The provider's input
	// count, when it gave one, settles the input.
	e := lifecycle.Ending{Status: x.upstreamStatus, RetryAfter: x.retryAfter, Responses: x.endpoint.IsResponses(), UnknownModel: x.unknownModel,
		OutputTokens: x.outputTokens, UsageKnown: x.usageKnown, InputTokens: x.reportedInput}
	switch x.outcome {
	case outcomeOK:
		e.Kind, e.Invalid = lifecycle.EndAnswered, x.invalid
		if x.cont.continued != "" {
			// The call broke: its provider's breaker hears it, and the
			// key pays the attempts' summed output.
			e.Kind = lifecycle.EndBroken
		}
	case outcomeTimeout:
		e.Kind = lifecycle.EndDeadline
	case outcomeCancelled, outcomeShed:
		// Shed after starting: the engine answered it early (Ready.Abandon)
		// and has already counted the call slow. What was relayed of the
		// answer is charged to the key.
		e.Kind = lifecycle.EndAbandoned
	default:
		switch {
		case x.reason == reasonInvalidAnswer:
			e.Kind = lifecycle.EndInvalid
		case x.reason == reasonConnect:
			e.Kind = lifecycle.EndUnreachable
		case x.upstreamStatus/100 != 2:
			e.Kind = lifecycle.EndRefused
		default:
			e.Kind = lifecycle.EndBroken // a 2xx that broke: a malformed answer or stream
		}
	}
	return e
}

// upstreamFailed maps a failed upstream call to the client's answer.
func (g *Gateway) upstreamFailed(w http.ResponseWriter, r *http.Request, x *exchange, ctx context.Context, err error) {
	x.upstreamDur = g.now().Sub(x.upstreamStart)
	var rej *admission.Rejection
	switch {
	case r.Context().Err() != nil:
		g.clientGone(w, r, x)
	case errors.As(context.Cause(ctx), &rej):
		refuse(g.metrics, w, x, rej, time.Time{})
	case timedOut(ctx):
		x.fail(w, protocol.Timeout, outcomeTimeout, "upstream_timeout",
			fmt.Sprintf("provider %s did not answer before the request's deadline", x.provider), 0)
	default:
		x.fail(w, protocol.Upstream, outcomeUpstreamError, reasonConnect,
			fmt.Sprintf("provider %s could not be reached or broke the connection", x.provider), 0)
	}
}

// relayRefusal passes on a provider's error answer: checked to be JSON
// (garbage becomes a 502), scrubbed of credentials, with its Retry-After
// bounded. A 401 or 403 refuses the gateway's own key, which is no
// business of the client's: it becomes a 502 that names the provider,
// and the operator hears of it in the log.
func (g *Gateway) relayRefusal(ctx context.Context, w http.ResponseWriter, r *http.Request, x *exchange, a *attempt) {
	resp, p := a.resp, a.t.provider
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, errorBodyLimit+1))
	x.upstreamDur = g.now().Sub(x.upstreamStart)
	x.ttft = x.upstreamDur
	if err != nil {
		g.upstreamFailed(w, r, x, ctx, err)
		return
	}
	status := resp.StatusCode
	x.retryAfter = retryAfter(resp.Header)
	x.unknownModel = protocol.UnknownModel(p.dialect, status, data)
	if status == http.StatusNotFound && x.endpoint.IsResponses() {
		p.warnNoResponses(g.log)
	}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		if p.authWarned.CompareAndSwap(false, true) {
			g.log.Warn("provider refused the gateway's credentials; check the key", "provider", p.name,
				"api_key_env", p.keyEnv, "status", status)
		}
		x.fail(w, protocol.Upstream, outcomeUpstreamError, "upstream_auth",
			fmt.Sprintf("provider %s refused the gateway's credentials (status %d); the gateway's operator must fix its key", p.name, status), 0)
		return
	case len(data) > errorBodyLimit:
		x.fail(w, protocol.Upstream, outcomeUpstreamError, "upstream_malformed",
			fmt.Sprintf("provider %s sent status %d with an error body over %d bytes", p.name, status, errorBodyLimit), 0)
		return
	case !isJSON(resp.Header) || !json.Valid(data):
		x.fail(w, protocol.Upstream, outcomeUpstreamError, "upstream_malformed",
			fmt.Sprintf("provider %s sent status %d with a body that is not JSON", p.name, status), 0)
		return
	}
	if contextRefused(g.models, x, p, status, data) {
		return // the request goes on to its context fallback
	}
	if p.dialect != x.endpoint.Dialect {
		// In the client's shape; overloaded's 529 and 503 swap.
		status, data = translate.ErrorBody(p.dialect, x.endpoint.Dialect, status, data)
	}
	k := x.creds.scrubber()
	data = k.text(data)
	reason := "upstream_status"
	if status >= 500 && namesSocket(data) {
		data, reason = unreachableBody(g.log, x.endpoint.Dialect, p.name, status, data), "upstream_unreachable"
	}
	copyResponseHeaders(w.Header(), resp.Header, k)
	if x.retryAfter > 0 {
		// The provider's wait, bounded as the engine bounds it.
		ra := g.runner.BoundRetryAfter(p.scope, x.retryAfter)
		w.Header().Set("Retry-After", strconv.FormatInt(int64((ra+time.Second-1)/time.Second), 10))
		w.Header().Set("Retry-After-Ms", strconv.FormatInt(ra.Milliseconds(), 10))
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	x.wroteHeader, x.status = true, status
	w.WriteHeader(status)
	n, _ := writerFor(w, x, g.writeTimeout).write(data)
	x.bytesOut = int64(n)
	// The provider's own error, passed through in its own shape.
	x.outcome, x.reason = outcomeUpstreamError, reason
}

// retryAfter reads a provider's Retry-After: retry-after-ms, or
// Retry-After in seconds. Zero when it sent neither (an HTTP date is rare
// from model APIs and is not worth the clock it would need).
func retryAfter(h http.Header) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < 1e12 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	if v := h.Get("Retry-After"); v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 && s < 1e9 {
			return time.Duration(s * float64(time.Second))
		}
	}
	return 0
}

func mediaType(h http.Header) string {
	v := h.Get("Content-Type")
	switch v {
	// What providers send, spelled as they send it, needs no parsing
	// (mime.ParseMediaType allocates its parameter map).
	case "application/json", "text/event-stream":
		return v
	case "application/json; charset=utf-8":
		return "application/json"
	case "text/event-stream; charset=utf-8":
		return "text/event-stream"
	}
	mt, _, _ := mime.ParseMediaType(v)
	return mt
}

func isEventStream(h http.Header) bool { return mediaType(h) == "text/event-stream" }

func isJSON(h http.Header) bool {
	mt := mediaType(h)
	return mt == "application/json" || (len(mt) > 5 && mt[len(mt)-5:] == "+json")
}
