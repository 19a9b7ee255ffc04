package mock

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

const messagesBody = `{"model":"claude-x","max_tokens":100,"system":"Be brief.","messages":[{"role":"user","content":[{"type":"text","text":"Hello there"}]}]}`

func TestMessagesNonStreaming(t *testing.T) {
	s, url := startMock(t, instant())
	resp := postJSON(t, context.Background(), url+"/v1/messages", messagesBody, "X-Api-Key", "sk-ant", "anthropic-version", "2023-06-01")
	m := decode(t, resp, http.StatusOK)
	if !strings.HasPrefix(m["id"].(string), "msg_") || m["type"] != "message" || m["role"] != "assistant" || m["model"] != "claude-x" {
		t.Errorf("envelope %v", m)
	}
	if path(m, "content", 0, "type") != "text" || strings.Count(path(m, "content", 0, "text").(string), " ") != 5 {
		t.Errorf("content %v", m["content"])
	}
	if v, ok := m["stop_sequence"]; !ok || v != nil || m["stop_reason"] != "end_turn" {
		t.Errorf("stop fields %v", m)
	}
	// "Be brief." + "Hello there" = 20 bytes = 5 tokens.
	if path(m, "usage", "input_tokens") != 5.0 || path(m, "usage", "output_tokens") != 5.0 {
		t.Errorf("usage %v", m["usage"])
	}
	if resp.Header.Get("request-id") == "" {
		t.Error("no request-id header")
	}
	if last := s.LastRequest(); last.APIKey != "sk-ant" || last.Header.Get("anthropic-version") != "2023-06-01" || last.Model != "claude-x" {
		t.Errorf("LastRequest %+v", last)
	}
}

func TestMessagesMaxTokens(t *testing.T) {
	_, url := startMock(t, instant())
	body := `{"model":"c","max_tokens":2,"messages":[{"role":"user","content":"hi"}]}`
	m := decode(t, postJSON(t, context.Background(), url+"/v1/messages", body), http.StatusOK)
	if m["stop_reason"] != "max_tokens" || path(m, "usage", "output_tokens") != 2.0 {
		t.Errorf("got %v", m)
	}
}

func TestMessagesStreaming(t *testing.T) {
	_, url := startMock(t, instant())
	body := strings.Replace(messagesBody, `"max_tokens":100`, `"max_tokens":100,"stream":true`, 1)
	resp := postJSON(t, context.Background(), url+"/v1/messages", body)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	evs, err := newSSE(resp.Body).all()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"message_start", "content_block_start", "ping",
		"content_block_delta", "content_block_delta", "content_block_delta", "content_block_delta", "content_block_delta",
		"content_block_stop", "message_delta", "message_stop"}
	var got []string
	for _, ev := range evs {
		got = append(got, ev.name)
		if d := jsonOf(t, ev.data); d["type"] != ev.name {
			t.Errorf("event %s carries type %v", ev.name, d["type"])
		}
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("events\n got %v\nwant %v", got, want)
	}
	start := jsonOf(t, evs[0].data)
	if path(start, "message", "model") != "claude-x" || path(start, "message", "usage", "input_tokens") != 5.0 {
		t.Errorf("message_start %v", start)
	}
	if d := jsonOf(t, evs[3].data); path(d, "delta", "type") != "text_delta" || path(d, "delta", "text") == "" {
		t.Errorf("delta %v", d)
	}
	md := jsonOf(t, evs[9].data)
	if path(md, "delta", "stop_reason") != "end_turn" || path(md, "usage", "output_tokens") != 5.0 {
		t.Errorf("message_delta %v", md)
	}
}

func TestAnthropicBadJSON(t *testing.T) {
	_, url := startMock(t, instant())
	m := decode(t, postJSON(t, context.Background(), url+"/v1/messages", `{"messages":[`), http.StatusBadRequest)
	if m["type"] != "error" || path(m, "error", "type") != "invalid_request_error" || path(m, "error", "message") == "" {
		t.Errorf("got %v", m)
	}
}

func TestCountTokens(t *testing.T) {
	_, url := startMock(t, instant())
	m := decode(t, postJSON(t, context.Background(), url+"/v1/messages/count_tokens", messagesBody), http.StatusOK)
	if m["input_tokens"] != 5.0 {
		t.Errorf("got %v", m)
	}
}
