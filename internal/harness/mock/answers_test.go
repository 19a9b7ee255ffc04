package mock

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

func TestScriptedAnswers(t *testing.T) {
	ask := func(url, path, body string) string {
		resp := postJSON(t, context.Background(), url+path, body)
		m := decode(t, resp, http.StatusOK)
		if path == "/v1/messages" {
			return path2(m)
		}
		return pathStr(m, "choices", 0, "message", "content")
	}
	const chat = `{"model":"m","messages":[{"role":"user","content":"What is 17 * 23? Just the number."}]}`
	const msgs = `{"model":"m","max_tokens":50,"messages":[{"role":"user","content":[{"type":"text","text":"What is 17 * 23?"}]}]}`
	script := []Answer{{Match: "17 * 23", Reply: "391", Wrong: "four hundred"}}

	cfg := instant()
	cfg.Answers = script
	_, right := startMock(t, cfg)
	if got := ask(right, "/v1/chat/completions", chat); got != "391" {
		t.Errorf("chat answer %q, want 391", got)
	}
	if got := ask(right, "/v1/messages", msgs); got != "391" {
		t.Errorf("messages answer %q, want 391", got)
	}
	// Other prompts still get generated words.
	if got := ask(right, "/v1/chat/completions", chatBody); strings.Contains(got, "391") || got == "" {
		t.Errorf("unscripted answer %q", got)
	}

	zero := 0.0
	cfg.Quality = &zero
	_, wrong := startMock(t, cfg)
	if got := ask(wrong, "/v1/chat/completions", chat); got != "four hundred" {
		t.Errorf("quality 0 answered %q, want the wrong reply", got)
	}

	half := 0.5
	cfg.Quality = &half
	_, mixed := startMock(t, cfg)
	n := 0
	for range 40 {
		if ask(mixed, "/v1/chat/completions", chat) == "391" {
			n++
		}
	}
	if n < 10 || n > 30 {
		t.Errorf("quality 0.5: %d of 40 right", n)
	}
}

func TestQualityValidated(t *testing.T) {
	bad := 1.5
	c := instant()
	c.Quality = &bad
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "quality 1.5") {
		t.Errorf("error %v", err)
	}
	c = instant()
	c.Answers = []Answer{{Reply: "x"}}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "answers[0].match") {
		t.Errorf("error %v", err)
	}
}

func pathStr(m map[string]any, keys ...any) string {
	s, _ := path(m, keys...).(string)
	return s
}

// path2 joins an Anthropic message's text blocks.
func path2(m map[string]any) string {
	var b strings.Builder
	blocks, _ := m["content"].([]any)
	for _, x := range blocks {
		if bm, ok := x.(map[string]any); ok {
			s, _ := bm["text"].(string)
			b.WriteString(s)
		}
	}
	return b.String()
}
