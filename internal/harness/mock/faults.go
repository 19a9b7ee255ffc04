package mock

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-gw/sluice/internal/model/upstream"
)

// This file is the wire side of the single-request faults a gateway must
// survive one call at a time (upstream.FailStall and the kinds after it,
// Config.ContextWindow, Config.AssistantPrefill): their error bodies in
// each dialect, where a whole answer is cut, and the X-Mock-* headers
// that aim one at one request.

// parseFail reads X-Mock-Fail: a status ("429") or a kind, then optional
// ':'-separated parts in any order: a token count (after_tokens), a
// duration with a unit (for) and a follow-up (then: resume, eof,
// truncate, reset). "truncate:3", "hang:30s", "stall:40:5s:reset",
// "malformed:40:resume", "no_done", "context_length".
func parseFail(v string) (*Failure, error) {
	parts := strings.Split(strings.ToLower(strings.TrimSpace(v)), ":")
	f := &Failure{Kind: parts[0]}
	if code, err := strconv.Atoi(f.Kind); err == nil {
		f.Kind, f.Status = FailStatus, code
	}
	for _, part := range parts[1:] {
		switch part {
		case upstream.ThenResume, upstream.ThenEOF, upstream.ThenTruncate, upstream.ThenReset:
			f.Then = part
			continue
		}
		if n, err := strconv.Atoi(part); err == nil {
			f.AfterTokens = n
			continue
		}
		d, err := time.ParseDuration(part)
		if err != nil {
			return nil, fmt.Errorf("%q: %q is not a token count, a duration (30s) or resume|eof|truncate|reset", v, part)
		}
		f.For = d
	}
	return f, f.Validate()
}

// applyModelHeaders reads the headers that override the Config's
// context window, prefill and word source for one call.
func (p *plan) applyModelHeaders(h http.Header) error {
	if v := h.Get(HeaderContextWindow); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("%s: %q is not a token count", HeaderContextWindow, v)
		}
		p.contextWindow = n
	}
	if v := h.Get(HeaderPrefill); v != "" {
		p.prefill = strings.ToLower(v)
	}
	if v := h.Get(HeaderWords); v != "" {
		p.words = strings.ToLower(v)
	}
	err := Config{ContextWindow: p.contextWindow, AssistantPrefill: p.prefill, Words: p.words}.Validate()
	if err != nil {
		return fmt.Errorf("%s, %s or %s: %v", HeaderContextWindow, HeaderPrefill, HeaderWords, err)
	}
	return nil
}

// refusal is a 400 the call's request earns before anything is
// generated: a prompt over the context window, or a prefill the model
// refuses. nil: none.
func (p *plan) refusal(proto protocol, c *call) []byte {
	cfg := Config{ContextWindow: p.contextWindow}
	switch {
	case cfg.Overflows(int64(c.promptTokens)):
		return proto.contextError(c.promptTokens, p.contextWindow)
	case c.prefilled && p.prefill == upstream.PrefillRefuse:
		return proto.prefillError()
	}
	return nil
}

// The messages are the providers' own. OpenAI's context-length error is
// what its API and vLLM answer; its content filter is Azure OpenAI's,
// the OpenAI-dialect provider that has one. Anthropic's context-length
// and prefill messages are its API's; for the content filter it has no
// prompt classifier error, so the mock answers the 400 its API gives
// when output is blocked ("Output blocked by content filtering policy"),
// an invalid_request_error like the others: a client tells them apart
// by message only, as it must with the real API. OpenAI's API has no
// prefill; the refusal is in the shape of its other invalid requests,
// for a vLLM-style server that does not implement
// continue_final_message.

func (openAI) contextError(prompt, window int) []byte {
	return oaiError(fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", window, prompt),
		"invalid_request_error", "messages", "context_length_exceeded", nil)
}

func (openAI) contentFilterError() []byte {
	category := func(filtered bool) map[string]any {
		sev := "safe"
		if filtered {
			sev = "high"
		}
		return map[string]any{"filtered": filtered, "severity": sev}
	}
	return oaiError("The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry. To learn more about our content filtering policies please read our documentation: https://go.microsoft.com/fwlink/?linkid=2198766 (injected by sluice mock)",
		nil, "prompt", "content_filter", map[string]any{
			"status": 400,
			"innererror": map[string]any{
				"code": "ResponsibleAIPolicyViolation",
				"content_filter_result": map[string]any{
					"hate": category(false), "self_harm": category(false), "sexual": category(false), "violence": category(true),
				},
			},
		})
}

func (openAI) prefillError() []byte {
	return oaiError("This model does not support continuing the final assistant message (continue_final_message); the conversation must end with a user message.",
		"invalid_request_error", "messages", nil, nil)
}

// oaiError is OpenAI's error body, with extra fields beside the four.
func oaiError(msg string, typ any, param string, code any, extra map[string]any) []byte {
	e := map[string]any{"message": msg, "type": typ, "param": param, "code": code}
	for k, v := range extra {
		e[k] = v
	}
	b, _ := json.Marshal(map[string]any{"error": e})
	return b
}

func (anthropic) contextError(prompt, window int) []byte {
	// Marshalled without HTML escaping: the API sends its '>' as is.
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(map[string]any{
		"type":  "error",
		"error": map[string]string{"type": "invalid_request_error", "message": fmt.Sprintf("prompt is too long: %d tokens > %d maximum", prompt, window)},
	})
	return bytes.TrimRight(b.Bytes(), "\n")
}

func (anthropic) contentFilterError() []byte {
	return anthropic{}.errorJSON(http.StatusBadRequest, "Output blocked by content filtering policy")
}

func (anthropic) prefillError() []byte {
	return anthropic{}.errorJSON(http.StatusBadRequest, "This model does not support assistant message prefill. The conversation must end with a user message.")
}

// scriptedContextError is a context_length failure's body: the prompt
// against the call's window, or, with none, one token less than the
// prompt, so the message still says the prompt is too long.
func scriptedContextError(proto protocol, p *plan, c *call) []byte {
	window := p.contextWindow
	if window == 0 || window >= c.promptTokens {
		window = max(0, c.promptTokens-1)
	}
	return proto.contextError(c.promptTokens, window)
}

// bodyCut is where to cut a whole answer's body so that it ends just
// after text, the first part of the answer's text (or of its tool
// call's arguments, which OpenAI's APIs write as a string): after the
// JSON encoding of text where it starts the body's field. It falls back
// to half the body when text is empty or not found (the input object of
// an Anthropic tool_use block, say).
func bodyCut(body []byte, text string) int {
	if text != "" {
		enc, _ := json.Marshal(text)
		enc = enc[:len(enc)-1] // drop the closing quote: the text goes on
		if i := bytes.Index(body, enc); i >= 0 {
			return i + len(enc)
		}
	}
	return len(body) / 2
}
