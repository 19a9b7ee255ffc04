package gateway

import (
	"bytes"
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

	"github.com/sluice-gw/sluice/internal/wire/contract"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
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
func (c clientWriter) write(p []byte) (int, error) { return c.send(p, true) }

// send writes p, flushed or left to net/http to flush when the handler
// returns (a whole answer: one write either way, and none inside the
// time the request log calls the gateway's own).
func (c clientWriter) send(p []byte, flush bool) (int, error) {
	_ = c.rc.SetWriteDeadline(time.Now().Add(c.timeout))
	n, err := c.w.Write(p)
	c.x.bytesOut += int64(n)
	if err == nil && flush {
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

// maxHeldEvent bounds how much of one SSE event the relay holds back to
// pass it on whole. Events are small (a token, a tool-call fragment); one
// larger than this (a chunk with long logprobs, say) goes out in parts,
// and if the stream then breaks inside it the connection is aborted
// rather than an error event appended to half an event.
const maxHeldEvent = 64 << 10

var relayBigPool = sync.Pool{New: func() any { b := make([]byte, maxHeldEvent); return &b }}

// streamRelay is one SSE answer on its way to the client.
type streamRelay struct {
	g     *Gateway
	w     http.ResponseWriter
	r     *http.Request
	x     *exchange
	a     *attempt
	cw    clientWriter
	idle  *idleWatch
	usage protocol.StreamUsage
	// buf holds bytes read and not yet sent: the first n, of which the
	// first ready are whole events. bp is buf's pool slot; big says it
	// came from relayBigPool.
	bp       *[]byte
	big      bool
	buf      []byte
	n, ready int
	// midEvent: part of an event that has not ended has gone out.
	midEvent bool
	// answer collects what the request's contract checks, when it
	// declared one (validation.go).
	answer *contract.Collector
}

// relayStream copies an SSE answer to the client as it arrives, whole
// events at a time, flushing after every write so no event waits for the
// next one. The attempt's buffer holds the stream's head and first
// token, already checked; the relay returns it to its pool. Once the
// headers are out the status is committed: a failure after that ends the
// stream with an error event in the client's dialect.
func (g *Gateway) relayStream(ctx context.Context, w http.ResponseWriter, r *http.Request, x *exchange, a *attempt) {
	s := &streamRelay{g: g, w: w, r: r, x: x, a: a, bp: a.buf}
	a.buf = nil
	defer func() {
		if s.big {
			relayBigPool.Put(s.bp)
		} else {
			relayBufPool.Put(s.bp)
		}
	}()
	resp, p := a.resp, a.t.provider
	defer resp.Body.Close()
	copyResponseHeaders(w.Header(), resp.Header, p.scrub)
	w.Header().Set("X-Accel-Buffering", "no")
	x.wroteHeader, x.status = true, resp.StatusCode
	w.WriteHeader(resp.StatusCode)
	s.cw = g.clientWriter(w, x)
	s.idle = g.watchIdle(a.cancel)
	defer s.idle.stop()
	defer func() {
		x.outputTokens, x.usageKnown = s.usage.Tokens()
		x.finish = s.usage.FinishReason()
	}()

	s.buf = *s.bp
	s.n, s.ready = a.first, a.ready
	s.usage.Write(s.buf[:s.n])
	if x.contract != nil {
		s.answer = contract.NewCollector(x.endpoint.Dialect)
		s.answer.Write(s.buf[:s.n])
	}
	readErr := s.pump(resp.Body, p)
	x.upstreamDur = g.now().Sub(x.upstreamStart)
	switch {
	case errors.Is(readErr, errMalformedEvent):
		s.fail(protocol.StreamMalformed, fmt.Sprintf("provider %s sent a malformed event", p.name))
	case errors.Is(readErr, errClientWrite):
		g.clientGone(w, r, x)
	case readErr == io.EOF:
		switch verdict := a.check.End(); verdict {
		case protocol.StreamOK, protocol.StreamErrorEvent:
			// A last event, the terminator or the provider's own error,
			// may have come without its blank line: it goes out with one.
			if s.n > 0 && s.send(s.n, true, true) != nil {
				g.clientGone(w, r, x)
				return
			}
			if verdict == protocol.StreamOK {
				x.outcome = outcomeOK
				if s.answer != nil {
					g.streamVerdict(s.cw, x, p, s.answer)
				}
			} else {
				x.outcome, x.reason = outcomeUpstreamError, verdict
			}
		default:
			s.fail(verdict, fmt.Sprintf("provider %s ended the stream before it was complete", p.name))
		}
	case r.Context().Err() != nil:
		g.clientGone(w, r, x)
		if s.midEvent {
			x.abort = true
		}
	case s.idle.fired.Load():
		s.fail("stream_idle", fmt.Sprintf("provider %s sent nothing for %s", p.name, g.streamIdle))
	case timedOut(ctx):
		x.outcome, x.reason = outcomeTimeout, "stream_deadline"
		s.endWith(protocol.Timeout, "the request's deadline passed mid-stream")
	default:
		s.fail("stream_cut", fmt.Sprintf("provider %s broke off the stream", p.name))
	}
}

var (
	errMalformedEvent = errors.New("gateway: malformed event")
	errClientWrite    = errors.New("gateway: client write failed")
)

// pump reads the stream and sends its whole events until the stream ends
// or breaks: io.EOF, the read's error, errMalformedEvent (what came
// before the bad event has gone out; it has not), or errClientWrite.
func (s *streamRelay) pump(body io.Reader, p *provider) error {
	for {
		send := s.ready
		if send == 0 && s.n == len(s.buf) {
			if !s.big {
				// One event fills the small buffer: hold it in a larger
				// one, to pass it on whole.
				bp := relayBigPool.Get().(*[]byte)
				copy(*bp, s.buf[:s.n])
				relayBufPool.Put(s.bp)
				s.bp, s.buf, s.big = bp, *bp, true
			} else if part := s.n - p.scrub.partial(s.buf[:s.n]); s.send(part, false, false) != nil {
				// Larger still: it goes out in parts, less any bytes that
				// could begin the key.
				return errClientWrite
			}
		}
		if send > 0 && s.send(send, true, false) != nil {
			return errClientWrite
		}
		m, err := body.Read(s.buf[s.n:])
		if m > 0 {
			s.idle.kick()
			chunk := s.buf[s.n : s.n+m]
			s.usage.Write(chunk)
			if s.answer != nil {
				s.answer.Write(chunk)
			}
			b, ok, bad := s.a.check.Feed(chunk)
			if !ok {
				// The events before the bad one end where it begins.
				if bad >= 0 && s.n+bad > 0 && s.send(s.n+bad, true, false) != nil {
					return errClientWrite
				}
				return errMalformedEvent
			}
			if b >= 0 {
				s.ready = s.n + b
			}
			s.n += m
		}
		if err != nil {
			return err
		}
	}
}

// send passes on the first k held bytes, scrubbed of the key. whole
// says they end where an event ends; last ends them with the blank line
// a final event may lack.
func (s *streamRelay) send(k int, whole, last bool) error {
	p := s.a.t.provider
	p.scrub.scrub(s.buf[:k])
	s.idle.t.Stop() // a slow client is not a quiet provider
	out := s.buf[:k]
	if s.x.injectedUsage && (whole || last) {
		out = dropUsageChunks(out)
	}
	_, err := s.cw.write(out)
	if err == nil && last {
		_, err = s.cw.write(blankLineFor(s.buf[:k]))
	}
	s.idle.kick()
	s.midEvent = !whole && !last
	s.n = copy(s.buf, s.buf[k:s.n])
	s.ready = max(0, s.ready-k)
	return err
}

// blankLineFor is what ends b with a blank line.
func blankLineFor(b []byte) []byte {
	switch {
	case len(b) >= 2 && b[len(b)-1] == '\n' && b[len(b)-2] == '\n':
		return nil
	case len(b) >= 1 && b[len(b)-1] == '\n':
		return newline
	}
	return blankLine
}

var (
	newline   = []byte("\n")
	blankLine = []byte("\n\n")
)

// fail ends a committed stream that the provider broke: a failure for
// its breaker, and an error event for the client.
func (s *streamRelay) fail(reason, msg string) {
	s.x.outcome, s.x.reason = outcomeUpstreamError, reason
	s.endWith(protocol.Upstream, msg)
}

// endWith ends the stream with an error event of kind k; or, when part
// of an event has already gone out, aborts the connection, since an
// event appended to half an event would be lost in it.
func (s *streamRelay) endWith(k protocol.Kind, msg string) {
	if s.midEvent {
		s.x.abort = true
		return
	}
	s.cw.write(s.x.endpoint.Dialect.StreamErrorEvent(k, msg))
}

// relayWhole passes on a success that is not a stream. One up to
// wholeBodyLimit is read whole and checked before the client sees a byte,
// so a malformed one becomes a 502; a longer one is relayed as it
// arrives (relayLarge).
func (g *Gateway) relayWhole(ctx context.Context, w http.ResponseWriter, r *http.Request, x *exchange, a *attempt) {
	resp, p := a.resp, a.t.provider
	defer resp.Body.Close()
	// The first 64 KiB come within the request's deadline; a provider
	// quiet past that, in a larger answer, meets the idle timeout.
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
	if crossed(x, a) {
		var ok bool
		if data, ok = g.translateWhole(ctx, w, r, x, a, data); !ok {
			return
		}
	}
	if len(data) > wholeBodyLimit && !crossed(x, a) {
		idle := g.watchIdle(a.cancel)
		defer idle.stop()
		g.relayLarge(ctx, w, r, x, a, data, idle)
		return
	}
	tokens, found, valid, finish := protocol.OutputTokens(data)
	if !valid {
		g.fail(w, x, protocol.Upstream, outcomeUpstreamError, "upstream_malformed",
			fmt.Sprintf("provider %s sent a malformed response", p.name), 0)
		return
	}
	p.scrub.scrub(data)
	copyResponseHeaders(w.Header(), resp.Header, p.scrub)
	markVerdict(w.Header(), x)
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	x.wroteHeader, x.status = true, resp.StatusCode
	w.WriteHeader(resp.StatusCode)
	if _, err := g.clientWriter(w, x).send(data, false); err != nil {
		g.clientGone(w, r, x)
		return
	}
	x.outcome, x.outputTokens, x.usageKnown, x.finish = outcomeOK, tokens, found, finish
	p.authWarned.Store(false)
}

// relayLarge relays a success answer too large to hold, whose first
// wholeBodyLimit+1 bytes are in head: checked as it passes
// (protocol.JSONScanner), its usage read from wherever it comes (usually
// the tail), and scrubbed of the key even across reads. Its last byte is
// held back until the answer has ended well-formed, so that an answer
// that turns out malformed, or breaks off, never reaches the client
// whole: the connection is aborted short of it (exchange.abort).
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
	copyResponseHeaders(w.Header(), resp.Header, p.scrub)
	markVerdict(w.Header(), x)
	if resp.ContentLength >= 0 {
		// Scrubbing keeps lengths, so the provider's length is true.
		w.Header().Set("Content-Length", strconv.FormatInt(resp.ContentLength, 10))
	}
	x.wroteHeader, x.status = true, resp.StatusCode
	w.WriteHeader(resp.StatusCode)
	cw := g.clientWriter(w, x)

	buf := make([]byte, max(relayChunk, len(head)+1))
	n := copy(buf, head)
	var readErr error
	for readErr == nil && !js.Failed() {
		// Hold back what could begin the key, and always the last byte.
		hold := max(p.scrub.partial(buf[:n]), 1)
		if n > hold {
			p.scrub.scrub(buf[:n-hold])
			idle.t.Stop() // a slow client is not a quiet provider
			_, err := cw.write(buf[:n-hold])
			idle.kick()
			if err != nil {
				x.upstreamDur = g.now().Sub(x.upstreamStart)
				g.clientGone(w, r, x)
				x.abort = true
				return
			}
			n = copy(buf, buf[n-hold:n])
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
	x.outputTokens, x.usageKnown = usage.Tokens()
	x.finish = usage.FinishReason()
	switch {
	case errors.Is(readErr, io.EOF) && js.Done():
		// Whole and well-formed: the held bytes complete it.
		p.scrub.scrub(buf[:n])
		if _, err := cw.write(buf[:n]); err != nil {
			g.clientGone(w, r, x)
			x.abort = true
			return
		}
		x.outcome = outcomeOK
		return
	case js.Failed(), errors.Is(readErr, io.EOF):
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
	x.abort = true // the held bytes stay held
}

var (
	emptyChoices = []byte(`"choices":[]`)
	usageObject  = []byte(`"usage":{`)
)

// dropUsageChunks removes, in place, the usage-only chunks (no choices,
// a usage object) from whole SSE events: the chunk an OpenAI-style
// stream ends with when Sluice, not the client, asked for
// stream_options.include_usage. Every other event is kept as it came.
func dropUsageChunks(b []byte) []byte {
	if !bytes.Contains(b, emptyChoices) {
		return b
	}
	out := b[:0]
	for len(b) > 0 {
		end := eventEnd(b)
		ev := b[:end]
		b = b[end:]
		if bytes.Contains(ev, emptyChoices) && bytes.Contains(ev, usageObject) {
			continue
		}
		out = append(out, ev...) // never ahead of what is read: in place is safe
	}
	return out
}

// eventEnd is the length of b's first event with its blank line
// ("\n\n" or "\n\r\n"), or all of b.
func eventEnd(b []byte) int {
	for i := 0; i+1 < len(b); i++ {
		if b[i] != '\n' {
			continue
		}
		switch {
		case b[i+1] == '\n':
			return i + 2
		case b[i+1] == '\r' && i+2 < len(b) && b[i+2] == '\n':
			return i + 3
		}
	}
	return len(b)
}
