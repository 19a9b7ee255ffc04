package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/sluice-gw/sluice/internal/wire/sseenc"
)

// faultAnswer is what one client request got from the gateway, read in
// its own dialect: the status, the answer's text and finish reason, and
// for a stream whether it reached its end marker ([DONE], message_stop)
// and whether an error event came in it.
type faultAnswer struct {
	anthropic, stream bool
	status            int
	header            http.Header
	text              string
	finish            string // finish_reason or stop_reason; "" if none came
	done              bool   // a stream's end marker arrived
	errEvent          string // a stream's error event, raw
	body              string // a non-200 answer's body, or a whole answer's
	transport         error  // the request failed or timed out before an answer
	took              time.Duration
}

// complete reports whether the answer is the whole text want exactly
// once, finished, in its dialect, with nothing after it: the one
// outcome a rescued request may have.
func (a faultAnswer) complete(want string) error {
	switch {
	case a.transport != nil:
		return a.transport
	case a.status != http.StatusOK:
		return fmt.Errorf("status %d: %.300s", a.status, a.body)
	case a.errEvent != "":
		return fmt.Errorf("an error event after %d words: %.300s", len(strings.Fields(a.text)), a.errEvent)
	case a.text != want:
		return fmt.Errorf("text of %d words, want %d exactly once (got %.80q..., want %.80q...)",
			len(strings.Fields(a.text)), len(strings.Fields(want)), a.text, want)
	case a.finish != "stop" && a.finish != "end_turn":
		return fmt.Errorf("finish reason %q, want stop/end_turn", a.finish)
	case a.stream && !a.done:
		return fmt.Errorf("the stream ended without its end marker (%s)", endMarker(a.anthropic))
	}
	return nil
}

// refused reports whether the answer is the error status with a body
// whose text holds one of the words (case-insensitive): a provider's
// reason passed on.
func (a faultAnswer) refused(status int, words ...string) error {
	switch {
	case a.transport != nil:
		return a.transport
	case a.status != status:
		return fmt.Errorf("status %d, want %d: %.300s", a.status, status, a.body)
	}
	low := strings.ToLower(a.body)
	for _, w := range words {
		if strings.Contains(low, strings.ToLower(w)) {
			return nil
		}
	}
	return fmt.Errorf("status %d, but the body names none of %q: %.300s", status, words, a.body)
}

func endMarker(anthropic bool) string {
	if anthropic {
		return "event: message_stop"
	}
	return "data: [DONE]"
}

// faultBody is the request the suite sends in both dialects: the same
// body suits OpenAI chat and Anthropic messages (max_tokens, which
// Anthropic requires, is well above the answer's 60 words).
func faultBody(prompt string, stream bool) string {
	b, _ := json.Marshal(map[string]any{
		"model": "chat", "stream": stream, "max_tokens": 200,
		"messages": []map[string]string{{"role": "user", "content": prompt}},
	})
	return string(b)
}

// askGateway sends body to the gateway at listen in a dialect, with the
// extra headers, and reads the answer to its end within timeout.
func askGateway(listen, body string, anthropic, stream bool, header map[string]string, timeout time.Duration) (a faultAnswer) {
	a = faultAnswer{anthropic: anthropic, stream: stream}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	path := "/v1/chat/completions"
	if anthropic {
		path = "/v1/messages"
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+listen+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if anthropic {
		req.Header.Set("anthropic-version", "2023-06-01")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	began := time.Now()
	defer func() { a.took = time.Since(began) }()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.transport = fmt.Errorf("no answer: %w", err)
		return a
	}
	defer resp.Body.Close()
	a.status, a.header = resp.StatusCode, resp.Header
	if resp.StatusCode != http.StatusOK || !stream {
		raw, err := io.ReadAll(resp.Body)
		a.body = string(raw)
		if err != nil {
			a.transport = fmt.Errorf("status %d, body cut: %w", a.status, err)
			return a
		}
		if a.status == http.StatusOK {
			a.readWhole(raw)
		}
		return a
	}
	if err := a.readStream(resp.Body); err != nil {
		a.transport = fmt.Errorf("stream cut after %d words: %w", len(strings.Fields(a.text)), err)
	}
	return a
}

// readWhole takes the text and finish reason from a whole answer.
func (a *faultAnswer) readWhole(raw []byte) {
	var v struct {
		Choices []struct {
			Message      struct{ Content string } `json:"message"`
			FinishReason string                   `json:"finish_reason"`
		} `json:"choices"`
		Content []struct {
			Type, Text string
		} `json:"content"`
		StopReason string `json:"stop_reason"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		a.transport = fmt.Errorf("a 200 whose body is not JSON: %v: %.200s", err, raw)
		return
	}
	if a.anthropic {
		for _, c := range v.Content {
			a.text += c.Text
		}
		a.finish = v.StopReason
		return
	}
	if len(v.Choices) > 0 {
		a.text, a.finish = v.Choices[0].Message.Content, v.Choices[0].FinishReason
	}
}

// readStream reads server-sent events to the end of the body: the text
// deltas, the finish reason, the end marker and any error event. Text
// after an error event still counts: an event must never be lost, nor
// an answer go on after its error. An untranslated stream reaches the
// client as its provider wrote it, so the events are read by the SSE
// specification (sseenc.Decode: CRLF or lone CR, data: with or without
// its space, multi-line data, comments), not line by line.
func (a *faultAnswer) readStream(r io.Reader) error {
	raw, err := io.ReadAll(r)
	events, _ := sseenc.Decode(string(raw))
	for _, ev := range events {
		if ev.Name == "message_stop" {
			a.done = true
		}
		if a.anthropic {
			a.anthropicEvent(ev.Name, ev.Data)
		} else {
			a.openAIEvent(ev.Data)
		}
	}
	return err
}

func (a *faultAnswer) openAIEvent(data string) {
	if data == "[DONE]" {
		a.done = true
		return
	}
	var v struct {
		Error   json.RawMessage `json:"error"`
		Choices []struct {
			Delta        struct{ Content string } `json:"delta"`
			FinishReason *string                  `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.Unmarshal([]byte(data), &v); err != nil {
		a.errEvent += "unparsable event: " + data
		return
	}
	if len(v.Error) > 0 && string(v.Error) != "null" {
		a.errEvent += data
		return
	}
	for _, c := range v.Choices {
		a.text += c.Delta.Content
		if c.FinishReason != nil && *c.FinishReason != "" {
			a.finish = *c.FinishReason
		}
	}
}

func (a *faultAnswer) anthropicEvent(event, data string) {
	var v struct {
		Type  string `json:"type"`
		Delta struct {
			Type, Text string
			StopReason string `json:"stop_reason"`
		} `json:"delta"`
	}
	if err := json.Unmarshal([]byte(data), &v); err != nil {
		a.errEvent += "unparsable event: " + data
		return
	}
	switch {
	case event == "error" || v.Type == "error":
		a.errEvent += data
	case v.Type == "content_block_delta" && v.Delta.Type == "text_delta":
		a.text += v.Delta.Text
	case v.Type == "message_delta" && v.Delta.StopReason != "":
		a.finish = v.Delta.StopReason
	case v.Type == "message_stop":
		a.done = true
	}
}
