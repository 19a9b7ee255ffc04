package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// answerShape is the part of a whole answer, in either dialect, that
// these targets check: its kind, its text, its tool calls and its
// output token count.
type answerShape struct {
	Object  string `json:"object"`
	Type    string `json:"type"`
	Role    string `json:"role"`
	Created int64  `json:"created"`
	Choices []struct {
		Message struct {
			Role      string  `json:"role"`
			Content   *string `json:"content"`
			ToolCalls []struct {
				Function struct {
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
	} `json:"choices"`
	Content []struct {
		Type  string          `json:"type"`
		Text  string          `json:"text"`
		Input json.RawMessage `json:"input"`
	} `json:"content"`
	Usage *struct {
		CompletionTokens *int64 `json:"completion_tokens"`
		OutputTokens     *int64 `json:"output_tokens"`
	} `json:"usage"`
}

// shapeOf reads an answer's shape. A field of another type than the
// shape's is left empty, as the translators, which read fewer fields,
// may never have looked at it; only bytes that are not JSON fail.
func shapeOf(t *testing.T, b []byte) answerShape {
	t.Helper()
	var s answerShape
	var typeErr *json.UnmarshalTypeError
	if err := json.Unmarshal(b, &s); err != nil && !errors.As(err, &typeErr) {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	return s
}

// outputTokens is the answer's output token count in dialect d's field.
func (s answerShape) outputTokens(d protocol.Dialect) *int64 {
	switch {
	case s.Usage == nil:
		return nil
	case d == protocol.Anthropic:
		return s.Usage.OutputTokens
	}
	return s.Usage.CompletionTokens
}

// text is an Anthropic message's text, its text blocks joined.
func (s answerShape) text() string {
	var b bytes.Buffer
	for _, c := range s.Content {
		if c.Type == "text" {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// FuzzResponse: a whole answer, either direction, is refused with
// ErrResponse or translated into an answer of the client's dialect:
// one assistant choice (OpenAI) or an assistant message (Anthropic),
// stamped as asked, whose output token count is the provider's. What
// the translation writes translates back, to the same count, and (from
// Anthropic) to the same text.
func FuzzResponse(f *testing.F) {
	seeds(f, "responses/to_openai/*.in.json", func(b []byte) { f.Add(b, true, int64(1_700_000_000)) })
	seeds(f, "responses/to_anthropic/*.in.json", func(b []byte) { f.Add(b, false, int64(0)) })
	f.Add([]byte(`{"type":"message","content":[{"type":"tool_use","input":[1]}],"usage":{"output_tokens":-3}}`), true, int64(-1))
	f.Add([]byte(`{"choices":[{"message":{"refusal":"no"},"finish_reason":"content_filter"}]}`), false, int64(0))
	f.Add([]byte(`{"type":"error","error":{"type":"overloaded_error","message":"busy"}}`), true, int64(0))
	f.Fuzz(func(t *testing.T, body []byte, toOpenAI bool, created int64) {
		from, to := protocol.OpenAI, protocol.Anthropic
		if toOpenAI {
			from, to = to, from
		}
		out, err := Response(from, to, body, created)
		if err != nil {
			if !errors.Is(err, ErrResponse) {
				t.Fatalf("error %v is not ErrResponse", err)
			}
			return
		}
		in, got := shapeOf(t, body), shapeOf(t, out)
		if toOpenAI {
			if got.Object != "chat.completion" || got.Created != created || len(got.Choices) != 1 || got.Choices[0].Message.Role != "assistant" {
				t.Fatalf("not one assistant chat.completion created at %d:\n%s", created, out)
			}
		} else if got.Type != "message" || got.Role != "assistant" || got.Content == nil {
			t.Fatalf("not an assistant message:\n%s", out)
		}
		if n := in.outputTokens(from); n != nil && (got.outputTokens(to) == nil || *got.outputTokens(to) != *n) {
			t.Fatalf("output tokens %d became %v:\n%s\n%s", *n, got.outputTokens(to), body, out)
		}

		back, err := Response(to, from, out, created)
		if err != nil {
			if toOpenAI && !objectInputs(in) {
				return // a tool input that is no object cannot be OpenAI arguments that come back
			}
			t.Fatalf("Sluice's own answer does not translate back: %v\n%s", err, out)
		}
		again := shapeOf(t, back)
		if n := in.outputTokens(from); n != nil && (again.outputTokens(from) == nil || *again.outputTokens(from) != *n) {
			t.Fatalf("round trip: output tokens %d became %v", *n, again.outputTokens(from))
		}
		if toOpenAI && again.text() != in.text() {
			t.Fatalf("round trip: text %q became %q", in.text(), again.text())
		}
	})
}

// objectInputs reports whether every tool_use block's input is a JSON
// object (or absent), as Anthropic's API always sends.
func objectInputs(s answerShape) bool {
	for _, c := range s.Content {
		if c.Type == "tool_use" && !isNull(c.Input) && !bytes.HasPrefix(bytes.TrimSpace(c.Input), []byte("{")) {
			return false
		}
	}
	return true
}

// FuzzErrorBody: whatever a provider sends with an error status, the
// client gets its own dialect's error shape (type and message, the
// message never empty), with the provider's message when it had one,
// and a status its SDK reads the same way: 529 and 503 swap, nothing
// else changes.
func FuzzErrorBody(f *testing.F) {
	f.Add(529, []byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`), true)
	f.Add(429, []byte(`{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`), false)
	f.Add(503, []byte(`{"error":{"message":"","type":null,"code":503}}`), false)
	f.Add(500, []byte(`<html>Internal Server Error</html>`), true)
	f.Add(418, []byte(`{"error":"a string, not an object"}`), false)
	f.Add(0, []byte(``), true)
	f.Add(-1, []byte(`{"error":{"message":"\u0000\ud800"}}`), false)
	f.Fuzz(func(t *testing.T, status int, body []byte, toOpenAI bool) {
		from, to := protocol.OpenAI, protocol.Anthropic
		if toOpenAI {
			from, to = to, from
		}
		gotStatus, out := ErrorBody(from, to, status, body)
		var e struct {
			Type  string `json:"type"`
			Error *struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(out, &e); err != nil || e.Error == nil || e.Error.Type == "" || e.Error.Message == "" {
			t.Fatalf("status %d, %q: not an error in %s's shape: %s", status, body, to, out)
		}
		if to == protocol.Anthropic && e.Type != "error" {
			t.Fatalf("Anthropic's error without type error: %s", out)
		}
		want := status
		switch {
		case toOpenAI && status == 529:
			want = 503
		case !toOpenAI && status == 503:
			want = 529
		}
		if gotStatus != want {
			t.Fatalf("status %d became %d, want %d", status, gotStatus, want)
		}
		var in struct {
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(body, &in) == nil && in.Error != nil && in.Error.Message != "" && e.Error.Message != in.Error.Message {
			t.Fatalf("the provider's message %q became %q", in.Error.Message, e.Error.Message)
		}
	})
}
