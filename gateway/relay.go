package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-gw/sluice/protocol"
)

// The relays: a provider's answer goes to the client as it arrives, and
// every way that can go wrong on either side ends the request cleanly.
//
//   - A client that stops reading: each write has server.write_timeout to
//     be accepted, or the request ends as the client's, and the deferred
//     cancel stops the upstream call (clientWriter).
//   - A provider that goes quiet mid-answer: server.stream_idle_timeout
//     with no bytes cancels the call (idleWatch), and a stream ends with
//     an error event.
//   - A stream that ends without its terminator, or carries an event that
//     is not well-formed: a failure for the provider's breaker, and the
//     client gets an error event in its dialect instead of the rest
//     (protocol.StreamCheck). Events go to the client whole, so it never
//     sees half of one.
//   - A large answer that turns out malformed, or breaks off, after its
//     status went out: the connection is aborted, so the client sees a
//     broken response rather than a short one that looks whole.

// relayBufPool recycles relay buffers between streams. A stream holds
// its buffer for its whole life (the read that waits for the next event
// needs it), so the buffer is kept small (2 KiB: an SSE event is far
// smaller, and the transport's own 4 KiB reader sits underneath), and the
// stream's first chunk is read into it before the attempt is committed.
var relayBufPool = sync.Pool{New: func() any { b := make([]byte, 2<<10); return &b }}

// clientWriter writes to a client with a deadline on every write.
type clientWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	x       *exchange
}

func (g *Gateway) clientWriter(w http.ResponseWriter, x *exchange) clientWriter {
	return clientWriter{w: w, rc: http.NewResponseController(w), timeout: g.writeTimeout, x: x}
}

// write sends p and flushes it.
func (c clientWriter) write(p []byte) (int, error) {
	_ = c.rc.SetWriteDeadline(time.Now().Add(c.timeout))
	c.x.writeDeadline = true
	n, err := c.w.Write(p)
	c.x.bytesOut += int64(n)
	if err == nil {
		err = c.rc.Flush()
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		c.x.stalled = true
	}
	return n, err
}

// idleWatch cancels an upstream call that sends nothing for a while.
type idleWatch struct {
	t     *time.Timer
	d     time.Duration
	fired atomic.Bool
}

func (g *Gateway) watchIdle(cancel context.CancelFunc) *idleWatch {
	iw := &idleWatch{d: g.streamIdle}
	iw.t = time.AfterFunc(iw.d, func() { iw.fired.Store(true); cancel() })
	return iw
}

// kick restarts the wait after bytes arrived.
func (iw *idleWatch) kick() { iw.t.Reset(iw.d) }

func (iw *idleWatch) stop() { iw.t.Stop() }

// relayStream copies an SSE answer to the client as it arrives, whole
// events at a time, flushing after every write so no event waits for the
// next one. The attempt's buffer holds the stream's head and first
// token, already checked; the relay returns it to relayBufPool. Once the
// headers are out the status is committed: a failure after that ends the
// stream with an error event in the client's dialect.
func (g *Gateway) relayStream(ctx context.Context, w http.ResponseWriter, r *http.Request, x *exchange, a *attempt) {
	bp := a.buf
	a.buf = nil
	defer relayBufPool.Put(bp)
	resp, p := a.resp, a.t.provider
	defer resp.Body.Close()
	copyResponseHeaders(w.Header(), resp.Header, p.key)
	w.Header().Set("X-Accel-Buffering", "no")
	x.wroteHeader, x.status = true, resp.StatusCode
	w.WriteHeader(resp.StatusCode)
	cw := g.clientWriter(w, x)
	idle := g.watchIdle(a.cancel)
	defer idle.stop()

	var usage protocol.StreamUsage
	defer func() { x.outputTokens, _ = usage.Tokens() }()
	buf := *bp
	n, ready := a.first, a.ready // held bytes; the first ready are whole events
	usage.Write(buf[:n])
	d := x.endpoint.Dialect
	var readErr error
	for {
		// Whole events go out; a buffer full of one event that has not
		// ended goes out too, less any bytes that could begin the key.
		send := ready
		if send == 0 && n == len(buf) {
			send = n - p.scrub.partial(buf[:n])
		}
		if send > 0 {
			p.scrub.scrub(buf[:send])
			if _, err := cw.write(buf[:send]); err != nil {
				x.upstreamDur = g.now().Sub(x.upstreamStart)
				g.clientGone(w, r, x)
				return // the deferred cancel and Close stop the upstream
			}
			n, ready = copy(buf, buf[send:n]), 0
		}
		if readErr != nil {
			break
		}
		m, err := resp.Body.Read(buf[n:])
		if m > 0 {
			idle.kick()
			if x.ttft == 0 {
				x.ttft = g.now().Sub(x.upstreamStart)
			}
			usage.Write(buf[n : n+m])
			b, ok, bad := a.check.Feed(buf[n : n+m])
			if !ok {
				// What came before the malformed event goes out; it does not.
				if bad >= 0 {
					p.scrub.scrub(buf[:n+bad])
					cw.write(buf[:n+bad])
				}
				x.upstreamDur = g.now().Sub(x.upstreamStart)
				g.streamFailed(cw, x, d, protocol.StreamMalformed, fmt.Sprintf("provider %s sent a malformed event", p.name))
				return
			}
			if b >= 0 {
				ready = n + b
			}
			n += m
		}
		readErr = err
	}
	x.upstreamDur = g.now().Sub(x.upstreamStart)
	switch {
	case readErr == io.EOF:
		verdict := a.check.End()
		switch verdict {
		case protocol.StreamOK:
			if n > 0 { // a last event without its blank line
				p.scrub.scrub(buf[:n])
				cw.write(buf[:n])
			}
			x.outcome = outcomeOK
		case protocol.StreamErrorEvent:
			// The provider's own error event has gone to the client.
			x.outcome, x.reason = outcomeUpstreamError, verdict
		default:
			g.streamFailed(cw, x, d, verdict, fmt.Sprintf("provider %s ended the stream before it was complete", p.name))
		}
	case r.Context().Err() != nil:
		g.clientGone(w, r, x)
	case idle.fired.Load():
		g.streamFailed(cw, x, d, "stream_idle", fmt.Sprintf("provider %s sent nothing for %s", p.name, g.streamIdle))
	case timedOut(ctx):
		x.outcome, x.reason = outcomeTimeout, "stream_deadline"
		cw.write(d.StreamErrorEvent(protocol.Timeout, "the request's deadline passed mid-stream"))
	default:
		g.streamFailed(cw, x, d, "stream_cut", fmt.Sprintf("provider %s broke off the stream", p.name))
	}
}

// streamFailed ends a committed stream that the provider broke: a
// failure for its breaker, and an error event for the client.
func (g *Gateway) streamFailed(cw clientWriter, x *exchange, d protocol.Dialect, reason, msg string) {
	x.outcome, x.reason = outcomeUpstreamError, reason
	cw.write(d.StreamErrorEvent(protocol.Upstream, msg))
}

// relayWhole passes on a success that is not a stream. One up to
// wholeBodyLimit is read whole and checked before the client sees a byte,
// so a malformed one becomes a 502; a longer one is relayed as it
// arrives (relayLarge).
func (g *Gateway) relayWhole(ctx context.Context, w http.ResponseWriter, r *http.Request, x *exchange, a *attempt) {
	resp, p := a.resp, a.t.provider
	defer resp.Body.Close()
	idle := g.watchIdle(a.cancel)
	defer idle.stop()
	data, err := io.ReadAll(io.LimitReader(resp.Body, wholeBodyLimit+1))
	x.upstreamDur = g.now().Sub(x.upstreamStart)
	x.ttft = x.upstreamDur
	if err != nil {
		g.upstreamFailed(w, r, x, ctx, err)
		return
	}
	if !isJSON(resp.Header) {
		g.fail(w, x, protocol.Upstream, outcomeUpstreamError, "upstream_malformed",
			fmt.Sprintf("provider %s sent a response that is not JSON", p.name), 0)
		return
	}
	if len(data) > wholeBodyLimit {
		g.relayLarge(ctx, w, r, x, a, data, idle)
		return
	}
	tokens, _, valid := protocol.OutputTokens(data)
	if !valid {
		g.fail(w, x, protocol.Upstream, outcomeUpstreamError, "upstream_malformed",
			fmt.Sprintf("provider %s sent a malformed response", p.name), 0)
		return
	}
	p.scrub.scrub(data)
	copyResponseHeaders(w.Header(), resp.Header, p.key)
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	x.wroteHeader, x.status = true, resp.StatusCode
	w.WriteHeader(resp.StatusCode)
	if _, err := g.clientWriter(w, x).write(data); err != nil {
		g.clientGone(w, r, x)
		return
	}
	x.outcome, x.outputTokens = outcomeOK, tokens
	p.authWarned.Store(false)
}

// relayLarge relays a success answer too large to hold, whose first
// wholeBodyLimit+1 bytes are in head: checked as it passes
// (protocol.JSONScanner), its usage read from wherever it comes (usually
// the tail), and scrubbed of the key even across reads. A failure after
// the status went out aborts the connection (exchange.abort).
func (g *Gateway) relayLarge(ctx context.Context, w http.ResponseWriter, r *http.Request, x *exchange, a *attempt, head []byte, idle *idleWatch) {
	resp, p := a.resp, a.t.provider
	var js protocol.JSONScanner
	var usage protocol.StreamUsage
	if !js.Write(head) {
		g.fail(w, x, protocol.Upstream, outcomeUpstreamError, "upstream_malformed",
			fmt.Sprintf("provider %s sent a malformed response", p.name), 0)
		return
	}
	usage.Write(head)
	copyResponseHeaders(w.Header(), resp.Header, p.key)
	if resp.ContentLength >= 0 {
		// Scrubbing keeps lengths, so the provider's length is true.
		w.Header().Set("Content-Length", strconv.FormatInt(resp.ContentLength, 10))
	}
	x.wroteHeader, x.status = true, resp.StatusCode
	w.WriteHeader(resp.StatusCode)
	cw := g.clientWriter(w, x)

	buf := make([]byte, relayChunk)
	n := copy(buf, head)
	pending := head[n:] // the head is larger than one chunk only if relayChunk shrinks
	var readErr error
	for {
		hold := p.scrub.partial(buf[:n])
		if readErr != nil {
			hold = 0 // nothing more is coming to complete a key
		}
		p.scrub.scrub(buf[:n-hold])
		if _, err := cw.write(buf[:n-hold]); err != nil {
			x.upstreamDur = g.now().Sub(x.upstreamStart)
			g.clientGone(w, r, x)
			x.abort = true
			return
		}
		n = copy(buf, buf[n-hold:n])
		if len(pending) > 0 {
			c := copy(buf[n:], pending)
			pending, n = pending[c:], n+c
			continue
		}
		if readErr != nil {
			break
		}
		m, err := resp.Body.Read(buf[n:])
		if m > 0 {
			idle.kick()
			js.Write(buf[n : n+m])
			usage.Write(buf[n : n+m])
			n += m
		}
		readErr = err
	}
	x.upstreamDur = g.now().Sub(x.upstreamStart)
	x.outputTokens, _ = usage.Tokens()
	switch {
	case errors.Is(readErr, io.EOF) && js.Done():
		x.outcome = outcomeOK
		return
	case errors.Is(readErr, io.EOF):
		x.outcome, x.reason = outcomeUpstreamError, "upstream_malformed"
	case r.Context().Err() != nil:
		g.clientGone(w, r, x)
	case idle.fired.Load():
		x.outcome, x.reason = outcomeUpstreamError, "stream_idle"
	case timedOut(ctx):
		x.outcome, x.reason = outcomeTimeout, "upstream_timeout"
	default:
		x.outcome, x.reason = outcomeUpstreamError, "stream_cut"
	}
	x.abort = true
}
