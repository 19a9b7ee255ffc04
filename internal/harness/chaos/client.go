package chaos

import (
	"bytes"
	"cmp"
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

	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// call is one request a chaos client sends, and how the client behaves
// while the answer comes.
type call struct {
	dialect protocol.Dialect
	stream  bool
	model   string
	tokens  int               // the reply's length, asked of the mock
	header  map[string]string // X-Mock-* and other request headers
	idemKey string            // Idempotency-Key, if any
	// vanishAfter > 0: the client leaves after this many stream events
	// (or, for a whole answer, as soon as the status line arrives).
	vanishAfter int
	// stopReading > 0: after the status line the client reads nothing
	// for this long, then reads the rest.
	stopReading time.Duration
	// vanishAt > 0: the client leaves this long after sending, wherever
	// its answer is by then.
	vanishAt time.Duration
}

// verdict is how one request ended, from the client's side.
type verdict int

const (
	// vOK: a 200 whose body is whole and well-formed in the dialect: the
	// JSON answer, or a stream ending in [DONE] / message_stop.
	vOK verdict = iota
	// vError: an error in the dialect's own shape: a status with the
	// dialect's error body (and Retry-After on 429/503/529), or a stream
	// that ends with the dialect's error event.
	vError
	// vCut: a stream broken by the transport after its status: the
	// client sees the break (the gateway aborts the connection when an
	// error event cannot be appended whole).
	vCut
	// vLeft: the client left on purpose before the end.
	vLeft
	// vMalformed: an answer that is not well-formed in the dialect:
	// this fails the row.
	vMalformed
	// vNone: no response at all: this fails the row.
	vNone
)

// outcome is a verdict with what the checks need from the answer.
type outcome struct {
	verdict verdict
	status  int
	id      string // the answer's id, for the double-answer check
	detail  string // why, for malformed and unanswered requests
}

// kind names an error or a cut for the report: its status, or, for a
// stream that had answered 200, how it ended.
func (o outcome) kind() string {
	switch {
	case o.verdict == vCut:
		return "cut"
	case o.status == http.StatusOK:
		return "error events"
	}
	return fmt.Sprint(o.status)
}

// body renders the request body in the call's dialect.
func (c call) body() []byte {
	m := map[string]any{
		"model":      c.model,
		"stream":     c.stream,
		"max_tokens": max(c.tokens, 1),
		"messages":   []map[string]string{{"role": "user", "content": "say something"}},
	}
	b, _ := json.Marshal(m)
	return b
}

func (c call) path() string {
	if c.dialect == protocol.Anthropic {
		return "/v1/messages"
	}
	return "/v1/chat/completions"
}

// do sends c to the gateway at listen and judges the answer.
func do(ctx context.Context, hc *http.Client, listen string, c call) outcome {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var left atomic.Bool
	if c.vanishAt > 0 {
		t := time.AfterFunc(c.vanishAt, func() { left.Store(true); cancel() })
		defer t.Stop()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+listen+c.path(), bytes.NewReader(c.body()))
	if err != nil {
		return outcome{verdict: vNone, detail: err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Mock-Output-Tokens", fmt.Sprint(max(c.tokens, 1)))
	if c.dialect == protocol.Anthropic {
		req.Header.Set("anthropic-version", "2023-06-01")
	}
	for k, v := range c.header {
		req.Header.Set(k, v)
	}
	if c.idemKey != "" {
		req.Header.Set("Idempotency-Key", c.idemKey)
	}
	o := send(hc, req, c)
	if left.Load() && (o.verdict == vNone || o.verdict == vCut) {
		o.verdict = vLeft
	}
	return o
}

// send sends req and judges the answer as client c.
func send(hc *http.Client, req *http.Request, c call) outcome {
	ctx := req.Context()
	resp, err := hc.Do(req)
	if err != nil {
		return outcome{verdict: vNone, detail: err.Error()}
	}
	defer resp.Body.Close()
	o := outcome{status: resp.StatusCode}
	if c.vanishAfter > 0 && !c.stream {
		o.verdict = vLeft
		return o
	}
	if c.stopReading > 0 {
		select {
		case <-time.After(c.stopReading):
		case <-ctx.Done():
		}
	}
	if resp.StatusCode != http.StatusOK {
		return judgeError(o, c.dialect, resp)
	}
	if c.stream {
		return judgeStream(o, c, resp.Body)
	}
	return judgeWhole(o, c.dialect, resp.Body)
}

// judgeError checks an error status: the dialect's error body, and
// Retry-After on the statuses that ask the client to come back.
func judgeError(o outcome, d protocol.Dialect, resp *http.Response) outcome {
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		o.verdict, o.detail = vCut, err.Error()
		return o
	}
	if !isErrorBody(d, b) {
		o.verdict, o.detail = vMalformed, fmt.Sprintf("%d with a body not in %s's error shape: %.200s", o.status, d, b)
		return o
	}
	switch o.status {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable, 529:
		if resp.Header.Get("Retry-After") == "" {
			o.verdict, o.detail = vMalformed, fmt.Sprintf("%d without Retry-After", o.status)
			return o
		}
	}
	o.verdict = vError
	return o
}

// isErrorBody reports whether b is an error in dialect d's shape:
// {"error":{"type","message"}} for OpenAI; Anthropic wraps the same in
// {"type":"error",...}.
func isErrorBody(d protocol.Dialect, b []byte) bool {
	var e struct {
		Type  string `json:"type"`
		Error *struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &e) != nil || e.Error == nil || e.Error.Message == "" {
		return false
	}
	if d == protocol.Anthropic {
		return e.Type == "error" && e.Error.Type != ""
	}
	return true
}

// judgeWhole checks a 200 answer that is not a stream.
func judgeWhole(o outcome, d protocol.Dialect, r io.Reader) outcome {
	b, err := io.ReadAll(r)
	if err != nil {
		o.verdict, o.detail = vCut, err.Error()
		return o
	}
	var a struct {
		ID      string            `json:"id"`
		Type    string            `json:"type"`
		Choices []json.RawMessage `json:"choices"`
		Content []json.RawMessage `json:"content"`
	}
	whole := json.Unmarshal(b, &a) == nil && a.ID != ""
	if d == protocol.Anthropic {
		whole = whole && a.Type == "message" && a.Content != nil
	} else {
		whole = whole && len(a.Choices) > 0
	}
	if !whole {
		o.verdict, o.detail = vMalformed, fmt.Sprintf("200 that is not a whole %s answer: %.200s", d, b)
		return o
	}
	o.verdict, o.id = vOK, a.ID
	return o
}

// judgeStream reads a 200 stream through the dialect's stream check:
// every event's data one JSON value, and the end its terminator or the
// dialect's error event.
func judgeStream(o outcome, c call, r io.Reader) outcome {
	check := protocol.NewStreamCheck(c.dialect)
	var head []byte // enough of the stream's start to find its id
	buf := make([]byte, 4<<10)
	events := 0
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if len(head) < 1024 {
				head = append(head, buf[:min(n, 1024)]...)
			}
			if _, ok, _ := check.Feed(buf[:n]); !ok {
				o.verdict, o.detail = vMalformed, fmt.Sprintf("a stream event that is not JSON: %.200s", buf[:n])
				return o
			}
			events += bytes.Count(buf[:n], []byte("\n\n"))
			if c.vanishAfter > 0 && events >= c.vanishAfter {
				o.verdict = vLeft
				return o
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			o.verdict, o.detail = vCut, err.Error()
			return o
		}
	}
	switch v := check.End(); v {
	case protocol.StreamOK:
		o.verdict, o.id = vOK, streamID(head)
	case protocol.StreamErrorEvent:
		o.verdict = vError
	default:
		o.verdict, o.detail = vMalformed, "a stream that ended cleanly but "+v
	}
	return o
}

// streamID finds the answer's id in a stream's first events: OpenAI
// chunks carry it at their top, Anthropic's message_start in its
// message, and either is the first "id" in the stream.
func streamID(head []byte) string {
	const key = `"id":"`
	i := bytes.Index(head, []byte(key))
	if i < 0 {
		return ""
	}
	rest := string(head[i+len(key):])
	id, _, _ := strings.Cut(rest, `"`)
	return id
}

// smallWindow has the transport dial connections whose receive buffer is
// fixed at bytes, as a client on a slow or constrained link has. Without
// it, loopback's buffers autotune to tens of megabytes (tcp_rmem), which
// can swallow a whole answer that a client is not reading.
func smallWindow(t *http.Transport, bytes int) {
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, bytes)
		})
		return cmp.Or(err, serr)
	}}
	t.DialContext = d.DialContext
}

// newHTTPClient is a client for n concurrent callers, each keeping its
// own connection alive between requests, as an application's pool does.
func newHTTPClient(n int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConns:        n,
		MaxIdleConnsPerHost: n,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}}
}
