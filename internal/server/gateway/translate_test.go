package gateway_test

import (
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
)

// Cross-dialect serving: a client on one API served by a provider of the
// other, the mock speaking both on one base URL.

// openAIOnAnthropic points mock-gpt (an OpenAI-facing name) at the
// Anthropic-kind provider.
func openAIOnAnthropic(c *config.Config) {
	c.Models[0].Targets = []config.Target{{Provider: "mock-anthropic", Model: "mock-claude-sonnet"}}
}

// anthropicOnOpenAI points mock-claude at the OpenAI-kind provider.
func anthropicOnOpenAI(c *config.Config) {
	c.Models[2].Targets = []config.Target{{Provider: "mock-openai", Model: "mock-gpt-4o"}}
}

const messagesBody = `{"model":"mock-claude","max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`

func TestOpenAIClientServedByAnthropic(t *testing.T) {
	s := newStack(t, mock.Config{OutputTokens: mock.TokenRange{Min: 5, Max: 5}}, openAIOnAnthropic)
	t.Run("whole", func(t *testing.T) {
		status, _, body := s.do("/v1/chat/completions", `{"model":"mock-gpt","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}]}`, nil)
		if status != 200 {
			t.Fatalf("status %d: %s", status, body)
		}
		last := s.mock.LastRequest()
		if last.Path != "/v1/messages" || last.Model != "mock-claude-sonnet" || last.Header.Get("Anthropic-Version") == "" {
			t.Fatalf("provider saw %s model %q anthropic-version %q; want /v1/messages, the target's model", last.Path, last.Model, last.Header.Get("Anthropic-Version"))
		}
		var req map[string]any
		if err := json.Unmarshal(last.Body, &req); err != nil || req["system"] != "be brief" || req["max_tokens"] == nil {
			t.Fatalf("translated request %s: want system hoisted and max_tokens set", last.Body)
		}
		v := decode(t, body)
		if v["object"] != "chat.completion" {
			t.Fatalf("answer %s: want a chat.completion", body)
		}
		ch := v["choices"].([]any)[0].(map[string]any)
		if ch["finish_reason"] == nil || ch["message"].(map[string]any)["role"] != "assistant" {
			t.Fatalf("answer %s", body)
		}
		if u, _ := v["usage"].(map[string]any); u == nil || u["completion_tokens"] != float64(5) {
			t.Fatalf("usage in %s: want completion_tokens 5", body)
		}
	})
	t.Run("stream", func(t *testing.T) {
		resp, err := s.post(t.Context(), "/v1/chat/completions",
			`{"model":"mock-gpt","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		var chunks, usage int
		var finish, done bool
		var text strings.Builder
		err = sseEvents(resp.Body, func(d string) bool {
			if d == "[DONE]" {
				done = true
				return true
			}
			if done {
				t.Errorf("event after [DONE]: %s", d)
			}
			var c struct {
				Object  string `json:"object"`
				Choices []struct {
					Delta        struct{ Content string }
					FinishReason *string `json:"finish_reason"`
				}
				Usage *struct {
					CompletionTokens int `json:"completion_tokens"`
				}
			}
			if err := json.Unmarshal([]byte(d), &c); err != nil || c.Object != "chat.completion.chunk" {
				t.Errorf("not a chat.completion.chunk: %s", d)
				return false
			}
			chunks++
			for _, ch := range c.Choices {
				text.WriteString(ch.Delta.Content)
				finish = finish || ch.FinishReason != nil
			}
			if c.Usage != nil && len(c.Choices) == 0 {
				usage = c.Usage.CompletionTokens
			}
			return true
		})
		if err != nil || !done || !finish || usage != 5 || text.Len() == 0 {
			t.Fatalf("err %v, %d chunks, done %v, finish %v, usage %d, text %q", err, chunks, done, finish, usage, text.String())
		}
	})
	t.Run("untranslatable", func(t *testing.T) {
		status, _, body := s.do("/v1/chat/completions", `{"model":"mock-gpt","n":2,"messages":[{"role":"user","content":"hi"}]}`, nil)
		if status != 400 || !strings.Contains(string(body), "parameter n ") || errorType(t, body) != "invalid_request_error" || errorParam(t, body) != "n" {
			t.Fatalf("status %d: %s; want an OpenAI 400 naming n, in param too", status, body)
		}
	})
	t.Run("upstream error", func(t *testing.T) {
		status, hdr, body := s.do("/v1/chat/completions", chatBodyPlain, map[string]string{"X-Mock-Fail": "529", "X-Mock-Retry-After": "2s"})
		var v struct {
			Error struct{ Type, Message string }
		}
		if err := json.Unmarshal(body, &v); err != nil || status != 503 || v.Error.Type != "overloaded_error" || hdr.Get("Retry-After") == "" {
			t.Fatalf("status %d, Retry-After %q: %s; want OpenAI's 503 overloaded_error shape with the provider's Retry-After", status, hdr.Get("Retry-After"), body)
		}
	})
}

func TestAnthropicClientServedByOpenAI(t *testing.T) {
	s := newStack(t, mock.Config{OutputTokens: mock.TokenRange{Min: 5, Max: 5}}, anthropicOnOpenAI)
	hdr := map[string]string{"anthropic-version": "2023-06-01"}
	t.Run("whole", func(t *testing.T) {
		status, _, body := s.do("/v1/messages", messagesBody, hdr)
		if status != 200 {
			t.Fatalf("status %d: %s", status, body)
		}
		last := s.mock.LastRequest()
		if last.Path != "/v1/chat/completions" || last.Model != "mock-gpt-4o" || last.APIKey != "" {
			t.Fatalf("provider saw %s model %q x-api-key %q; want /v1/chat/completions with the target's model", last.Path, last.Model, last.APIKey)
		}
		v := decode(t, body)
		if v["type"] != "message" || v["role"] != "assistant" || v["stop_reason"] == nil {
			t.Fatalf("answer %s: want an Anthropic message", body)
		}
		if u, _ := v["usage"].(map[string]any); u == nil || u["output_tokens"] != float64(5) {
			t.Fatalf("usage in %s: want output_tokens 5", body)
		}
	})
	t.Run("stream", func(t *testing.T) {
		resp, err := s.post(t.Context(), "/v1/messages", strings.Replace(messagesBody, `"max_tokens"`, `"stream":true,"max_tokens"`, 1), hdr)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		var types []string
		outTokens := -1
		err = sseEvents(resp.Body, func(d string) bool {
			var ev struct {
				Type  string
				Usage *struct {
					OutputTokens int `json:"output_tokens"`
				}
			}
			if err := json.Unmarshal([]byte(d), &ev); err != nil {
				t.Errorf("event not JSON: %s", d)
				return false
			}
			types = append(types, ev.Type)
			if ev.Type == "message_delta" && ev.Usage != nil {
				outTokens = ev.Usage.OutputTokens
			}
			return true
		})
		if err != nil || len(types) < 4 || types[0] != "message_start" || types[len(types)-1] != "message_stop" || outTokens != 5 {
			t.Fatalf("err %v, events %v, output_tokens %d; want message_start ... message_delta (usage) message_stop", err, types, outTokens)
		}
		if !strings.Contains(strings.Join(types, " "), "content_block_delta") {
			t.Errorf("events %v: no content", types)
		}
	})
	t.Run("untranslatable", func(t *testing.T) {
		status, _, body := s.do("/v1/messages", strings.Replace(messagesBody, `"max_tokens"`, `"mcp_servers":[],"max_tokens"`, 1), hdr)
		if status != 400 || !strings.Contains(string(body), "parameter mcp_servers ") || errorType(t, body) != "invalid_request_error" {
			t.Fatalf("status %d: %s; want an Anthropic 400 naming mcp_servers", status, body)
		}
	})
	t.Run("cache_control dropped", func(t *testing.T) {
		body := `{"model":"mock-claude","max_tokens":50,"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}]}`
		status, h, out := s.do("/v1/messages", body, hdr)
		if status != 200 || !strings.Contains(h.Get("X-Sluice-Dropped"), "cache_control") {
			t.Fatalf("status %d, X-Sluice-Dropped %q: %s", status, h.Get("X-Sluice-Dropped"), out)
		}
	})
	t.Run("upstream error", func(t *testing.T) {
		status, _, body := s.do("/v1/messages", messagesBody, map[string]string{"anthropic-version": "2023-06-01", "X-Mock-Fail": "500"})
		var v struct {
			Type  string
			Error struct{ Type string }
		}
		if err := json.Unmarshal(body, &v); err != nil || status != 500 || v.Type != "error" || v.Error.Type != "api_error" {
			t.Fatalf("status %d: %s; want Anthropic's error shape", status, body)
		}
	})
}

// deadURL is an address nothing listens on.
func deadURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/v1"
}

// An OpenAI primary that cannot be reached fails over to an Anthropic
// backup, and the client still hears OpenAI, whole and streamed.
func TestFailoverAcrossDialects(t *testing.T) {
	dead := deadURL(t)
	s := newStack(t, mock.Config{OutputTokens: mock.TokenRange{Min: 3, Max: 3}}, func(c *config.Config) {
		c.Providers = append(c.Providers, config.Provider{Name: "dead-openai", Kind: "openai", BaseURL: dead, Timeout: config.Duration(10 * time.Second)})
		c.Models[0].Targets = []config.Target{
			{Provider: "dead-openai", Model: "gpt-primary"},
			{Provider: "mock-anthropic", Model: "claude-backup"},
		}
	})
	status, _, body := s.do("/v1/chat/completions", chatBodyPlain, nil)
	if status != 200 || decode(t, body)["object"] != "chat.completion" {
		t.Fatalf("status %d: %s; want the Anthropic backup's answer as a chat.completion", status, body)
	}
	if last := s.mock.LastRequest(); last.Path != "/v1/messages" || last.Model != "claude-backup" {
		t.Fatalf("backup saw %s model %q", last.Path, last.Model)
	}
	resp, err := s.post(t.Context(), "/v1/chat/completions", strings.Replace(chatBodyPlain, `"messages"`, `"stream":true,"messages"`, 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	done := false
	if err := sseEvents(resp.Body, func(d string) bool { done = done || d == "[DONE]"; return true }); err != nil || resp.StatusCode != 200 || !done {
		t.Fatalf("status %d, err %v, [DONE] %v", resp.StatusCode, err, done)
	}

	// A request the backup cannot take is not sent to it: the primary,
	// of the client's kind, is still tried, and its failure is the answer.
	before := s.mock.Stats().Total
	status, _, body = s.do("/v1/chat/completions", `{"model":"mock-gpt","n":2,"messages":[{"role":"user","content":"hi"}]}`, nil)
	if status != 502 || s.mock.Stats().Total != before {
		t.Fatalf("status %d, backup calls %d → %d: %s; want the primary's 502 and no call to the backup", status, before, s.mock.Stats().Total, body)
	}
}

// chatBodyPlain is chatBody without its vendor field, which translation
// would refuse as unknown.
const chatBodyPlain = `{"model":"mock-gpt","messages":[{"role":"user","content":"hi"}],"temperature":0.25}`

// Only targets of the other kind are skipped for an untranslatable
// request: a same-kind target further down still serves it.
func TestUntranslatableSkipsOtherKindTargets(t *testing.T) {
	s := newStack(t, mock.Config{OutputTokens: mock.TokenRange{Min: 1}}, func(c *config.Config) {
		c.Models[0].Targets = []config.Target{
			{Provider: "mock-anthropic", Model: "claude-primary"},
			{Provider: "mock-openai", Model: "gpt-backup"},
		}
	})
	status, _, body := s.do("/v1/chat/completions", `{"model":"mock-gpt","n":2,"messages":[{"role":"user","content":"hi"}]}`, nil)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	if last := s.mock.LastRequest(); last.Path != "/v1/chat/completions" || last.Model != "gpt-backup" {
		t.Fatalf("provider saw %s model %q; want the OpenAI target", last.Path, last.Model)
	}
	if st := s.mock.Stats(); st.Total != 1 {
		t.Fatalf("%d provider calls; the Anthropic target must not have been called", st.Total)
	}
}

// Every model is listed under both APIs, with the endpoints that serve
// it and those that only reach it through translation; a mixed chain
// needs none for chat. GET /v1/models/{id} answers the same entry.
func TestModelListShowsEveryModelUnderBoth(t *testing.T) {
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		c.Models[0].Targets = append(c.Models[0].Targets, config.Target{Provider: "mock-anthropic", Model: "claude-backup"})
	})
	type entry struct {
		ID, Object, Type string
		Sluice           struct{ Endpoints, Translated []string }
	}
	list := func(hdr map[string]string) map[string]entry {
		t.Helper()
		status, _, body := s.get("/v1/models", hdr)
		var v struct{ Data []entry }
		if status != 200 || json.Unmarshal(body, &v) != nil {
			t.Fatalf("list: %d %s", status, body)
		}
		out := map[string]entry{}
		for _, e := range v.Data {
			out[e.ID] = e
		}
		return out
	}
	anthropicHdr := map[string]string{"anthropic-version": "2023-06-01"}
	openai, anthropic := list(nil), list(anthropicHdr)
	for _, l := range []map[string]entry{openai, anthropic} {
		if len(l) != 3 {
			t.Fatalf("listed %v; want all three models", l)
		}
	}
	if openai["mock-gpt"].Object != "model" || anthropic["mock-gpt"].Type != "model" {
		t.Errorf("shapes: %+v, %+v", openai["mock-gpt"], anthropic["mock-gpt"])
	}
	for _, c := range []struct {
		model, endpoints, translated string
	}{
		// A mixed chain is bridged for the Responses API (responses_bridge.go).
		{"mock-gpt", "/v1/chat/completions /v1/completions /v1/embeddings /v1/responses /v1/messages /v1/messages/count_tokens", "/v1/responses"},
		{"mock-embed", "/v1/chat/completions /v1/completions /v1/embeddings /v1/responses /v1/messages /v1/messages/count_tokens", "/v1/messages"},
		{"mock-claude", "/v1/chat/completions /v1/responses /v1/messages /v1/messages/count_tokens", "/v1/chat/completions /v1/responses"},
	} {
		for _, e := range []entry{openai[c.model], anthropic[c.model]} {
			if got := strings.Join(e.Sluice.Endpoints, " "); got != c.endpoints {
				t.Errorf("%s endpoints %q, want %q", c.model, got, c.endpoints)
			}
			if got := strings.Join(e.Sluice.Translated, " "); got != c.translated {
				t.Errorf("%s translated %q, want %q", c.model, got, c.translated)
			}
		}
	}
	status, _, body := s.get("/v1/models/mock-claude", nil)
	if status != 200 || !strings.Contains(string(body), `"translated":["/v1/chat/completions","/v1/responses"]`) || !strings.Contains(string(body), `"object":"model"`) {
		t.Errorf("GET /v1/models/mock-claude from an OpenAI client: %d %s", status, body)
	}
}

// A translated stream the provider cuts short ends with an error event in
// the client's dialect, and no [DONE]: a failed stream never looks done.
func TestTranslatedStreamCutEndsWithErrorEvent(t *testing.T) {
	s := newStack(t, mock.Config{OutputTokens: mock.TokenRange{Min: 20, Max: 20}}, openAIOnAnthropic)
	resp, err := s.post(t.Context(), "/v1/chat/completions", `{"model":"mock-gpt","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
		map[string]string{"X-Mock-Fail": "truncate:5"})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var done, errEvent bool
	err = sseEvents(resp.Body, func(d string) bool {
		done = done || d == "[DONE]"
		errEvent = errEvent || strings.HasPrefix(d, `{"error":`)
		return true
	})
	if resp.StatusCode != 200 || done || !errEvent {
		t.Fatalf("status %d, err %v, [DONE] %v, error event %v; want an OpenAI error event and no [DONE]", resp.StatusCode, err, done, errEvent)
	}
}

// POST /v1/messages/count_tokens: a model whose first target is an
// Anthropic-kind provider gets that provider's count (its target model,
// the provider's key); any other model, or when that call fails, gets
// Sluice's tokenizer's, the one budgets charge, which grows with the
// prompt. An unknown model is 404 in Anthropic's shape.
func TestCountTokens(t *testing.T) {
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		c.Providers = append(c.Providers, config.Provider{Name: "dead", Kind: config.KindAnthropic, BaseURL: deadURL(t),
			Timeout: config.Duration(config.DefaultProviderTimeout)})
		c.Models = append(c.Models, config.Model{Name: "claude-dead", Targets: []config.Target{{Provider: "dead", Model: "claude-x"}}})
	})
	hdr := map[string]string{"anthropic-version": "2023-06-01"}
	count := func(model, text, how string) int64 {
		t.Helper()
		status, h, body := s.do("/v1/messages/count_tokens",
			`{"model":"`+model+`","system":"be brief","messages":[{"role":"user","content":"`+text+`"}]}`, hdr)
		var got struct {
			InputTokens int64 `json:"input_tokens"`
		}
		if status != 200 || json.Unmarshal(body, &got) != nil || got.InputTokens <= 0 || !strings.Contains(how, h.Get("X-Sluice-Token-Count")) {
			t.Fatalf("count_tokens for %s: %d %s %v; want a count by %s", model, status, body, h, how)
		}
		return got.InputTokens
	}

	// The provider's own count: the mock counts a quarter of the text's bytes.
	if n := count("mock-claude", "hello there", "provider"); n != 5 { // "be brief" + "hello there" = 19 bytes
		t.Errorf("provider count %d, want the mock's 5", n)
	}
	if last := s.mock.LastRequest(); last.Path != "/v1/messages/count_tokens" || last.Model != "mock-claude-sonnet" || last.Header.Get("Anthropic-Version") == "" {
		t.Errorf("provider saw %s model %q anthropic-version %q", last.Path, last.Model, last.Header.Get("Anthropic-Version"))
	}

	// The tokenizer: an OpenAI-kind model, and a provider that fails.
	short, long := count("mock-gpt", "hi", "exact estimated"), count("mock-gpt", strings.Repeat("tell me more about sluices ", 50), "exact estimated")
	if long <= short+100 {
		t.Errorf("a 250-word prompt counts %d, a one-word one %d", long, short)
	}
	count("claude-dead", "hi", "estimated")
	if st := s.mock.Stats(); st.Total != 0 {
		t.Errorf("%d generation calls; counting must not generate", st.Total)
	}
	status, _, body := s.do("/v1/messages/count_tokens", `{"model":"nope","messages":[]}`, hdr)
	if status != 404 || !strings.Contains(string(body), `"not_found_error"`) {
		t.Errorf("unknown model: %d %s", status, body)
	}
}

// errorParam is an OpenAI-shaped error's "param", or "" when it is null.
func errorParam(t *testing.T, body []byte) string {
	t.Helper()
	var v struct {
		Error struct {
			Param *string `json:"param"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("error body %s: %v", body, err)
	}
	if v.Error.Param == nil {
		return ""
	}
	return *v.Error.Param
}

// An OpenAI-shaped 400 names the parameter at fault in "param", as
// OpenAI's API does and its SDKs expose; one no parameter caused has a
// null param.
func TestBadRequestNamesParam(t *testing.T) {
	s := newStack(t, mock.Config{}, nil)
	for _, c := range []struct{ body, param string }{
		{`{"model":"mock-gpt","max_tokens":-1,"messages":[]}`, "max_tokens"},
		{`{"model":"mock-gpt","max_tokens":5,"max_completion_tokens":5,"messages":[]}`, "max_completion_tokens"},
		{`{"model":7,"messages":[]}`, "model"},
		{`{"messages":[]}`, "model"},
		{`{"model":"mock-gpt","stream":"yes","messages":[]}`, "stream"},
		{`{"model":"mock-gpt","Model":"other","messages":[]}`, "Model"},
		{`{"model":"mock-gpt","messages":[],"messages":[]}`, "messages"},
		{`{"model":"mock-gpt",`, ""},
	} {
		status, _, body := s.do("/v1/chat/completions", c.body, nil)
		if status != 400 || errorParam(t, body) != c.param {
			t.Errorf("%s: %d %s; want 400 with param %q", c.body, status, body, c.param)
		}
	}
}
