package gateway

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/sluice-gw/sluice/internal/server/metrics"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	"github.com/sluice-gw/sluice/internal/server/runner"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// errAttemptPanic marks an attempt whose goroutine panicked.
var errAttemptPanic = errors.New("gateway: panic in an upstream call")

// errBadStream marks a stream that proved malformed, or ended without
// its terminator, before its first token: a failed call, safe to retry.
var errBadStream = errors.New("gateway: malformed stream")

// errNoSpend marks a second call not made: its key's spend limit could
// not take its reservation (spend.go).
var errNoSpend = errors.New("gateway: spend limit reached; second call not made")

// attempt is one upstream call of a request: its first call (n 0) or its
// hedge (n 1). It runs until its first byte, the response headers and,
// for a stream, the first chunk; only then is it committed, so a hedge
// race is decided by who answers first, and nothing is retried or hedged
// once a byte has gone to the client.
type attempt struct {
	n int
	// second is what made this call when it is the request's second:
	// hedge, rescue or retry (responseheaders.go).
	second string
	t      target
	// base is the API root the call goes to: its provider's, or the
	// replica's the engine picked in a pool.
	base    string
	ctx     context.Context
	cancel  context.CancelFunc
	start   time.Time
	firstAt time.Time
	resp    *http.Response
	// buf is a stream's relay buffer, taken from relayBufPool; its first
	// first bytes are the stream's head and first token, of which the
	// first ready are whole events, checked by check.
	buf   *[]byte
	first int
	ready int
	check protocol.StreamCheck
	// text is the text its check captures, from textPool, until the
	// relay takes it; capture says a continuation could go on from it.
	text    *[]byte
	capture bool
	err     error
	ep      protocol.Endpoint // the client's, which says how its streams end
	// span is the call's trace span; nil with tracing off (tracing.go).
	span trace.Span
	// creds are the request's secrets (exchange.creds), set when the
	// call is made.
	creds *credentials
	// checked: a whole answer read and checked against the request's
	// contract (readAnswer); invalid says why it failed, empty when it
	// held; unchecked says why it could not be judged (the check took
	// too long), and an unjudged answer is neither retried nor refused;
	// retryInvalid: an invalid answer is to be retried, so the call is
	// not usable.
	checked      bool
	invalid      string
	unchecked    string
	retryInvalid bool
	// hold is the call's spend reservation (spend.go), nil without
	// spend limits: settled when it loses, or when the request ends.
	hold *spendHold
	// whole is a whole answer's head, read before the call is
	// committed (readWhole); haveWhole says it was.
	whole     []byte
	haveWhole bool
}

// newAttempt makes an attempt, with a context of its own: a loser of a
// race, or a stream whose provider goes quiet, is cancelled alone.
func newAttempt(m *metrics.Metrics, call *runner.Call, n int, t target) *attempt {
	a := &attempt{n: n, t: t, base: t.provider.baseURL}
	a.ctx, a.cancel = context.WithCancel(call.Context())
	if p := t.provider; len(p.replicas) > 0 {
		if i, ok := call.Replica(n); ok && i < len(p.replicas) {
			a.base = p.replicas[i].baseURL
			m.ReplicaCalls.WithLabelValues(p.name, p.replicas[i].name).Inc()
		}
	}
	return a
}

// readHead reads a stream up to its first token, into the buffer the
// relay will use (so a stream holds one buffer for its life, not two).
// A provider may send its headers and a stream head (a role-only chunk,
// message_start) before it generates anything; the call has answered
// only once a token, or anything else past the head, has come. Until
// then it is not committed: a hedge can still win, and a cut is still a
// failure that is safe to retry. A head that fills the buffer, or a
// stream that ends cleanly, is taken as the answer. The client's headers
// wait for the first token too, as they waited for the first chunk.
//
// The stream is checked as it is read (protocol.StreamCheck): a first
// event that is not well-formed, or a stream that ends without its
// terminator before its first token, is a failed call too, and the
// client never sees it.
func (a *attempt) readHead(now func() time.Time) {
	a.buf = relayBufPool.Get().(*[]byte)
	a.check = protocol.NewStreamCheckFor(a.ep, a.t.provider.dialect)
	a.check.KeepMarks()
	if a.capture && a.t.provider.dialect == a.ep.Dialect {
		// The text the client will have, for a continuation: read as the
		// check reads each event, from the first.
		a.text = textPool.Get().(*[]byte)
		a.check.CaptureText(a.text)
	}
	buf := *a.buf
	for {
		n, err := a.resp.Body.Read(buf[a.first:])
		if n > 0 {
			b, ok, _ := a.check.Feed(buf[a.first : a.first+n])
			if !ok {
				a.failHead(errBadStream)
				return
			}
			if b >= 0 {
				a.ready = a.first + b
			}
		}
		a.first += n
		if a.check.Facts().Token || a.first == len(buf) {
			a.firstAt = now()
			return
		}
		if err == io.EOF && a.first > 0 {
			// A whole stream that ended before any event was past the
			// head is an answer, if it ended properly.
			if a.check.End() != protocol.StreamOK {
				a.failHead(errBadStream)
				return
			}
			a.firstAt = now()
			return
		}
		if err != nil {
			// Cut before the first token: a failed call, still safe to
			// hedge or fail over.
			a.failHead(errOrEOF(err))
			return
		}
	}
}

// failHead ends a stream that failed before its first token.
func (a *attempt) failHead(err error) {
	a.resp.Body.Close()
	a.resp, a.err = nil, err
	a.first, a.ready = 0, 0
	a.release()
}

// release returns the attempt's relay buffer, and what its check held.
func (a *attempt) release() {
	if a.buf != nil {
		relayBufPool.Put(a.buf)
		a.buf = nil
	}
	if a.text != nil {
		*a.text = (*a.text)[:0]
		textPool.Put(a.text)
		a.text = nil
	}
	a.check.Release()
}

func errOrEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// usable: the call answered 2xx (a stream, with its first chunk), and
// not with an answer that failed validation and is to be retried.
func (a *attempt) usable() bool {
	return a.err == nil && a.resp.StatusCode/100 == 2 && (a.invalid == "" || !a.retryInvalid)
}

// answered: the call has an answer to relay, usable or not.
func (a *attempt) answered() bool { return a.err == nil && a.resp != nil && a.resp.StatusCode/100 == 2 }

// outcome classifies an attempt that is not relayed to the client.
func (a *attempt) outcome(callCtx context.Context) lifecycle.Outcome {
	return a.ending(callCtx).Outcome()
}

// ending is how an attempt that is not relayed to the client ended, in
// the engine's terms (lifecycle.Ending).
func (a *attempt) ending(callCtx context.Context) lifecycle.Ending {
	switch {
	case errors.Is(a.err, errNoSpend):
		return lifecycle.Ending{Kind: lifecycle.EndAbandoned} // no call, no verdict on its provider
	case a.err == nil:
		e := lifecycle.Ending{Kind: lifecycle.EndRefused, Status: a.resp.StatusCode, RetryAfter: retryAfter(a.resp.Header), Responses: a.ep.IsResponses()}
		switch {
		case a.resp.StatusCode/100 == 2 && a.invalid != "":
			e.Kind = lifecycle.EndInvalid
		case a.resp.StatusCode/100 == 2:
			e.Kind = lifecycle.EndAnswered
		}
		return e
	case timedOut(callCtx):
		return lifecycle.Ending{Kind: lifecycle.EndDeadline}
	case a.ctx.Err() != nil:
		return lifecycle.Ending{Kind: lifecycle.EndAbandoned}
	}
	return lifecycle.Ending{Kind: lifecycle.EndUnreachable}
}

// discard ends an attempt of c whose answer the client will not get,
// and records it (lost: it lost a race).
func (a *attempt) discard(c *calls, o lifecycle.Outcome, lost bool) {
	c.recordDiscarded(a, lost)
	a.cancel()
	a.endAttemptSpan(o.Kind.String())
	if a.resp != nil {
		a.resp.Body.Close()
	}
	a.release()
	c.call.End(a.n, o)
}

// refusal classifies an upstream answer that is not a usable one: the
// provider said it is at capacity (429, 503, 529), or failed otherwise,
// with its Retry-After either way.
func refusal(resp *http.Response) lifecycle.Outcome {
	return lifecycle.StatusOutcome(resp.StatusCode, retryAfter(resp.Header))
}
