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

	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// The relays: a provider's answer goes to the client as it arrives, and
// every way that can go wrong on either side ends the request cleanly.
//
//   - A client that stops reading: each write has server.write_timeout to
//     be accepted, or the request ends as the client's, and the deferred
//     cancel stops the upstream call (clientWriter).
//   - A provider that goes quiet mid-answer: server.stream_idle_timeout
//     with no bytes, or the stall deadline with no progress (text, tool
//     input, a finish, usage: a keepalive comment or a ping is not
//     progress), cancels the call (streamWatch), and a stream that cannot
//     be continued ends with an error event.
//   - A stream that ends without its terminator, or carries an event that
//     is not well-formed: a failure for the provider's breaker, and the
//     client gets an error event in its dialect instead of the rest
//     (protocol.StreamCheck). Events go to the client whole, so it never
//     sees half of one, and every whole event that came before the
//     failure reaches it before the error event does.
//   - A large answer that turns out malformed, or breaks off, after its
//     status went out: the connection is aborted, so the client sees a
//     broken response rather than a short one that looks whole.
//   - A provider that ignores max_tokens: a stream is relayed up to the
//     request's output limit, counted by its events, and ended there as
//     a length stop in the client's dialect (relay_cap.go).
//
// Every stream, translated or continued or not, takes one relay
// (relayStream): one read loop (pump), one clock for idleness and
// stalls, one end path, and a chain of filters that each own one concern
// (relay_filter.go). A stream is read by its meaning: its source's
// protocol.StreamCheck frames every event, parses it once and keeps one
// record of what the stream said (protocol.StreamFacts), and every
// decision here reads that record, never the bytes. A continuation is a
// change of source inside the same loop (relay_continue.go).

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

func writerFor(w http.ResponseWriter, x *exchange, timeout time.Duration) clientWriter {
	return clientWriter{w: w, rc: http.NewResponseController(w), timeout: timeout, x: x}
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

// source is where the relay's bytes come from: the committed call, or a
// continuation of it. Its check frames, judges and reads its events in
// its provider's dialect.
type source struct {
	p      *provider
	body   io.ReadCloser
	check  *protocol.StreamCheck
	cancel context.CancelFunc
	// off is the stream offset (the check's count of bytes fed) of the
	// relay buffer's first byte; seen, how many of the check's marks
	// have gone down the chain.
	off  int64
	seen int
	// splice, for a continuation: its events become the stream's own.
	splice *splice
}

// streamRelay is one SSE answer on its way to the client.
type streamRelay struct {
	g   *Gateway
	w   http.ResponseWriter
	r   *http.Request
	ctx context.Context // the call's: its deadline is the request's
	x   *exchange
	cw  clientWriter
	src source
	// buf holds the source's bytes read and not yet passed on: the
	// first n, of which the first ready are whole events (as the check
	// finds them). bp is buf's pool slot; big says it came from
	// relayBigPool.
	bp       *[]byte
	big      bool
	buf      []byte
	n, ready int
	// midEvent: part of an event that has not ended has gone out;
	// parts: an event ever went out in parts (so it was not read);
	// errHeld: what is held past ready is the provider's error event.
	midEvent, parts, errHeld bool
	// translated: the original source speaks another dialect than the
	// client, and the chain translates it.
	translated bool
	chain      []streamFilter
	// tail is the chain after translation: what the relay's own events
	// (a continuation's, a stream's ending) go through; origChain, the
	// committed call's chain, once a continuation's has taken its place.
	tail, origChain []streamFilter
	// filters holds the chain's filters, in the relay's own allocation.
	filters streamFilters
	watch   streamWatch
	answer  answerState
	// out is what the relay writes of its own (a continuation's events,
	// the stream's ending), reused.
	out []byte
	// The output relayed (relay_cap.go): capBase by the sources before
	// this one, relayedOut in all, up to the last event passed; cut: the
	// stream reached its limit, and was cut there.
	capBase, relayedOut int64
	cut                 bool
	// nextSeq is the Responses API's sequence_number after the last
	// event passed (a length stop's).
	nextSeq int64
}

// relayStream copies an SSE answer to the client as it arrives, whole
// events at a time, flushing after every write so no event waits for the
// next one. The attempt's buffer holds the stream's head and first
// token, already checked; the relay returns it to its pool. Once the
// headers are out the status is committed: a failure after that ends the
// stream with an error event in the client's dialect, unless a
// continuation mends it. A provider of the other API is relayed the same
// way, with a translation filter in the chain (newChain).
func (g *Gateway) relayStream(ctx context.Context, w http.ResponseWriter, r *http.Request, x *exchange, a *attempt) {
	s := &streamRelay{g: g, w: w, r: r, ctx: ctx, x: x, bp: a.buf, translated: crossed(x, a)}
	s.src = source{p: a.t.provider, body: a.resp.Body, check: &a.check, cancel: a.cancel}
	x.relayed = &a.check
	text := a.text
	a.buf, a.text = nil, nil
	defer s.release()
	defer func() { s.src.body.Close() }()
	copyResponseHeaders(w.Header(), a.resp.Header, x.creds.scrubber())
	w.Header().Set("X-Accel-Buffering", "no")
	x.wroteHeader, x.status = true, a.resp.StatusCode
	w.WriteHeader(a.resp.StatusCode)
	s.cw = writerFor(w, x, g.writeTimeout)

	s.buf, s.n = *s.bp, a.first
	s.newChain(text)
	// The head was read before the relay began: the watch starts from
	// it, and the marks the check made of it are framed as any read's.
	s.watch.start(g.now(), s.src.check.Facts().Progress, s.src.cancel)
	err := s.framed(a.ready)
	if err == nil {
		err = s.pump()
	}
	if err == io.EOF {
		err = s.last()
	}
	err = s.carryOn(err)
	x.upstreamDur = g.now().Sub(x.upstreamStart)
	s.end(err)
}

func (s *streamRelay) release() {
	s.answer.release()
	s.src.check.Release()
	if s.big {
		relayBigPool.Put(s.bp)
	} else {
		relayBufPool.Put(s.bp)
	}
}

// errClientWrite: a write to the client failed.
var errClientWrite = errors.New("gateway: client write failed")

// pump is the read loop. It passes on the whole events held, then reads
// the source's next bytes, until the stream ends or breaks: io.EOF, the
// read's error, a *streamEnd the check found (a malformed event, the
// provider's error event) or a filter returned, or errClientWrite. The
// events of the last read are still held when it returns: the end path
// decides what becomes of them.
func (s *streamRelay) pump() error {
	for {
		if err := s.flush(); err != nil {
			return err
		}
		s.watch.wait(s.g.now(), lifecycle.Watched(s.facts(), s.src.splice != nil || s.src.check.Facts().Token))
		m, err := s.src.body.Read(s.buf[s.n:])
		s.watch.read(m)
		if m > 0 {
			if bad := s.scan(m); bad != nil {
				return bad
			}
		}
		if err != nil {
			return err
		}
	}
}

// scan has the check read the m bytes the last read added to what is
// held, and frames what it found.
func (s *streamRelay) scan(m int) error {
	base := s.n
	end, ok, badAt := s.src.check.Feed(s.buf[base : base+m])
	s.n += m
	s.watch.progressed(s.g.now(), s.src.check.Facts().Progress)
	if !ok {
		// The events before the malformed one go on; it does not.
		if badAt >= 0 {
			s.ready = max(s.ready, base+badAt)
		}
		return malformedEvent(s.src.p.name)
	}
	if end < 0 {
		return nil
	}
	return s.framed(base + end)
}

// framed takes the whole events the check found, up to ready: they are
// ready to go, except a provider's error event, which is held back, with
// what follows it, so that a continuation can take its place
// (relay_continue.go); the events before it go on.
func (s *streamRelay) framed(ready int) error {
	marks := s.src.check.Marks()
	for i := s.src.seen; i < len(marks); i++ {
		if !marks[i].Error {
			continue
		}
		start := s.markStart(marks, i)
		s.ready = max(s.ready, start)
		s.errHeld = true
		s.answer.heldError(marks, i)
		return upstreamEnd(protocol.StreamErrorEvent, "")
	}
	s.ready = max(s.ready, ready)
	return nil
}

// markStart is where the event of marks[i] begins in buf.
func (s *streamRelay) markStart(marks []protocol.EventMark, i int) int {
	if i == 0 {
		return max(0, int(s.src.check.MarksFrom()-s.src.off))
	}
	return max(0, int(marks[i-1].End-s.src.off))
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
		return malformedEvent(s.src.p.name)
	}
	s.parts = true
	return s.send(part, false)
}

// send passes the first k held bytes down the chain (whole: they end
// where an event ends) and lets them go.
func (s *streamRelay) send(k int, whole bool) error {
	err := s.pass(s.buf[:k], whole)
	s.n = copy(s.buf, s.buf[k:s.n])
	s.ready = max(0, s.ready-k)
	s.src.off += int64(k)
	return err
}

// pass takes p through the source's events stage (what the relay
// itself does with each event: a continuation's become the stream's
// own, an injected usage chunk is dropped) and the filters, in order,
// and writes what comes out of the last to the client. A filter that
// fails may pass on what came before the failure: that goes on down the
// chain and out first, and a later failure (a filter's further down, or
// the client's) is the one that ends the stream.
func (s *streamRelay) pass(p []byte, whole bool) error {
	var failed error
	p, failed = s.events(p, whole)
	for _, f := range s.chain {
		if len(p) == 0 {
			break
		}
		out, err := f.events(p, whole)
		if err != nil {
			failed = err
		}
		p = out
	}
	s.midEvent = !whole
	if len(p) > 0 {
		if _, err := s.cw.write(p); err != nil {
			return errClientWrite
		}
	}
	return failed
}

// events is the relay's own stage over the whole events p (or, when
// whole is false, a part of one too long to hold), as the check's marks
// describe them: it lets every mark that ends in p go, and returns what
// goes on down the chain: a continuation's events become the stream's
// own (splice), and an injected usage chunk is dropped.
func (s *streamRelay) events(p []byte, whole bool) ([]byte, error) {
	if !whole {
		return p, nil
	}
	marks := s.src.check.Marks()
	end := s.src.off + int64(len(p))
	i := s.src.seen
	for i < len(marks) && marks[i].End >= 0 && marks[i].End <= end {
		i++
	}
	if i < len(marks) && marks[i].End < 0 {
		i++ // the stream's last event, closed without its blank line
	}
	in := marks[s.src.seen:i]
	from := s.markStart(marks, s.src.seen)
	s.src.seen = i
	if i == len(marks) {
		defer s.clearMarks()
	}
	p, in, cut := s.capped(p, in, from)
	if s.src.splice != nil {
		out, err := s.src.splice.events(s, p, in)
		if err == nil {
			err = cut
		}
		return out, err
	}
	if s.filters.dropUsage {
		p = dropInjectedUsage(p, s.src.off, in)
	}
	return p, cut
}

// clearMarks lets the check forget the marks the relay has taken.
func (s *streamRelay) clearMarks() {
	s.src.check.ClearMarks()
	s.src.seen = 0
}

// dropInjectedUsage removes, in place, the usage-only chunks among the
// events p holds (p begins at stream offset off; the first mark's event
// where the one before it ended): the chunk an OpenAI-style stream ends with when Sluice, not
// the client, asked for stream_options.include_usage
// (exchange.injectedUsage). Every other event is kept as it came.
func dropInjectedUsage(p []byte, off int64, marks []protocol.EventMark) []byte {
	drop := false
	for _, m := range marks {
		drop = drop || m.UsageOnly
	}
	if !drop {
		return p
	}
	out := p[:0]
	start := 0
	for _, m := range marks {
		end := len(p)
		if m.End >= 0 {
			end = min(len(p), int(m.End-off))
		}
		if end < start {
			continue
		}
		if !m.UsageOnly {
			out = append(out, p[start:end]...) // never ahead of what is read: in place is safe
		}
		start = end
	}
	return append(out, p[start:]...)
}

// last passes on what is held when the source has closed the stream, if
// the check says it goes: the stream's last event, completed with the
// blank line it may lack, unless it was cut short inside its JSON. The
// error is the check's verdict on the stream, or a failure while the
// last event went.
func (s *streamRelay) last() error {
	verdict := s.src.check.End()
	s.watch.progressed(s.g.now(), s.src.check.Facts().Progress)
	var err error
	switch verdict {
	case protocol.StreamOK:
	case protocol.StreamErrorEvent:
		err = upstreamEnd(verdict, "")
	default:
		err = upstreamEnd(verdict, fmt.Sprintf("provider %s ended the stream before it was complete", s.src.p.name))
	}
	if verdict == protocol.StreamMalformed || s.n == 0 {
		return err
	}
	nl := blankLineFor(s.buf[:s.n])
	if s.n+len(nl) <= len(s.buf) {
		s.n += copy(s.buf[s.n:], nl)
		nl = nil
	}
	if ferr := s.framed(s.n); ferr != nil {
		return ferr // the provider's error event, held back
	}
	held := s.buf[:s.n]
	if nl != nil { // a full buffer: rare enough to copy
		held = append(held[:s.n:s.n], nl...)
	}
	k := s.n
	s.n, s.ready = 0, 0
	perr := s.pass(held, true)
	s.src.off += int64(k)
	if perr != nil {
		return perr
	}
	return err
}

// blankLineFor is what ends b with a blank line: nothing, a line ending
// or two, counting CRLF, a lone CR and a lone LF each as one.
func blankLineFor(b []byte) []byte {
	ends := 0
	for ends < 2 && len(b) > 0 {
		switch {
		case len(b) >= 2 && b[len(b)-2] == '\r' && b[len(b)-1] == '\n':
			b = b[:len(b)-2]
		case b[len(b)-1] == '\n' || b[len(b)-1] == '\r':
			b = b[:len(b)-1]
		default:
			return blankLine[ends:]
		}
		ends++
	}
	if ends >= 2 {
		return nil
	}
	return blankLine[ends:]
}

var (
	newline   = []byte("\n")
	blankLine = []byte("\n\n")
)

// errClientGone: the client went away (or the gateway is shutting down)
// while the relay waited on the provider.
var errClientGone = errors.New("gateway: client gone")

// end is the relay's one end path, however the stream ended: err is
// what the read loop and the continuation stage ended with. In order:
//
//   - a read that failed because the client left is the client's;
//   - on any other failure, the whole events already read go out first:
//     every event parsed before a failure reaches the client before
//     anything Sluice adds;
//   - every filter's end, in chain order, judges or explains the end
//     (the translator's and the check's verdicts), and may add bytes
//     after the stream's own, which go out only when it ended well;
//   - a stream that carried its finish reason is complete whatever its
//     terminator: it gets the terminator its client expects, once the
//     translation has judged the end and before the filters after it
//     do, so that they see the stream whole (the validation collector
//     judges the answer, and its verdict follows the terminator);
//   - a read error no filter explained is the request's deadline, or a
//     cut.
func (s *streamRelay) end(err error) {
	if unexplained(err) && s.r.Context().Err() != nil {
		err = errClientGone
	}
	if err != nil && err != errClientWrite && err != errClientGone && s.ready > 0 {
		if s.send(s.ready, true) == errClientWrite {
			err = errClientWrite
		}
	}
	var tail []byte
	// The filters before the tail (the translation's) end first; the
	// terminator goes through the tail's.
	mendAt := len(s.chain) - len(s.tail)
	for i, f := range s.chain {
		if i == mendAt {
			err = s.mend(err)
		}
		var t []byte
		t, err = f.end(err)
		if tail == nil {
			tail = t
		} else {
			tail = append(tail, t...)
		}
	}
	if mendAt >= len(s.chain) {
		err = s.mend(err)
	}
	s.record()

	x := s.x
	e, _ := err.(*streamEnd) // never wrapped
	switch {
	case err == nil:
		x.outcome = outcomeOK
		if s.cut {
			x.reason = reasonOutputCap
		}
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
		e = upstreamEnd("stream_cut", fmt.Sprintf("provider %s broke off the stream", s.src.p.name))
	}
	x.outcome, x.reason = e.outcome, e.reason
	switch {
	case e.msg == "":
		// The provider's own error event has gone out.
	case s.midEvent:
		// An error event appended to half an event would be lost in it.
		x.abort = true
	default:
		s.cw.write(x.streamErrorEvent(e.kind, e.msg))
	}
}

// mend gives a stream complete by content the terminator its client
// expects: the finish reason came, the terminator did not (err says the
// stream was unterminated); and a stream cut at its output limit its
// length stop (errOutputCap). It returns the stream's verdict then.
func (s *streamRelay) mend(err error) error {
	if err == errOutputCap {
		// Cut at its limit: a length stop ends it (relay_cap.go).
		return s.passOwn(s.capEnding())
	}
	if e, ok := err.(*streamEnd); !ok || e.reason != protocol.StreamUnterminated || !s.complete(err) {
		return err
	}
	return s.passOwn(s.answer.terminator(s))
}

// unexplained: err is a read's own error, which neither a filter nor
// the check has given a reason.
func unexplained(err error) bool {
	_, explained := err.(*streamEnd)
	return err != nil && err != errClientWrite && err != errClientGone && !explained
}
