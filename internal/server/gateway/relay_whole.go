package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// Whole answers: a success that is not a stream is checked before the
// client sees it when it is small enough to hold (relayWhole), and
// relayed as it arrives, checked on the way, when it is not (relayLarge).

// relayWhole passes on a success that is not a stream. One up to
// wholeBodyLimit is read whole and checked before the client sees a byte,
// so a malformed one becomes a 502; a longer one is relayed as it
// arrives (relayLarge).
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
	tokens, found, valid, finish, input := protocol.AnswerUsage(data)
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
	x.reportedInput, x.reportedCached = input.Tokens, input.Cached
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
	x.reportedInput, _ = usage.InputTokens()
	x.reportedCached = usage.CachedTokens()
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

// errBadAnswer marks a whole answer that broke off, or proved malformed,
// before the client saw any of it: a failed call, safe to retry.
var errBadAnswer = errors.New("gateway: malformed answer")

// readWhole reads a whole 2xx JSON answer's head (up to wholeBodyLimit,
// most answers whole) before the call is committed, so that an answer
// whose body breaks off after its headers (a reset, a truncated body)
// is a failed call like any other, restarted on the next target by the
// retry path: nothing of it has reached the client. An answer longer
// than that is relayed as it arrives, as before (relayLarge).
func (g *Gateway) readWhole(a *attempt) {
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
