package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// The relays: a provider's answer goes to the client as it arrives, and
// every way that can go wrong on either side ends the request cleanly.
//
//   - A client that stops reading: each write has server.write_timeout to
//     be accepted, or the request ends as the client's, and the deferred
//     cancel stops the upstream call (clientWriter).
//   - A provider that goes quiet mid-answer: server.stream_idle_timeout
//     with no bytes cancels the call (idleFilter), and a stream ends with
//     an error event.
//   - A stream that ends without its terminator, or carries an event that
//     is not well-formed: a failure for the provider's breaker, and the
//     client gets an error event in its dialect instead of the rest
//     (protocol.StreamCheck). Events go to the client whole, so it never
//     sees half of one, and every whole event that came before the
//     failure reaches it before the error event does.
//   - A large answer that turns out malformed, or breaks off, after its
//     status went out: the connection is aborted, so the client sees a
//     broken response rather than a short one that looks whole.
//
// Every stream, translated or not, takes one relay (relayStream): one
// read loop, one end path, and a chain of filters that each own one
// concern (relay_filter.go).

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

// maxHeldEvent bounds how much of one SSE event the relay holds back to
// pass it on whole. Events are small (a token, a tool-call fragment); one
// larger than this (a chunk with long logprobs, say) goes out in parts,
// and if the stream then breaks inside it the connection is aborted
// rather than an error event appended to half an event. A translated
// stream cannot pass an event on in parts: one that large fails it.
const maxHeldEvent = 64 << 10

var relayBigPool = sync.Pool{New: func() any { b := make([]byte, maxHeldEvent); return &b }}

// streamRelay is one SSE answer on its way to the client.
type streamRelay struct {
	g   *Gateway
	w   http.ResponseWriter
	r   *http.Request
	ctx context.Context // the call's: its deadline is the request's
	x   *exchange
	p   *provider
	cw  clientWriter
	// buf holds the provider's bytes read and not yet passed on: the
	// first n, of which the first ready are whole events (as frame
	// finds them). bp is buf's pool slot; big says it came from
	// relayBigPool.
	bp       *[]byte
	big      bool
	buf      []byte
	n, ready int
	// midEvent: part of an event that has not ended has gone out.
	midEvent bool
	frame    framer
	chain    []streamFilter
	// filters holds the chain's filters, in the relay's own allocation.
	filters streamFilters
}

// relayStream copies an SSE answer to the client as it arrives, whole
// events at a time, flushing after every write so no event waits for the
// next one. The attempt's buffer holds the stream's head and first
// token, already checked; the relay returns it to its pool. Once the
// headers are out the status is committed: a failure after that ends the
// stream with an error event in the client's dialect. A provider of the
// other API is relayed the same way, with a translation filter in the
// chain (newChain).
func (g *Gateway) relayStream(ctx context.Context, w http.ResponseWriter, r *http.Request, x *exchange, a *attempt) {
	s := &streamRelay{g: g, w: w, r: r, ctx: ctx, x: x, p: a.t.provider, bp: a.buf}
	a.buf = nil
	defer s.release()
	resp := a.resp
	defer resp.Body.Close()
	copyResponseHeaders(w.Header(), resp.Header, s.p.scrub)
	w.Header().Set("X-Accel-Buffering", "no")
	x.wroteHeader, x.status = true, resp.StatusCode
	w.WriteHeader(resp.StatusCode)
	s.cw = g.clientWriter(w, x)

	s.buf, s.n = *s.bp, a.first
	s.newChain(a)
	// The head was read before the relay began; the filters see it as
	// read all the same.
	for _, f := range s.chain {
		f.read(s.buf[:s.n])
	}
	err := s.pump(resp.Body)
	x.upstreamDur = g.now().Sub(x.upstreamStart)
	s.end(err)
}

func (s *streamRelay) release() {
	if s.big {
		relayBigPool.Put(s.bp)
	} else {
		relayBufPool.Put(s.bp)
	}
}

// errClientWrite: a write to the client failed.
var errClientWrite = errors.New("gateway: client write failed")

// pump is the read loop. It passes on the whole events held, then reads
// the provider's next bytes, until the stream ends or breaks: io.EOF,
// the read's error, a *streamEnd a filter or the framer returned, or
// errClientWrite. The events of the last read are still held when it
// returns: the end path decides what becomes of them.
func (s *streamRelay) pump(body io.Reader) error {
	for {
		if err := s.flush(); err != nil {
			return err
		}
		for _, f := range s.chain {
			f.wait()
		}
		m, err := body.Read(s.buf[s.n:])
		chunk := s.buf[s.n : s.n+m]
		for _, f := range s.chain {
			f.read(chunk)
		}
		if m > 0 {
			end, bad := s.frame.scan(s.buf[:s.n+m], m)
			if end >= 0 {
				s.ready = end
			}
			s.n += m
			if bad != nil {
				return bad
			}
		}
		if err != nil {
			return err
		}
	}
}

// flush passes on the whole events held. When one event fills the
// buffer instead, it moves to a larger buffer, to be passed on whole;
// when it fills that too, it goes out in parts, less what a filter
// holds back (the start of a key, say). A filter that holds back all of
// it (translation, which needs events whole) fails the stream.
func (s *streamRelay) flush() error {
	if s.ready > 0 {
		return s.send(s.ready, true)
	}
	if s.n < len(s.buf) {
		return nil
	}
	if !s.big {
		bp := relayBigPool.Get().(*[]byte)
		copy(*bp, s.buf[:s.n])
		relayBufPool.Put(s.bp)
		s.bp, s.buf, s.big = bp, *bp, true
		return nil
	}
	part := s.n
	for _, f := range s.chain {
		part = min(part, s.n-f.holdBack(s.buf[:s.n]))
	}
	if part <= 0 {
		return malformedEvent(s.p.name)
	}
	return s.send(part, false)
}

// send passes the first k held bytes down the chain (whole: they end
// where an event ends) and lets them go.
func (s *streamRelay) send(k int, whole bool) error {
	err := s.pass(s.buf[:k], whole)
	s.n = copy(s.buf, s.buf[k:s.n])
	s.ready = max(0, s.ready-k)
	return err
}

// pass takes p through the filters, in order, and writes what comes out
// of the last to the client. A filter that fails may pass on what came
// before the failure: that goes on down the chain and out first, and a
// later failure (a filter's further down, or the client's) is the one
// that ends the stream.
func (s *streamRelay) pass(p []byte, whole bool) error {
	var failed error
	for _, f := range s.chain {
		out, err := f.events(p, whole)
		if err != nil {
			failed = err
		}
		if p = out; len(p) == 0 {
			break
		}
	}
	s.midEvent = !whole
	if len(p) > 0 {
		if _, err := s.cw.write(p); err != nil {
			return errClientWrite
		}
	}
	return failed
}

// last passes on what is held when the provider has closed the stream,
// if the framer says it goes: the stream's last event, completed with
// the blank line it may lack. The error is the framer's verdict on the
// stream, or a failure while the last event went.
func (s *streamRelay) last() error {
	send, verdict := s.frame.last(s.buf[:s.n])
	if !send || s.n == 0 {
		return verdict
	}
	held := s.buf[:s.n]
	switch nl := blankLineFor(held); {
	case nl == nil:
	case s.n+len(nl) <= len(s.buf):
		held = s.buf[:s.n+copy(s.buf[s.n:], nl)]
	default: // a full buffer: rare enough to copy
		held = append(held[:s.n:s.n], nl...)
	}
	s.n, s.ready = 0, 0
	if err := s.pass(held, true); err != nil {
		return err
	}
	return verdict
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

// errClientGone: the client went away (or the gateway is shutting down)
// while the relay waited on the provider.
var errClientGone = errors.New("gateway: client gone")

// end is the relay's one end path, however the stream ended: err is
// what ended pump. In order:
//
//   - a stream the provider closed (io.EOF) passes on its last event,
//     if the framer lets it go;
//   - a read that failed because the client left is the client's;
//   - on any other failure, the whole events already read go out first:
//     every event parsed before a failure reaches the client before
//     anything Sluice adds;
//   - every filter's end, in chain order, judges or explains the end
//     (the translator's and the check's verdicts, the idle watch's
//     firing), and may add bytes after the stream's own (the validation
//     trailer), which go out only when it ended well;
//   - a read error no filter explained is the request's deadline, or a
//     cut.
func (s *streamRelay) end(err error) {
	switch {
	case err == io.EOF:
		err = s.last()
	case unexplained(err) && s.r.Context().Err() != nil:
		err = errClientGone
	}
	if err != nil && err != errClientWrite && err != errClientGone && s.ready > 0 {
		if s.send(s.ready, true) == errClientWrite {
			err = errClientWrite
		}
	}
	var tail []byte
	for _, f := range s.chain {
		var t []byte
		t, err = f.end(err)
		if tail == nil {
			tail = t
		} else {
			tail = append(tail, t...)
		}
	}

	x := s.x
	e, _ := err.(*streamEnd) // never wrapped
	switch {
	case err == nil:
		x.outcome = outcomeOK
		if len(tail) > 0 {
			s.cw.write(tail)
		}
		return
	case err == errClientWrite:
		s.g.clientGone(s.w, s.r, x)
		return
	case err == errClientGone:
		s.g.clientGone(s.w, s.r, x)
		if s.midEvent {
			x.abort = true
		}
		return
	case e != nil:
	case timedOut(s.ctx):
		e = &streamEnd{outcome: outcomeTimeout, reason: "stream_deadline", kind: protocol.Timeout,
			msg: "the request's deadline passed mid-stream"}
	default:
		e = upstreamEnd("stream_cut", fmt.Sprintf("provider %s broke off the stream", s.p.name))
	}
	x.outcome, x.reason = e.outcome, e.reason
	switch {
	case e.msg == "":
		// The provider's own error event has gone out.
	case s.midEvent:
		// An error event appended to half an event would be lost in it.
		x.abort = true
	default:
		s.cw.write(x.endpoint.Dialect.StreamErrorEvent(e.kind, e.msg))
	}
}

// unexplained: err is a read's own error, which neither a filter nor
// the framer has given a reason.
func unexplained(err error) bool {
	_, explained := err.(*streamEnd)
	return err != nil && err != errClientWrite && err != errClientGone && !explained
}
