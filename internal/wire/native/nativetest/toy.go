// Package nativetest is a toy native API for tests of the native
// machinery (Transport, Handler, the gateway's and the mock's use of
// them) where no real vendor's codec is wanted: small enough to read,
// complete enough to carry text, usage, streams, errors with a retry
// delay, and one parameter it refuses (top_k) and one it drops
// (metadata.user_id).
//
// The toy API:
//
//	POST /toy/{model}:say      {"system":"...","turns":[{"who":"user","text":"..."}],"limit":N,"temperature":T}
//	                           → {"text":"...","in":N,"out":M,"end":"done"|"limit"}
//	POST /toy/{model}:stream   → data: {"text":"..."} ... data: {"end":"done","in":N,"out":M}
//	                             (an error mid-stream: data: {"problem":"..."})
//	errors                     → {"problem":"...","wait_s":N} with the status
package nativetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-gw/sluice/internal/wire/native"
	"github.com/sluice-gw/sluice/internal/wire/translate"
)

// Kind is the toy API under config kind name.
func Kind(name string) native.Kind {
	return native.Kind{Name: name, Codec: Codec{}, Server: Server{}}
}

type turn struct {
	Who  string `json:"who"`
	Text string `json:"text"`
}

type toyRequest struct {
	System      string   `json:"system,omitempty"`
	Turns       []turn   `json:"turns"`
	Limit       int      `json:"limit,omitempty"`
	Temperature *float64 `json:"temperature,omitempty"`
}

type toyAnswer struct {
	Text    string `json:"text,omitempty"`
	In      int    `json:"in,omitempty"`
	Out     int    `json:"out,omitempty"`
	End     string `json:"end,omitempty"`
	Problem string `json:"problem,omitempty"`
	WaitS   int    `json:"wait_s,omitempty"`
}

// hubRequest is what the toy reads of a hub request.
type hubRequest struct {
	Model       string          `json:"model"`
	System      json.RawMessage `json:"system,omitempty"`
	Messages    []hubMessage    `json:"messages"`
	MaxTokens   int             `json:"max_tokens,omitempty"`
	Stream      bool            `json:"stream,omitempty"`
	Temperature *float64        `json:"temperature,omitempty"`
	TopK        *int            `json:"top_k,omitempty"`
	Metadata    json.RawMessage `json:"metadata,omitempty"`
}

type hubMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// text reads hub content: a string, or text blocks.
func text(raw json.RawMessage) (string, error) {
	if len(raw) == 0 {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "", err
	}
	var b strings.Builder
	for _, bl := range blocks {
		if bl.Type != "text" {
			return "", fmt.Errorf("content of type %s", bl.Type)
		}
		b.WriteString(bl.Text)
	}
	return b.String(), nil
}

// Codec is the toy's gateway side.
type Codec struct{}

func (Codec) Request(hub []byte, model string, opts translate.Options) (*native.Call, error) {
	var q hubRequest
	if err := json.Unmarshal(hub, &q); err != nil {
		return nil, &translate.Error{Kind: translate.ErrInvalid, Param: "body", Path: "body", Reason: err.Error()}
	}
	b := translate.NewBender(opts)
	if q.TopK != nil {
		if err := b.Refuse("top_k", "top_k", "the toy API has no top_k", false); err != nil {
			return nil, err
		}
	}
	if len(q.Metadata) > 0 {
		if err := b.Refuse("metadata.user_id", "metadata.user_id", "the toy API has no user id", true); err != nil {
			return nil, err
		}
	}
	sys, err := text(q.System)
	if err != nil {
		return nil, &translate.Error{Kind: translate.ErrUntranslatable, Param: "system", Path: "system", Reason: err.Error()}
	}
	tr := toyRequest{System: sys, Limit: q.MaxTokens, Temperature: q.Temperature}
	for i, m := range q.Messages {
		t, err := text(m.Content)
		if err != nil {
			p := fmt.Sprintf("messages[%d].content", i)
			return nil, &translate.Error{Kind: translate.ErrUntranslatable, Param: "messages.content", Path: p, Reason: "the toy API takes only text: " + err.Error()}
		}
		tr.Turns = append(tr.Turns, turn{Who: m.Role, Text: t})
	}
	body, _ := json.Marshal(tr)
	verb := "say"
	if q.Stream {
		verb = "stream"
	}
	return &native.Call{
		Path:    "/toy/" + url.PathEscape(model) + ":" + verb,
		Body:    body,
		Stream:  q.Stream,
		Dropped: b.Dropped(),
		Reply:   reply{model: model},
	}, nil
}

func (Codec) Failure(status int, h http.Header, body []byte) native.Failure {
	var a toyAnswer
	msg := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &a) == nil && a.Problem != "" {
		msg = a.Problem
	}
	f := native.Failure{Status: status, Body: native.ErrorBody(hubErrorType(status), msg)}
	switch {
	case a.WaitS > 0:
		f.RetryAfter = time.Duration(a.WaitS) * time.Second
	case h.Get("Retry-After") != "":
		if n, err := strconv.Atoi(h.Get("Retry-After")); err == nil {
			f.RetryAfter = time.Duration(n) * time.Second
		}
	}
	if status == http.StatusServiceUnavailable {
		f.Status = 529
	}
	return f
}

func hubErrorType(status int) string {
	switch {
	case status == 401:
		return "authentication_error"
	case status == 403:
		return "permission_error"
	case status == 404:
		return "not_found_error"
	case status == 429:
		return "rate_limit_error"
	case status == 503, status == 529:
		return "overloaded_error"
	case status >= 500:
		return "api_error"
	}
	return "invalid_request_error"
}

type reply struct{ model string }

func stopReason(end string) string {
	if end == "limit" {
		return "max_tokens"
	}
	return "end_turn"
}

func (r reply) Answer(body []byte) ([]byte, error) {
	var a toyAnswer
	if err := json.Unmarshal(body, &a); err != nil || a.End == "" {
		return nil, fmt.Errorf("%w: not a toy answer", translate.ErrResponse)
	}
	return json.Marshal(map[string]any{
		"id": "msg_toy", "type": "message", "role": "assistant", "model": r.model,
		"content":     []map[string]string{{"type": "text", "text": a.Text}},
		"stop_reason": stopReason(a.End), "stop_sequence": nil,
		"usage": map[string]int{"input_tokens": a.In, "output_tokens": a.Out},
	})
}

func (r reply) Stream(rd io.Reader) native.Events {
	return &events{r: rd, model: r.model}
}

// events reads the toy's SSE stream ("data: {...}\n\n") into the hub's.
type events struct {
	r       io.Reader
	model   string
	buf     []byte
	started bool
	done    bool
	eof     bool
}

func sse(typ string, v any) []byte {
	b, _ := json.Marshal(v)
	return []byte("event: " + typ + "\ndata: " + string(b) + "\n\n")
}

func (e *events) Next() ([]byte, error) {
	if e.done {
		return nil, io.EOF
	}
	for {
		if i := bytes.Index(e.buf, []byte("\n\n")); i >= 0 {
			ev := e.buf[:i]
			e.buf = e.buf[i+2:]
			data, ok := bytes.CutPrefix(ev, []byte("data: "))
			if !ok {
				return nil, fmt.Errorf("%w: not a toy event", translate.ErrResponse)
			}
			var a toyAnswer
			if err := json.Unmarshal(data, &a); err != nil {
				return nil, fmt.Errorf("%w: a toy event is not JSON", translate.ErrResponse)
			}
			return e.event(a)
		}
		if e.eof {
			return nil, translate.ErrTruncated
		}
		if len(e.buf) > native.MaxEvent {
			return nil, fmt.Errorf("%w: an event over %d bytes", translate.ErrResponse, native.MaxEvent)
		}
		var chunk [512]byte
		n, err := e.r.Read(chunk[:])
		e.buf = append(e.buf, chunk[:n]...)
		if err == io.EOF {
			e.eof = true
		} else if err != nil {
			return nil, err
		}
	}
}

func (e *events) event(a toyAnswer) ([]byte, error) {
	var out []byte
	if !e.started {
		e.started = true
		out = append(out, sse("message_start", map[string]any{"type": "message_start", "message": map[string]any{
			"id": "msg_toy", "type": "message", "role": "assistant", "model": e.model, "content": []any{},
			"stop_reason": nil, "stop_sequence": nil, "usage": map[string]int{"input_tokens": a.In, "output_tokens": 0}}})...)
		out = append(out, sse("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]string{"type": "text", "text": ""}})...)
	}
	switch {
	case a.Problem != "":
		e.done = true
		out = append(out, sse("error", map[string]any{"type": "error", "error": map[string]string{"type": "api_error", "message": a.Problem}})...)
		return out, translate.ErrStreamFailed
	case a.End != "":
		e.done = true
		out = append(out, sse("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})...)
		out = append(out, sse("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stopReason(a.End), "stop_sequence": nil},
			"usage": map[string]int{"input_tokens": a.In, "output_tokens": a.Out}})...)
		out = append(out, sse("message_stop", map[string]any{"type": "message_stop"})...)
		return out, nil
	}
	out = append(out, sse("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]string{"type": "text_delta", "text": a.Text}})...)
	return out, nil
}

// Server is the toy's mock side.
type Server struct{}

func (Server) Match(rawPath, query string) (string, bool, bool) {
	rest, ok := strings.CutPrefix(rawPath, "/toy/")
	if !ok {
		return "", false, false
	}
	m, verb, ok := strings.Cut(rest, ":")
	if !ok || (verb != "say" && verb != "stream") {
		return "", false, false
	}
	model, err := url.PathUnescape(m)
	if err != nil || model == "" {
		return "", false, false
	}
	return model, verb == "stream", true
}

func (Server) HubRequest(model string, stream bool, body []byte) ([]byte, error) {
	var q toyRequest
	if err := json.Unmarshal(body, &q); err != nil {
		return nil, fmt.Errorf("the body is not a toy request: %v", err)
	}
	if len(q.Turns) == 0 {
		return nil, errors.New("turns: at least one turn is required")
	}
	msgs := make([]map[string]string, 0, len(q.Turns))
	for _, t := range q.Turns {
		msgs = append(msgs, map[string]string{"role": t.Who, "content": t.Text})
	}
	h := map[string]any{"model": model, "messages": msgs, "max_tokens": max(q.Limit, 1), "stream": stream}
	if q.System != "" {
		h["system"] = q.System
	}
	if q.Temperature != nil {
		h["temperature"] = *q.Temperature
	}
	return json.Marshal(h)
}

// hubAnswer is what the toy reads of a hub answer.
type hubAnswer struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StopReason string `json:"stop_reason"`
	Usage      struct {
		In  int `json:"input_tokens"`
		Out int `json:"output_tokens"`
	} `json:"usage"`
}

func toyEnd(stop string) string {
	if stop == "max_tokens" {
		return "limit"
	}
	return "done"
}

func (Server) Answer(hub []byte) ([]byte, error) {
	var a hubAnswer
	if err := json.Unmarshal(hub, &a); err != nil {
		return nil, err
	}
	var b strings.Builder
	for _, c := range a.Content {
		b.WriteString(c.Text)
	}
	return json.Marshal(toyAnswer{Text: b.String(), In: a.Usage.In, Out: a.Usage.Out, End: toyEnd(a.StopReason)})
}

func (Server) Failure(status int, h http.Header, hub []byte) (int, http.Header, []byte) {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	msg := string(hub)
	if json.Unmarshal(hub, &e) == nil && e.Error.Message != "" {
		msg = e.Error.Message
	}
	a := toyAnswer{Problem: msg}
	out := http.Header{}
	if ra := h.Get("Retry-After"); ra != "" {
		out.Set("Retry-After", ra)
		a.WaitS, _ = strconv.Atoi(ra)
	}
	if status == 529 {
		status = http.StatusServiceUnavailable
	}
	b, _ := json.Marshal(a)
	return status, out, b
}

func (Server) StreamContentType() string { return "text/event-stream" }

func (Server) Stream(w io.Writer) io.WriteCloser { return &streamWriter{w: w} }

// streamWriter turns hub SSE into the toy's, one event at a time.
type streamWriter struct {
	w   io.Writer
	buf []byte
	in  int
	out int
}

func (s *streamWriter) Write(p []byte) (int, error) {
	s.buf = append(s.buf, p...)
	for {
		i := bytes.Index(s.buf, []byte("\n\n"))
		if i < 0 {
			return len(p), nil
		}
		ev := s.buf[:i]
		s.buf = s.buf[i+2:]
		if err := s.event(ev); err != nil {
			return len(p), err
		}
	}
}

func (s *streamWriter) event(ev []byte) error {
	var data []byte
	for line := range bytes.SplitSeq(ev, []byte("\n")) {
		if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			data = bytes.TrimSpace(d)
		}
	}
	if data == nil {
		return nil
	}
	var e struct {
		Type    string `json:"type"`
		Message struct {
			Usage struct {
				In int `json:"input_tokens"`
			} `json:"usage"`
		} `json:"message"`
		Delta struct {
			Text       string `json:"text"`
			StopReason string `json:"stop_reason"`
		} `json:"delta"`
		Usage struct {
			Out int `json:"output_tokens"`
		} `json:"usage"`
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &e) != nil {
		// A hub event cut mid-JSON (a malformed fault): the toy's is too.
		_, err := s.w.Write([]byte("data: {\"text\":\n\n"))
		return err
	}
	var a *toyAnswer
	switch e.Type {
	case "message_start":
		s.in = e.Message.Usage.In
	case "content_block_delta":
		a = &toyAnswer{Text: e.Delta.Text}
	case "message_delta":
		s.out = e.Usage.Out
		if e.Delta.StopReason != "" {
			a = &toyAnswer{End: toyEnd(e.Delta.StopReason), In: s.in, Out: s.out}
		}
	case "error":
		a = &toyAnswer{Problem: e.Error.Message}
	}
	if a == nil {
		return nil
	}
	b, _ := json.Marshal(a)
	_, err := s.w.Write(append(append([]byte("data: "), b...), '\n', '\n'))
	return err
}

func (s *streamWriter) Close() error { return nil }
