package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/sluice-gw/sluice/lifecycle"
	"github.com/sluice-gw/sluice/protocol"
)

// maxUpstreamBody bounds a buffered (non-streaming) upstream response.
const maxUpstreamBody = 64 << 20

// upstreamRequest builds the call to t's provider: the client's headers
// less its credentials and hop-by-hop ones, the provider's key, the
// rewritten body, and the time left.
func (g *Gateway) upstreamRequest(ctx context.Context, r *http.Request, t target, ep protocol.Endpoint, body []byte, deadline time.Time) (*http.Request, error) {
	p := t.provider
	url := p.baseURL + ep.UpstreamPath()
	if r.URL.RawQuery != "" {
		url += "?" + r.URL.RawQuery
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	copyRequestHeaders(req.Header, r.Header)
	p.authorize(req.Header)
	// A downstream Sluice (or any upstream that reads it) learns how much
	// time is left; the context enforces it here either way.
	req.Header.Set("X-Sluice-Timeout", strconv.FormatInt(time.Until(deadline).Milliseconds(), 10)+"ms")
	return req, nil
}

// authorize sets the provider's own credentials and content type on an
// upstream request's headers; a client's Anthropic-Version is kept.
func (p *provider) authorize(h http.Header) {
	h.Set("Content-Type", "application/json")
	switch p.dialect {
	case protocol.Anthropic:
		if p.key != "" {
			h.Set("X-Api-Key", p.key)
		}
		if h.Get("Anthropic-Version") == "" {
			h.Set("Anthropic-Version", "2023-06-01")
		}
	default:
		if p.key != "" {
			h.Set("Authorization", "Bearer "+p.key)
		}
	}
}

// timedOut reports whether ctx ended because the request's deadline
// passed: the engine expired it, or the context's own deadline fired.
func timedOut(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), lifecycle.ErrDeadline) || errors.Is(ctx.Err(), context.DeadlineExceeded)
}

// outcomeOf tells the engine how the call ended, for the provider's
// adaptive limit.
func outcomeOf(x *exchange) lifecycle.Outcome {
	o := outcomeKind(x)
	o.Status = x.upstreamStatus
	return o
}

func outcomeKind(x *exchange) lifecycle.Outcome {
	switch x.outcome {
	case outcomeOK:
		return lifecycle.Outcome{Kind: lifecycle.OK, OutputTokens: x.outputTokens}
	case outcomeTimeout:
		return lifecycle.Outcome{Kind: lifecycle.TimedOut}
	case outcomeCancelled:
		return lifecycle.Outcome{Kind: lifecycle.Cancelled}
	}
	switch {
	case x.reason == "upstream_connect":
		return lifecycle.Outcome{Kind: lifecycle.ConnError}
	case x.upstreamStatus == http.StatusTooManyRequests, x.upstreamStatus == http.StatusServiceUnavailable, x.upstreamStatus == 529:
		return lifecycle.Outcome{Kind: lifecycle.Overloaded}
	}
	return lifecycle.Outcome{Kind: lifecycle.Failed}
}

// upstreamFailed maps a failed upstream call to the client's answer.
func (g *Gateway) upstreamFailed(w http.ResponseWriter, r *http.Request, x *exchange, ctx context.Context, err error) {
	x.upstreamDur = g.now().Sub(x.upstreamStart)
	switch {
	case r.Context().Err() != nil:
		g.clientGone(x)
	case timedOut(ctx):
		g.fail(w, x, protocol.Timeout, outcomeTimeout, "upstream_timeout",
			fmt.Sprintf("provider %s did not answer before the request's deadline", x.provider), 0)
	default:
		g.fail(w, x, protocol.Upstream, outcomeUpstreamError, "upstream_connect",
			fmt.Sprintf("provider %s could not be reached or broke the connection", x.provider), 0)
	}
}

// relayBuffered reads a whole non-streaming answer, checks a success is
// well-formed JSON (so garbage becomes a 502, not a client parse error),
// and passes it on with the provider's status and headers.
func (g *Gateway) relayBuffered(ctx context.Context, w http.ResponseWriter, r *http.Request, x *exchange, resp *http.Response) {
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxUpstreamBody+1))
	now := g.now()
	x.upstreamDur = now.Sub(x.upstreamStart)
	x.ttft = x.upstreamDur
	if err != nil {
		g.upstreamFailed(w, r, x, ctx, err)
		return
	}
	if len(data) > maxUpstreamBody {
		g.fail(w, x, protocol.Upstream, outcomeUpstreamError, "upstream_too_large",
			fmt.Sprintf("provider %s sent a response larger than %d bytes", x.provider, maxUpstreamBody), 0)
		return
	}
	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	tokens, _, valid := protocol.OutputTokens(data)
	if !isJSON(resp.Header) || !valid {
		what := "a malformed response"
		if !ok {
			what = fmt.Sprintf("status %d with a body that is not JSON", resp.StatusCode)
		}
		g.fail(w, x, protocol.Upstream, outcomeUpstreamError, "upstream_malformed",
			fmt.Sprintf("provider %s sent %s", x.provider, what), 0)
		return
	}
	copyResponseHeaders(w.Header(), resp.Header)
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	x.wroteHeader, x.status = true, resp.StatusCode
	w.WriteHeader(resp.StatusCode)
	n, _ := w.Write(data)
	x.bytesOut = int64(n)
	if ok {
		x.outcome = outcomeOK
		x.outputTokens = tokens
	} else {
		// The provider's own error, passed through in its own shape.
		x.outcome, x.reason = outcomeUpstreamError, "upstream_status"
	}
}

// relayBufPool recycles relay buffers between streams. A stream holds
// its buffer for its whole life (the read that waits for the next event
// needs it), so the buffer is kept small (2 KiB: an SSE event is far
// smaller, and the transport's own 4 KiB reader sits underneath), and the
// stream's first chunk is read into it before the attempt is committed.
var relayBufPool = sync.Pool{New: func() any { b := make([]byte, 2<<10); return &b }}

// relayStream copies an SSE answer to the client as it arrives, flushing
// after every read so no event waits for the next one. Once the first
// byte is out the status is committed; a failure after that ends the
// stream with an error event in the client's dialect.
// bp is the stream's buffer, holding its first chunk in the first n
// bytes; relayStream returns it to relayBufPool.
func (g *Gateway) relayStream(ctx context.Context, w http.ResponseWriter, r *http.Request, x *exchange, resp *http.Response, bp *[]byte, n int) {
	defer relayBufPool.Put(bp)
	defer resp.Body.Close()
	copyResponseHeaders(w.Header(), resp.Header)
	w.Header().Set("X-Accel-Buffering", "no")
	x.wroteHeader, x.status = true, resp.StatusCode
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)

	var usage protocol.StreamUsage
	defer func() { x.outputTokens, _ = usage.Tokens() }()
	buf := *bp
	// The first chunk was read before the attempt was committed.
	if n > 0 {
		if _, err := w.Write(buf[:n]); err != nil {
			g.clientGone(x)
			return
		}
		x.bytesOut += int64(n)
		usage.Write(buf[:n])
	}
	rc.Flush()

	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if x.ttft == 0 {
				x.ttft = g.now().Sub(x.upstreamStart)
			}
			if _, werr := w.Write(buf[:n]); werr != nil {
				x.upstreamDur = g.now().Sub(x.upstreamStart)
				g.clientGone(x)
				return // the deferred cancel and Close stop the upstream
			}
			x.bytesOut += int64(n)
			usage.Write(buf[:n])
			if ferr := rc.Flush(); ferr != nil {
				x.upstreamDur = g.now().Sub(x.upstreamStart)
				g.clientGone(x)
				return
			}
		}
		if err == nil {
			continue
		}
		x.upstreamDur = g.now().Sub(x.upstreamStart)
		d := x.endpoint.Dialect
		switch {
		case err == io.EOF:
			x.outcome = outcomeOK
		case r.Context().Err() != nil:
			g.clientGone(x)
		case timedOut(ctx):
			x.outcome, x.reason = outcomeTimeout, "stream_deadline"
			w.Write(d.StreamErrorEvent(protocol.Timeout, "the request's deadline passed mid-stream"))
			rc.Flush()
		default:
			x.outcome, x.reason = outcomeUpstreamError, "stream_cut"
			w.Write(d.StreamErrorEvent(protocol.Upstream, fmt.Sprintf("provider %s broke off the stream", x.provider)))
			rc.Flush()
		}
		return
	}
}

func mediaType(h http.Header) string {
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return mt
}

func isEventStream(h http.Header) bool { return mediaType(h) == "text/event-stream" }

func isJSON(h http.Header) bool {
	mt := mediaType(h)
	return mt == "application/json" || (len(mt) > 5 && mt[len(mt)-5:] == "+json")
}
