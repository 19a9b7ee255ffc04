package mock

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

const chatBody = `{"model":"gpt-x","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":[{"type":"text","text":"Say hi"}]}]}`

func TestChatNonStreaming(t *testing.T) {
	s, url := startMock(t, instant())
	resp := postJSON(t, context.Background(), url+"/v1/chat/completions", chatBody, "Authorization", "Bearer sk-test")
	m := decode(t, resp, http.StatusOK)
	if !strings.HasPrefix(m["id"].(string), "chatcmpl-") || m["object"] != "chat.completion" || m["model"] != "gpt-x" {
		t.Errorf("bad envelope: %v", m)
	}
	if _, ok := m["created"].(float64); !ok {
		t.Errorf("created missing: %v", m)
	}
	if path(m, "choices", 0, "message", "role") != "assistant" || path(m, "choices", 0, "finish_reason") != "stop" {
		t.Errorf("bad choice: %v", m["choices"])
	}
	content := path(m, "choices", 0, "message", "content").(string)
	if n := strings.Count(content, " "); n != 5 {
		t.Errorf("content %q has %d tokens, want 5", content, n)
	}
	// "You are terse." + "Say hi" = 20 bytes = 5 tokens.
	u := m["usage"].(map[string]any)
	if u["prompt_tokens"] != 5.0 || u["completion_tokens"] != 5.0 || u["total_tokens"] != 10.0 {
		t.Errorf("usage %v", u)
	}
	if resp.Header.Get("x-request-id") == "" || resp.Header.Get("x-ratelimit-remaining-requests") != "9999" {
		t.Errorf("headers %v", resp.Header)
	}
	last := s.LastRequest()
	if last.Path != "/v1/chat/completions" || last.Model != "gpt-x" || last.Authorization != "Bearer sk-test" || string(last.Body) != chatBody {
		t.Errorf("LastRequest %+v", last)
	}
}

func TestChatMaxTokensCutsWithLength(t *testing.T) {
	_, url := startMock(t, instant())
	body := `{"model":"m","max_tokens":50,"max_completion_tokens":3,"messages":[{"role":"user","content":"hi"}]}`
	m := decode(t, postJSON(t, context.Background(), url+"/v1/chat/completions", body), http.StatusOK)
	if path(m, "choices", 0, "finish_reason") != "length" || path(m, "usage", "completion_tokens") != 3.0 {
		t.Errorf("got %v", m)
	}
}

func TestChatStreaming(t *testing.T) {
	_, url := startMock(t, instant())
	body := `{"model":"gpt-x","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hello"}]}`
	resp := postJSON(t, context.Background(), url+"/v1/chat/completions", body)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	evs, err := newSSE(resp.Body).all()
	if err != nil {
		t.Fatal(err)
	}
	// role chunk, 5 tokens, finish chunk, usage chunk, [DONE]
	if len(evs) != 9 || evs[8].data != "[DONE]" {
		t.Fatalf("events %v", evs)
	}
	var text strings.Builder
	for i, ev := range evs[:8] {
		c := jsonOf(t, ev.data)
		if c["object"] != "chat.completion.chunk" || c["model"] != "gpt-x" {
			t.Errorf("chunk %d: %v", i, c)
		}
		if i >= 1 && i <= 5 {
			text.WriteString(path(c, "choices", 0, "delta", "content").(string))
		}
	}
	if path(jsonOf(t, evs[0].data), "choices", 0, "delta", "role") != "assistant" {
		t.Errorf("first chunk lacks role: %s", evs[0].data)
	}
	if path(jsonOf(t, evs[6].data), "choices", 0, "finish_reason") != "stop" {
		t.Errorf("finish chunk: %s", evs[6].data)
	}
	usage := jsonOf(t, evs[7].data)
	if path(usage, "usage", "completion_tokens") != 5.0 || path(usage, "usage", "prompt_tokens") != 2.0 {
		t.Errorf("usage chunk: %s", evs[7].data)
	}
	if strings.Count(text.String(), " ") != 5 {
		t.Errorf("text %q", text.String())
	}
}

func TestCompletions(t *testing.T) {
	_, url := startMock(t, instant())
	m := decode(t, postJSON(t, context.Background(), url+"/v1/completions", `{"model":"davinci","prompt":"12345678"}`), http.StatusOK)
	if m["object"] != "text_completion" || m["model"] != "davinci" || path(m, "usage", "prompt_tokens") != 2.0 {
		t.Errorf("got %v", m)
	}
	if txt, _ := path(m, "choices", 0, "text").(string); strings.Count(txt, " ") != 5 {
		t.Errorf("text %q", txt)
	}

	resp := postJSON(t, context.Background(), url+"/v1/completions", `{"model":"davinci","prompt":["a","b"],"stream":true,"max_tokens":2}`)
	evs, err := newSSE(resp.Body).all()
	if err != nil {
		t.Fatal(err)
	}
	// 2 tokens, finish chunk, [DONE]: no usage chunk unless asked.
	if len(evs) != 4 || evs[3].data != "[DONE]" {
		t.Fatalf("events %v", evs)
	}
	if c := jsonOf(t, evs[2].data); c["object"] != "text_completion" || path(c, "choices", 0, "finish_reason") != "length" {
		t.Errorf("finish chunk %v", c)
	}
}

func TestEmbeddings(t *testing.T) {
	_, url := startMock(t, instant())
	get := func(body string) map[string]any {
		return decode(t, postJSON(t, context.Background(), url+"/v1/embeddings", body), http.StatusOK)
	}
	one := get(`{"model":"emb","input":"hello world"}`)
	many := get(`{"model":"emb","input":["other","hello world"]}`)
	if one["object"] != "list" || one["model"] != "emb" || path(one, "usage", "prompt_tokens") != 3.0 || path(one, "usage", "total_tokens") != 3.0 {
		t.Errorf("envelope %v", one)
	}
	data := many["data"].([]any)
	if len(data) != 2 || path(data, 1, "index") != 1.0 || path(data, 1, "object") != "embedding" {
		t.Fatalf("data %v", data)
	}
	v := path(one, "data", 0, "embedding").([]any)
	if len(v) != 8 {
		t.Errorf("dim %d, want 8", len(v))
	}
	if compact(t, v) != compact(t, path(data, 1, "embedding")) {
		t.Error("same input embedded differently")
	}
	if compact(t, v) == compact(t, path(data, 0, "embedding")) {
		t.Error("different inputs embedded alike")
	}
	if d := get(`{"input":"x","dimensions":3}`); len(path(d, "data", 0, "embedding").([]any)) != 3 {
		t.Errorf("dimensions ignored: %v", d)
	}
}

func TestModels(t *testing.T) {
	_, url := startMock(t, Config{Models: []string{"a", "b"}})
	resp, err := http.Get(url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	m := decode(t, resp, http.StatusOK)
	if m["object"] != "list" || path(m, "data", 1, "id") != "b" || path(m, "data", 0, "object") != "model" {
		t.Errorf("got %v", m)
	}
}

func TestOpenAIBadJSON(t *testing.T) {
	s, url := startMock(t, instant())
	for _, body := range []string{`{"model":`, `[1,2]`, ``, `{"stream":"yes"}`} {
		m := decode(t, postJSON(t, context.Background(), url+"/v1/chat/completions", body), http.StatusBadRequest)
		e, _ := m["error"].(map[string]any)
		if e["type"] != "invalid_request_error" || e["message"] == "" {
			t.Errorf("body %q: error %v", body, m)
		}
		for _, k := range []string{"param", "code"} {
			if v, ok := e[k]; !ok || v != nil {
				t.Errorf("body %q: %s should be null: %v", body, k, e)
			}
		}
	}
	if st := s.Stats(); st.BadRequests != 4 || st.Completed != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestUnknownFieldsReachLastRequest(t *testing.T) {
	s, url := startMock(t, instant())
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}],"vendor_extension":{"x":1}}`
	decode(t, postJSON(t, context.Background(), url+"/v1/chat/completions", body, "X-Api-Key", "k1"), http.StatusOK)
	var got map[string]any
	json.Unmarshal(s.LastRequest().Body, &got)
	if got["vendor_extension"] == nil || s.LastRequest().APIKey != "k1" {
		t.Errorf("LastRequest %+v", s.LastRequest())
	}
}
