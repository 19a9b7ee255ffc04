package gateway_test

import (
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
)

func bearer(key string) map[string]string { return map[string]string{"Authorization": "Bearer " + key} }

// A key's budget answers in the shape each API's clients pace
// themselves by: the rate-limit headers on every answer, and a 429 with
// the exact wait once it is spent; another key is untouched.
func TestKeyBudgetAnswers(t *testing.T) {
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		c.Keys = []config.Key{
			{Name: "small", SHA256: config.KeyHash("sk-small"), Limits: config.Limits{RPM: 12, ITPM: 60}}, // 2 at once
			{Name: "free", SHA256: config.KeyHash("sk-free")},
		}
	})
	for i, want := range []string{"1", "0"} {
		status, h, body := s.do("/v1/chat/completions", chatBody, bearer("sk-small"))
		if status != 200 {
			t.Fatalf("request %d: %d %s", i, status, body)
		}
		if got := h.Get("X-Ratelimit-Remaining-Requests"); got != want || h.Get("X-Ratelimit-Limit-Requests") != "12" {
			t.Errorf("request %d: x-ratelimit-remaining-requests %q, want %s (headers %v)", i, got, want, h)
		}
		if h.Get("X-Ratelimit-Limit-Tokens") != "60" {
			t.Errorf("request %d: x-ratelimit-limit-tokens %q, want the input budget, 60", i, h.Get("X-Ratelimit-Limit-Tokens"))
		}
	}
	status, h, body := s.do("/v1/chat/completions", chatBody, bearer("sk-small"))
	if status != 429 || errorType(t, body) != "rate_limit_exceeded" || h.Get("Retry-After") != "5" {
		t.Fatalf("third request: %d, Retry-After %q, %s; want 429 rate_limit_exceeded after 5 s (12 a minute)", status, h.Get("Retry-After"), body)
	}
	if !strings.Contains(string(body), "requests") {
		t.Errorf("the refusal does not say which budget: %s", body)
	}
	if status, _, _ := s.do("/v1/chat/completions", chatBody, bearer("sk-free")); status != 200 {
		t.Errorf("another key: %d, want 200", status)
	}
	// The metrics show the spent budget, the refusal by dimension, and
	// nothing left reserved once the answers settled.
	waitFor(t, "every log line", func() bool { return strings.Count(s.logText(), "msg=request ") >= 4 })
	m := httpGetAdmin(t, s, "/metrics")
	for _, want := range []string{
		`sluice_budget_remaining{dimension="requests",name="small",owner="key"} 0`,
		`sluice_budget_reserved{dimension="input_tokens",name="small",owner="key"} 0`,
		`sluice_budget_refusals_total{dimension="requests",key="small"} 1`,
		`sluice_tokens_total{direction="input",key="small",model="mock-gpt",provider="mock-openai",source="reported"}`, // the mock reports prompt_tokens
		`sluice_tokens_total{direction="output",key="small",model="mock-gpt",provider="mock-openai",source="reported"}`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	// A prompt larger than the whole input budget can never pass: 413,
	// not a Retry-After that would lie.
	long := `{"model":"mock-gpt","messages":[{"role":"user","content":"` + strings.Repeat("tell me a story about the sea ", 30) + `"}]}`
	status, h, body = s.do("/v1/chat/completions", long, bearer("sk-free"))
	if status != 200 {
		t.Fatalf("a long prompt on an unlimited key: %d %s", status, body)
	}
	s2 := newStack(t, mock.Config{}, func(c *config.Config) {
		c.Keys = []config.Key{{Name: "small", SHA256: config.KeyHash("sk-small"), Limits: config.Limits{ITPM: 60}}}
	})
	status, h, body = s2.do("/v1/chat/completions", long, bearer("sk-small"))
	if status != 413 || h.Get("Retry-After") != "" || !strings.Contains(string(body), "input tokens") {
		t.Errorf("a prompt above the key's whole input budget: %d, Retry-After %q, %s; want 413 naming input tokens", status, h.Get("Retry-After"), body)
	}
}

// Anthropic's clients read anthropic-ratelimit-*, per dimension.
func TestKeyBudgetAnthropicHeaders(t *testing.T) {
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		c.Keys = []config.Key{{Name: "k", SHA256: config.KeyHash("sk-k"), Limits: config.Limits{RPM: 30, OTPM: 1000}}}
	})
	status, h, body := s.do("/v1/messages", anthropicBody, map[string]string{"X-Api-Key": "sk-k", "anthropic-version": "2023-06-01"})
	if status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	if h.Get("Anthropic-Ratelimit-Requests-Remaining") != "4" || // a burst of 5 h.Get("Anthropic-Ratelimit-Output-Tokens-Limit") != "1000" ||
		h.Get("Anthropic-Ratelimit-Requests-Reset") == "" || h.Get("Anthropic-Ratelimit-Input-Tokens-Limit") != "" {
		t.Errorf("rate-limit headers: %v", h)
	}
}

// Under pressure, a background request of a model with degrade: is
// served by the smaller model with a capped allowance, and says so.
func TestDegrade(t *testing.T) {
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		c.Models = append(c.Models, config.Model{Name: "mock-gpt-small", Targets: []config.Target{{Provider: "mock-openai", Model: "mock-gpt-mini"}}})
		for i := range c.Models {
			if c.Models[i].Name == "mock-gpt" {
				c.Models[i].Degrade = &config.Degrade{To: "mock-gpt-small", MaxTokens: 7, BudgetBelow: 0.999}
			}
		}
		c.Keys = []config.Key{
			{Name: "batch", SHA256: config.KeyHash("sk-batch"), Priority: config.PriorityBackground, Limits: config.Limits{RPM: 100}},
			{Name: "chat", SHA256: config.KeyHash("sk-chat"), Limits: config.Limits{RPM: 100}},
		}
		c.Prices = map[string]config.Price{"mock-gpt-mini": {Input: 1, Output: 2}}
	})
	_, h, _ := s.do("/v1/chat/completions", chatBody, bearer("sk-batch"))
	if h.Get("X-Sluice-Degraded") != "" {
		t.Fatalf("degraded with the key's budget full: %q", h.Get("X-Sluice-Degraded"))
	}
	// 99 of 100 left is below 99.9%: pressure.
	status, h, body := s.do("/v1/chat/completions", chatBody, bearer("sk-batch"))
	if status != 200 || h.Get("X-Sluice-Degraded") != "model=mock-gpt-small,max_tokens=7" {
		t.Fatalf("second background request: %d, X-Sluice-Degraded %q, %s", status, h.Get("X-Sluice-Degraded"), body)
	}
	up := string(s.mock.LastRequest().Body)
	if !strings.Contains(up, `"model":"mock-gpt-mini"`) || !strings.Contains(up, `"max_tokens":7`) {
		t.Errorf("the provider got %s; want the small model with max_tokens 7", up)
	}
	// Interactive work is never degraded.
	s.do("/v1/chat/completions", chatBody, bearer("sk-chat"))
	if _, h, _ := s.do("/v1/chat/completions", chatBody, bearer("sk-chat")); h.Get("X-Sluice-Degraded") != "" {
		t.Errorf("an interactive request was degraded: %q", h.Get("X-Sluice-Degraded"))
	}
	logs := s.logText()
	if !strings.Contains(logs, "degraded=") || !strings.Contains(logs, "cost_dollars=") || !strings.Contains(logs, "input_tokens=") {
		t.Errorf("the log does not record the degradation, tokens and cost:\n%s", logs)
	}
}

// A stream's budget settles with the provider's own count: Sluice asks
// an OpenAI-style stream for its usage, and the client, which did not
// ask, never sees the extra chunk; a client that asked gets it.
func TestStreamUsageInjected(t *testing.T) {
	s := newStack(t, mock.Config{OutputTokens: mock.TokenRange{Min: 9}}, func(c *config.Config) {
		c.Keys = []config.Key{
			{Name: "k", SHA256: config.KeyHash("sk-k"), Limits: config.Limits{OTPM: 1000}},
			{Name: "k2", SHA256: config.KeyHash("sk-k2"), Limits: config.Limits{OTPM: 1000}},
		}
	})
	const stream = `{"model":"mock-gpt","stream":true,"max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`
	status, _, body := s.do("/v1/chat/completions", stream, bearer("sk-k"))
	if status != 200 || strings.Contains(string(body), `"choices":[]`) || !strings.HasSuffix(string(body), "data: [DONE]\n\n") {
		t.Fatalf("%d: the client got the usage chunk it did not ask for, or lost the end:\n%s", status, body)
	}
	if up := string(s.mock.LastRequest().Body); !strings.Contains(up, `"include_usage":true`) {
		t.Errorf("the provider was not asked for usage: %s", up)
	}
	// A request naming no max_tokens reserves the default allowance, cut
	// to what the key's budget could ever give (1,000, not 1,024).
	if status, _, body := s.do("/v1/chat/completions", chatBody, bearer("sk-k2")); status != 200 {
		t.Fatalf("a request without max_tokens on a key of 1,000 output tokens a minute: %d %s", status, body)
	}
	waitFor(t, "the log lines", func() bool { return strings.Count(s.logText(), "msg=request ") >= 2 })
	if !strings.Contains(s.logText(), "output_tokens=9") {
		t.Errorf("the stream's tokens are not the provider's 9:\n%s", s.logText())
	}
	m := httpGetAdmin(t, s, "/metrics")
	if !strings.Contains(m, `sluice_tokens_total{direction="output",key="k",model="mock-gpt",provider="mock-openai",source="reported"} 9`) {
		t.Errorf("output tokens are not reported (9):\n%s", grepLines(m, "sluice_tokens_total"))
	}
	asked := `{"model":"mock-gpt","stream":true,"max_tokens":50,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`
	if _, _, body := s.do("/v1/chat/completions", asked, bearer("sk-k")); !strings.Contains(string(body), `"choices":[]`) {
		t.Errorf("a client that asked for the usage chunk did not get it:\n%s", body)
	}
}

func grepLines(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// Embeddings generate no output: they reserve none and are charged none.
func TestEmbeddingsReserveNoOutput(t *testing.T) {
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		c.Keys = []config.Key{{Name: "k", SHA256: config.KeyHash("sk-k"), Limits: config.Limits{OTPM: 100}}}
	})
	for range 3 {
		status, h, body := s.do("/v1/embeddings", `{"model":"mock-embed","input":"hello there"}`, bearer("sk-k"))
		if status != 200 || h.Get("X-Ratelimit-Remaining-Tokens") != "100" {
			t.Fatalf("embeddings: %d, remaining output tokens %q, %s; want 200 with all 100 left", status, h.Get("X-Ratelimit-Remaining-Tokens"), body)
		}
	}
}
