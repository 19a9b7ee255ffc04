package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// Whole answers: a success that is not a stream is checked before the
// client sees it when it is small enough to hold (relayWhole), and
// relayed as it arrives, checked on the way, when it is not (relayLarge).
// One that generates output is held up to maxHeldAnswer, so that it can
// be cut at its output limit (relay_cap.go).

// relayWhole passes on a success that is not a stream. One up to
// heldWhole is read whole and checked before the client sees a byte,
// so a malformed one becomes a 502, and cut at its output limit; a
// longer one is relayed as it arrives (relayLarge).
func (g *Gateway) relayWhole(ctx context.Context, w http.ResponseWriter, r *http.Request, x *exchange, a *attempt) {
	resp, p := a.resp, a.t.provider
	defer resp.Body.Close()
	// The first 64 KiB come within the request's deadline; a provider
	// quiet past that, in a larger answer, meets the idle timeout.
	data, err := a.whole, error(nil)
	if !a.haveWhole {
		data, err = io.ReadAll(io.LimitReader(resp.Body, wholeBodyLimit+1))
	}
	x.upstreamDur = g.now().Sub(x.upstreamStart)
	x.ttft = x.upstreamDur
	if err != nil {
		g.upstreamFailed(w, r, x, ctx, err)
		return
	}
	if !isJSON(resp.Header) {
		x.fail(w, protocol.Upstream, outcomeUpstreamError, "upstream_malformed",
			fmt.Sprintf("provider %s sent a response that is not JSON", p.name), 0)
		return
	}
	if crossed(x, a) {
		var ok bool
		if data, ok = g.translateWhole(ctx, w, r, x, a, data); !ok {
			return
		}
	}
	if len(data) > wholeBodyLimit && !crossed(x, a) && x.outputLimit > 0 {
		// An answer that may be cut at its output limit is held whole,
		// as far as one is held to be translated (relay_cap.go).
		var idle bool
		data, idle, err = g.holdRest(a, data)
		x.upstreamDur = g.now().Sub(x.upstreamStart)
		switch {
		case idle:
			x.fail(w, protocol.Upstream, outcomeUpstreamError, "stream_idle",
				fmt.Sprintf("provider %s sent nothing for %s", p.name, g.streamIdle), 0)
			return
		case err != nil:
			g.upstreamFailed(w, r, x, ctx, err)
			return
		}
	}
	if len(data) > heldWhole(x) && !crossed(x, a) {
		// The stream relay's clock, with no stall deadline: a whole answer
		// has no progress to judge, only bytes.
		idle := &streamWatch{idle: g.streamIdle}
		idle.start(g.now(), 0, a.cancel)
		defer idle.stop()
		g.relayLarge(ctx, w, r, x, a, data, idle)
		return
	}
	tokens, found, valid, finish, input := protocol.AnswerUsage(data)
	if !valid {
		x.fail(w, protocol.Upstream, outcomeUpstreamError, "upstream_malformed",
			fmt.Sprintf("provider %s sent a malformed response", p.name), 0)
		return
	}
	k := x.creds.scrubber()
	k.scrub(data) // before any cut, which could leave a key's first part
	cut := false
	if out, n, ok := g.cutWhole(x, a, data); ok {
		data, tokens, found, finish, cut = out, int(n), false, "length", true
	}
	copyResponseHeaders(w.Header(), resp.Header, k)
	markVerdict(w.Header(), x)
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	x.wroteHeader, x.status = true, resp.StatusCode
	w.WriteHeader(resp.StatusCode)
	if _, err := writerFor(w, x, g.writeTimeout).send(data, false); err != nil {
		g.clientGone(w, r, x)
		return
	}
	x.outcome, x.outputTokens, x.usageKnown, x.finish = outcomeOK, tokens, found, finish
	x.reportedInput, x.reportedCached = input.Tokens, input.Cached
	if cut {
		x.reason = reasonOutputCap
	}
	p.authWarned.Store(false)
}

// holdRest reads the rest of a whole answer whose head is data, up to
// maxHeldAnswer+1 bytes in all, under the clock a large answer's relay
// has: a provider quiet for stream_idle_timeout partway has its call
// ended (idle). The first 64 KiB came within the request's deadline.
func (g *Gateway) holdRest(a *attempt, data []byte) (_ []byte, idle bool, err error) {
	watch := &streamWatch{idle: g.streamIdle}
	watch.start(g.now(), 0, a.cancel)
	defer watch.stop()
	limit := int(maxHeldAnswer + 1)
	for len(data) < limit {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)] // room to read into
		}
		watch.wait(time.Now(), false)
		n, rerr := a.resp.Body.Read(data[len(data):min(cap(data), limit)])
		watch.read(n)
		data = data[:len(data)+n]
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return data, watch.fired.Load(), rerr
		}
	}
	return data, false, nil
}

// relayLarge relays a success answer too large to hold, whose first
// wholeBodyLimit+1 bytes are in head, as it arrives. One JSON decoder
// reads it, checking it and reading its usage by path (answerPath), and
// every read the decoder makes is the relay's read too (largeBody): what
// the decoder has had goes on to the client, scrubbed of the key even
// across reads. Its last byte is held back until the answer has ended
// well-formed, so that an answer that turns out malformed, or breaks
// off, never reaches the client whole: the connection is aborted short
// of it (exchange.abort). A head the decoder refuses is a 502, before
// the client has a byte.
func (g *Gateway) relayLarge(ctx context.Context, w http.ResponseWriter, r *http.Request, x *exchange, a *attempt, head []byte, idle *streamWatch) {
	b := &largeBody{w: w, x: x, resp: a.resp, scrub: x.creds.scrubber(), idle: idle, cw: writerFor(w, x, g.writeTimeout)}
	b.buf = make([]byte, max(relayChunk, len(head)+1))
	b.n = copy(b.buf, head)
	b.dec = jsontext.NewDecoder(b, answerDecoding...)
	var u answerPath
	err := u.read(b.dec)
	x.upstreamDur = g.now().Sub(x.upstreamStart)
	if err != nil && !x.wroteHeader {
		x.fail(w, protocol.Upstream, outcomeUpstreamError, "upstream_malformed",
			fmt.Sprintf("provider %s sent a malformed response", a.t.provider.name), 0)
		return
	}
	var in protocol.Input
	x.outputTokens, x.usageKnown, x.finish, in = u.result()
	x.reportedInput, x.reportedCached = in.Tokens, in.Cached
	switch {
	case err == nil:
		// Whole and well-formed: the held bytes complete it.
		b.commit()
		b.scrub.scrub(b.buf[:b.n])
		if b.send(b.buf[:b.n]) != nil {
			g.clientGone(w, r, x)
			x.abort = true
			return
		}
		x.outcome = outcomeOK
		return
	case b.err == errClientLeft:
		g.clientGone(w, r, x)
	case b.err == errAnswerToken:
		x.outcome, x.reason = outcomeUpstreamError, "upstream_too_large"
	case b.err == nil, errors.Is(b.err, io.EOF):
		// The decoder refused what it read, or the answer ended early.
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

// answerDecoding accepts what encoding/json accepts (repeated keys,
// invalid UTF-8 in strings), as a small answer is checked; not tracking
// keys also keeps the decoder's memory to one token.
var answerDecoding = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}

// maxAnswerToken bounds one token (a string, most likely) of a large
// answer: the decoder holds a token whole, so this (and one read more)
// is what a provider can make the relay hold. A real one is far smaller
// (an image's base64 is a few MiB); an answer with a longer one is
// aborted. (A variable so that tests can make it small.)
var maxAnswerToken int64 = 16 << 20

var (
	errClientLeft  = errors.New("gateway: the client is gone")
	errAnswerToken = errors.New("gateway: an answer's JSON token is too large")
)

// largeBody is a large answer's body as its decoder reads it. buf[:n]
// has come from the provider and not yet gone to the client, and of it
// buf[:given] has gone to the decoder: when the decoder has had it all,
// its next read sends what it has had (but for what could begin a secret,
// and the last byte) and reads the provider's next bytes into buf.
type largeBody struct {
	w     http.ResponseWriter
	x     *exchange
	resp  *http.Response
	scrub *keyScrub
	idle  *streamWatch
	cw    clientWriter
	dec   *jsontext.Decoder

	buf      []byte
	n, given int
	// handed counts what the decoder has had in all.
	handed int64
	// next is the provider's error that came with the last bytes read,
	// for once the decoder has had them; err is the error Read returned.
	next, err error
}

func (b *largeBody) Read(p []byte) (int, error) {
	if b.given == b.n {
		if err := b.fill(); err != nil {
			b.err = err
			return 0, err
		}
	}
	m := copy(p, b.buf[b.given:b.n])
	b.given += m
	b.handed += int64(m)
	return m, nil
}

// fill sends on what the decoder has had and reads more into buf.
func (b *largeBody) fill() error {
	if b.handed-b.dec.InputOffset() > maxAnswerToken {
		return errAnswerToken
	}
	if b.next != nil {
		return b.next
	}
	b.commit()
	// Hold back what could begin the key, and always the last byte. The
	// held bytes are scrubbed with the rest: a key that ends the read
	// would otherwise go out but for its last byte.
	hold := max(b.scrub.partial(b.buf[:b.n]), 1)
	b.scrub.scrub(b.buf[:b.n]) // the decoder has had them as they came
	if b.n > hold {
		if err := b.send(b.buf[:b.n-hold]); err != nil {
			return errClientLeft
		}
		b.n = copy(b.buf, b.buf[b.n-hold:b.n])
		b.given = b.n
	}
	b.idle.wait(time.Now(), false)
	m, err := b.resp.Body.Read(b.buf[b.n:])
	b.idle.read(m)
	if m > 0 {
		b.n += m
		b.next = err
		return nil
	}
	return err // (0, nil) reads again
}

// commit sends the status and headers, once: the decoder has had the
// head and not refused it.
func (b *largeBody) commit() {
	if b.x.wroteHeader {
		return
	}
	copyResponseHeaders(b.w.Header(), b.resp.Header, b.scrub)
	markVerdict(b.w.Header(), b.x)
	if b.resp.ContentLength >= 0 {
		// Scrubbing keeps lengths, so the provider's length is true.
		b.w.Header().Set("Content-Length", strconv.FormatInt(b.resp.ContentLength, 10))
	}
	b.x.wroteHeader, b.x.status = true, b.resp.StatusCode
	b.w.WriteHeader(b.resp.StatusCode)
}

// send writes p to the client; the idle clock runs only while the
// provider is waited on, so a slow client is not a quiet provider.
func (b *largeBody) send(p []byte) error {
	_, err := b.cw.write(p)
	return err
}

// errBadAnswer marks a whole answer that broke off, or proved malformed,
// before the client saw any of it: a failed call, safe to retry.
var errBadAnswer = errors.New("gateway: malformed answer")

// readWhole reads a whole 2xx JSON answer's head (up to wholeBodyLimit,
// most answers whole) before the call is committed, so that an answer
// whose body breaks off after its headers (a reset, a truncated body)
// is a failed call like any other, restarted on the next target by the
// retry path: nothing of it has reached the client. An answer longer
// than that is relayed as it arrives, as before (relayLarge).
func (a *attempt) readWhole() {
	data, err := io.ReadAll(io.LimitReader(a.resp.Body, wholeBodyLimit+1))
	if err == nil && len(data) <= wholeBodyLimit && !json.Valid(data) {
		err = errBadAnswer
	}
	if err != nil {
		a.resp.Body.Close()
		a.resp, a.err = nil, errOrEOF(err)
		return
	}
	a.whole, a.haveWhole = data, true
}
