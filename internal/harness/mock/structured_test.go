package mock

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"
)

// weatherSchema is a schema both OpenAI's strict mode and Anthropic's
// structured outputs take: closed, every property required.
const weatherSchema = `{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"},"metric":{"type":"boolean"}},"required":["city","days","metric"],"additionalProperties":false}`

// chatText is an OpenAI stream's text, joined.
func chatText(t *testing.T, evs []event) string {
	var b strings.Builder
	for _, ev := range evs {
		if ev.data == "[DONE]" {
			continue
		}
		if s, ok := path(jsonOf(t, ev.data), "choices", 0, "delta", "content").(string); ok {
			b.WriteString(s)
		}
	}
	return b.String()
}

func TestChatStructuredOutput(t *testing.T) {
	_, url := startMock(t, instant())
	ctx := context.Background()
	for rf, want := range map[string]string{
		`{"type":"json_schema","json_schema":{"name":"w","strict":true,"schema":` + weatherSchema + `}}`: wantArgs,
		`{"type":"json_object"}`: `{}`,
		`{"type":"text"}`:        "",
	} {
		body := `{"model":"m","response_format":` + rf + `,"messages":[{"role":"user","content":"weather?"}]}`
		m := decode(t, postJSON(t, ctx, url+"/v1/chat/completions", body, "X-Mock-Output-Tokens", "30"), http.StatusOK)
		got := path(m, "choices", 0, "message", "content").(string)
		if want == "" {
			if strings.HasPrefix(got, "{") {
				t.Errorf("%s: a text answer came as JSON: %q", rf, got)
			}
			continue
		}
		if got != want {
			t.Errorf("%s: content %q, want %q", rf, got, want)
		}
		resp := postJSON(t, ctx, url+"/v1/chat/completions", strings.Replace(body, `"model":"m"`, `"model":"m","stream":true`, 1))
		evs, err := newSSE(resp.Body).all()
		if err != nil {
			t.Fatal(err)
		}
		if got := chatText(t, evs); got != want {
			t.Errorf("%s streamed: %q, want %q", rf, got, want)
		}
	}
}

func TestMessagesStructuredOutputAndThinking(t *testing.T) {
	_, url := startMock(t, instant())
	ctx := context.Background()
	body := `{"model":"c","max_tokens":4000,"output_config":{"format":{"type":"json_schema","schema":` + weatherSchema + `}},` +
		`"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"weather?"}]}`
	m := decode(t, postJSON(t, ctx, url+"/v1/messages", body), http.StatusOK)
	if path(m, "content", 0, "type") != "thinking" || path(m, "content", 0, "signature") != mockSignature ||
		path(m, "content", 1, "type") != "text" || path(m, "content", 1, "text") != wantArgs {
		t.Errorf("answer %s: want a thinking block, then the JSON", compact(t, m))
	}

	resp := postJSON(t, ctx, url+"/v1/messages", strings.Replace(body, `"max_tokens":4000`, `"max_tokens":4000,"stream":true`, 1))
	evs, err := newSSE(resp.Body).all()
	if err != nil {
		t.Fatal(err)
	}
	var text, thinking strings.Builder
	var kinds []string
	for _, ev := range evs {
		d := jsonOf(t, ev.data)
		switch d["type"] {
		case "content_block_start":
			kinds = append(kinds, path(d, "content_block", "type").(string))
		case "content_block_delta":
			switch path(d, "delta", "type") {
			case "text_delta":
				if path(d, "index") != 1.0 {
					t.Errorf("text delta at index %v, want 1 (after the thinking block)", path(d, "index"))
				}
				text.WriteString(path(d, "delta", "text").(string))
			case "thinking_delta":
				thinking.WriteString(path(d, "delta", "thinking").(string))
			}
		}
	}
	if strings.Join(kinds, ",") != "thinking,text" || thinking.String() != mockThinking || text.String() != wantArgs {
		t.Errorf("stream blocks %v, thinking %q, text %q", kinds, thinking.String(), text.String())
	}

	// Without thinking: no thinking block, and the text at index 0.
	plain := `{"model":"c","max_tokens":100,"output_config":{"format":{"type":"json_schema","schema":` + weatherSchema + `}},"messages":[{"role":"user","content":"weather?"}]}`
	m = decode(t, postJSON(t, ctx, url+"/v1/messages", plain), http.StatusOK)
	if path(m, "content", 0, "type") != "text" || path(m, "content", 0, "text") != wantArgs {
		t.Errorf("answer %s", compact(t, m))
	}
}

func TestJSONTokens(t *testing.T) {
	for _, s := range []string{"", "{}", `{"city":"mock","days":1}`, `{"é€":"ü"}`} {
		toks := jsonTokens(s)
		if strings.Join(toks, "") != s {
			t.Errorf("%q: tokens %q do not join back", s, toks)
		}
		for _, tok := range toks {
			if !utf8.ValidString(tok) {
				t.Errorf("%q: token %q splits a character", s, tok)
			}
		}
	}
}
