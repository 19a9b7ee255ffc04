package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	sluiceclient "github.com/sluice-gw/sluice/client"
	"github.com/sluice-gw/sluice/internal/sim/report"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// Bounds on what the client reads, so that a misbehaving target cannot
// exhaust the generator's memory.
const (
	maxBody     = 32 << 20 // a non-streaming answer
	maxErrBody  = 64 << 10 // an error answer
	maxSSELine  = 8 << 20  // one SSE line
	afterStream = 64 << 10 // read past the end marker, for connection reuse
)

// attempt is one HTTP exchange and how it ended, judged on its own.
type attempt struct {
	// outcome is OK for a complete 2xx answer; the request decides
	// whether that was late.
	outcome report.Outcome
	status  int // 0 when no response arrived
	// started: a 2xx status arrived, so the answer is committed and a
	// retry would duplicate work the server already did.
	started bool
	// abandoned: the client's own context ended the exchange.
	abandoned bool
	hint      time.Duration // server's Retry-After
	// degraded: the gateway served the answer degraded
	// (X-Sluice-Degraded).
	degraded bool
	// noRetry: the answer said X-Should-Retry: false.
	noRetry bool
	// reached: a shed answer says its request reached a provider
	// (X-Sluice-Attempts): it was answered early, not refused.
	reached bool
	// timedOut: the attempt's own timeout passed with no first content,
	// and the client hung up on it; it ends as a lost connection would
	// (status 0, not started), which the retry policy may retry.
	timedOut bool
	// timer is the attempt's own timeout while it runs (nil: untimed).
	timer *attemptTimer
	sent  time.Time
	first time.Time // first content (streams) or headers
	end   time.Time
	err   error
}

// client sends attempts. One transport serves the whole run so that
// connections are reused the way a pool of real clients would reuse them.
type client struct {
	hc    *http.Client
	tr    *http.Transport
	tally *tally
}

func newClient(t *tally) *client {
	tr := &http.Transport{
		// A load generator behind an environment proxy would measure the
		// proxy.
		Proxy:       nil,
		DialContext: (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		// Open-loop arrivals can hold thousands of requests at once; a
		// small idle pool would close and redial connections under load.
		MaxIdleConns:        0,
		MaxIdleConnsPerHost: 1 << 14,
		// Below the usual server idle timeouts (the gateway's is 120 s):
		// a POST sent on a connection the server is closing is not
		// replayed by the transport and would look like a lost gateway.
		IdleConnTimeout: 30 * time.Second,
		// Compressed answers would hide when bytes really arrive.
		DisableCompression: true,
	}
	return &client{hc: &http.Client{Transport: tr}, tr: tr, tally: t}
}

func (c *client) close() { c.tr.CloseIdleConnections() }

// do sends one attempt. hdr is shared by a request's attempts, which run
// one after another, and is never written. timeout, when positive, is
// the attempt's own (clients.timeout): with no first content by then the
// client hangs up on this attempt alone, and it ends timedOut. ctx is
// the request's: its end abandons the attempt, whatever the timeout. d
// is the dialect the request speaks: an answer in any other shape fails,
// whichever provider served it.
func (c *client) do(ctx context.Context, url string, d protocol.Dialect, body []byte, hdr http.Header, timeout time.Duration) (a attempt) {
	if timeout > 0 {
		parent := ctx
		actx, cancel := context.WithCancel(parent)
		defer cancel()
		a.timer = startAttemptTimer(timeout, cancel)
		defer a.timer.stop()
		defer func() {
			// The request's own end (patience, the run's) comes first:
			// that is the client leaving, not an attempt timing out.
			if a.timer.expired() && parent.Err() == nil && a.outcome != report.OK {
				a.timeOut()
			}
			a.timer = nil
		}()
		ctx = actx
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		a.outcome, a.err, a.sent = report.Failed, err, time.Now()
		a.end = a.sent
		return a
	}
	req.Header = hdr
	c.tally.begin()
	defer c.tally.done()
	a.sent = time.Now()
	resp, err := c.hc.Do(req)
	if err != nil {
		a.end, a.err = time.Now(), err
		a.outcome, a.abandoned = transportOutcome(ctx, err)
		return a
	}
	defer resp.Body.Close()
	a.status = resp.StatusCode
	a.hint, _ = sluiceclient.RetryAfter(resp.Header, a.sent) // no hint: zero, and the backoff decides
	a.noRetry = resp.Header.Get("X-Should-Retry") == "false"
	stream := resp.StatusCode/100 == 2 && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	if !stream {
		// The answer is here: whatever it says, the attempt is no longer
		// timed. A stream is timed until its first content.
		a.timer.content()
	}
	switch {
	case resp.StatusCode/100 == 2:
		a.started = true
		a.degraded = resp.Header.Get("X-Sluice-Degraded") != ""
		if stream {
			readStream(ctx, resp.Body, d, &a)
		} else {
			a.first = time.Now()
			readJSON(ctx, resp.Body, d, &a)
		}
	case resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == 529:
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrBody))
		a.end = time.Now()
		a.outcome = report.Failed
		if overloaded(b) {
			a.outcome = report.Shed
			a.reached = resp.Header.Get("X-Sluice-Attempts") != ""
		}
	default:
		io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrBody))
		a.end = time.Now()
		switch resp.StatusCode {
		case http.StatusGatewayTimeout:
			a.outcome = report.TimedOut
		case http.StatusTooManyRequests:
			a.outcome = report.RateLimited // retried, as workload.Retryable says
		default:
			a.outcome = report.Failed // a 413 too: no budget would ever take it
		}
	}
	return a
}

// timeOut settles an attempt the client hung up on at its own timeout:
// as a lost connection, whatever had come (at most a 2xx status line
// without content), so that the retry policy judges it as the simulator
// does (sim.attemptTimeout).
func (a *attempt) timeOut() {
	a.end = time.Now()
	a.outcome, a.status, a.started, a.abandoned = report.TimedOut, 0, false, false
	a.hint, a.noRetry, a.degraded, a.first = 0, false, false, time.Time{}
	a.timedOut = true
	a.err = errAttemptTimeout
}

// errAttemptTimeout is the error of an attempt that timed out.
var errAttemptTimeout = errors.New("no first content within the attempt's timeout")

// attemptTimer is an attempt's own timeout. It cancels the attempt
// unless the first content (or a non-streaming answer) came first; the
// state settles the race between the two once.
type attemptTimer struct {
	state atomic.Int32 // timerRunning, timerContent or timerExpired
	t     *time.Timer
}

const (
	timerRunning int32 = iota
	timerContent       // the first content came in time: no longer timed
	timerExpired       // the timeout passed first: the attempt is cancelled
)

func startAttemptTimer(d time.Duration, cancel context.CancelFunc) *attemptTimer {
	at := &attemptTimer{}
	at.t = time.AfterFunc(d, func() {
		if at.state.CompareAndSwap(timerRunning, timerExpired) {
			cancel()
		}
	})
	return at
}

// content stops the timer: the attempt's first content has come. A nil
// timer (an untimed attempt) does nothing.
func (at *attemptTimer) content() {
	if at != nil && at.state.CompareAndSwap(timerRunning, timerContent) {
		at.t.Stop()
	}
}

func (at *attemptTimer) expired() bool { return at != nil && at.state.Load() == timerExpired }

func (at *attemptTimer) stop() {
	if at != nil {
		at.t.Stop()
	}
}

// transportOutcome classifies an exchange that got no response. The
// client's own context comes first: a cancelled dial is the client giving
// up, not the gateway going away.
func transportOutcome(ctx context.Context, err error) (o report.Outcome, abandoned bool) {
	if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return report.TimedOut, true
	}
	if lostConnection(err) {
		return report.Lost, false
	}
	return report.Failed, false
}

// lostConnection recognises a gateway that is not there: nothing listens,
// or the connection died before a status line came back, which is what a
// crashing process looks like from outside.
func lostConnection(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	for _, e := range []error{syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.EPIPE, io.EOF, io.ErrUnexpectedEOF} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// overloaded reports whether an error body is the gateway's shed answer,
// which both dialects spell as error.type overloaded_error. A 503 that
// says something else is some other failure.
func overloaded(body []byte) bool {
	var v struct {
		Error struct {
			Type string `json:"type"`
		} `json:"error"`
	}
	return json.Unmarshal(body, &v) == nil && v.Error.Type == "overloaded_error"
}

// readEnd settles an exchange whose body stopped early: the client's
// context ending it is an abandon; anything else is a broken answer.
func readEnd(ctx context.Context, a *attempt, err error) {
	a.end, a.err = time.Now(), err
	a.outcome = report.Failed
	if ctx.Err() != nil {
		a.outcome, a.abandoned = report.TimedOut, true
	}
}

func readJSON(ctx context.Context, body io.Reader, d protocol.Dialect, a *attempt) {
	b, err := io.ReadAll(io.LimitReader(body, maxBody))
	if err != nil {
		readEnd(ctx, a, err)
		return
	}
	a.end = time.Now()
	a.outcome = report.OK
	var v struct {
		Object  string            `json:"object"` // OpenAI: chat.completion
		Type    string            `json:"type"`   // Anthropic: message
		Choices []json.RawMessage `json:"choices"`
		Content []json.RawMessage `json:"content"`
	}
	switch {
	case json.Unmarshal(b, &v) != nil:
		a.outcome, a.err = report.Failed, errors.New("answer is not JSON")
	case d == protocol.OpenAI && (v.Object != "chat.completion" || len(v.Choices) == 0),
		d == protocol.Anthropic && v.Type != "message":
		a.outcome, a.err = report.Failed, fmt.Errorf("answer is not a %s chat answer", d)
	}
}

// sseData holds the fields of either dialect's stream events that tell
// content, errors and the end apart.
type sseData struct {
	Type    string          `json:"type"`
	Error   json.RawMessage `json:"error"`
	Choices []struct {
		Text  string `json:"text"`
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
	} `json:"choices"`
	Delta struct {
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
	} `json:"delta"`
}

// readStream reads SSE until the dialect's end marker ([DONE] or
// message_stop). An error event, an event that is not JSON, or the body
// ending without the marker fails the answer.
func readStream(ctx context.Context, body io.Reader, d protocol.Dialect, a *attempt) {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 16<<10), maxSSELine)
	event := ""
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			event = ""
			continue
		}
		if v, ok := bytes.CutPrefix(line, []byte("event:")); ok {
			event = string(bytes.TrimSpace(v))
			continue
		}
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue // comments and fields we do not use
		}
		data = bytes.TrimSpace(data)
		now := time.Now()
		done := string(data) == "[DONE]"
		if done && d == protocol.OpenAI || event == "message_stop" && d == protocol.Anthropic {
			finishStream(body, a, now)
			return
		}
		var ev sseData
		if err := json.Unmarshal(data, &ev); err != nil && !done {
			a.end, a.err, a.outcome = now, errors.New("malformed stream event"), report.Failed
			return
		}
		if event == "error" || ev.Type == "error" || (len(ev.Error) > 0 && string(ev.Error) != "null") {
			a.end, a.err, a.outcome = now, errors.New("stream error event"), report.Failed
			return
		}
		// Each dialect's events: OpenAI's chunks carry choices and no
		// type, Anthropic's a type and never choices or [DONE].
		if done || (d == protocol.OpenAI) != (ev.Type == "") || d == protocol.Anthropic && len(ev.Choices) > 0 {
			a.end, a.err, a.outcome = now, fmt.Errorf("stream event is not %s's", d), report.Failed
			return
		}
		if ev.Type == "message_stop" {
			finishStream(body, a, now)
			return
		}
		if a.first.IsZero() && hasContent(&ev) {
			a.first = now
			a.timer.content()
		}
	}
	err := sc.Err()
	if err == nil {
		err = errors.New("stream ended without its end marker")
	}
	readEnd(ctx, a, err)
}

func hasContent(d *sseData) bool {
	if d.Delta.Text != "" || d.Delta.PartialJSON != "" {
		return true
	}
	for _, c := range d.Choices {
		if c.Delta.Content != "" || c.Text != "" {
			return true
		}
	}
	return false
}

// finishStream completes a stream at its end marker. Reading the little
// that may follow lets the connection go back to the pool.
func finishStream(body io.Reader, a *attempt, now time.Time) {
	a.timer.content()
	a.end, a.outcome = now, report.OK
	if a.first.IsZero() {
		a.first = now // an empty answer's first token is its end
	}
	io.Copy(io.Discard, io.LimitReader(body, afterStream))
}
