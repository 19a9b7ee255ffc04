package gateway_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
)

// Translation bends: what the other API can carry crosses in its words,
// what leaves the answer's shape alone is dropped and named, and only
// the rest is refused (on_unsupported).

const bendSchema = `{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city","days"],"additionalProperties":false}`

// bendAnswer is what the mock answers bendSchema with.
const bendAnswer = `{"city":"mock","days":1}`

const bendChat = `{"model":"mock-gpt","seed":7,"max_tokens":8000,"reasoning_effort":"low",` +
	`"response_format":{"type":"json_schema","json_schema":{"name":"weather","strict":true,"schema":` + bendSchema + `}},` +
	`"messages":[{"role":"user","content":"bend-prompt-text"}]}`

func TestBendOpenAIClientOnAnthropic(t *testing.T) {
	s := newStack(t, mock.Config{OutputTokens: mock.TokenRange{Min: 5, Max: 5}}, openAIOnAnthropic)
	t.Run("whole", func(t *testing.T) {
		status, h, body := s.do("/v1/chat/completions", bendChat, nil)
		if status != 200 {
			t.Fatalf("status %d: %s", status, body)
		}
		if got := h.Get("X-Sluice-Dropped"); got != "seed" {
			t.Errorf("X-Sluice-Dropped %q, want seed", got)
		}
		last := s.mock.LastRequest()
		var up struct {
			Seed         json.RawMessage `json:"seed"`
			OutputConfig struct {
				Format struct {
					Type   string          `json:"type"`
					Schema json.RawMessage `json:"schema"`
				} `json:"format"`
			} `json:"output_config"`
			Thinking struct {
				Type         string `json:"type"`
				BudgetTokens int    `json:"budget_tokens"`
			} `json:"thinking"`
		}
		if err := json.Unmarshal(last.Body, &up); err != nil {
			t.Fatal(err)
		}
		if last.Path != "/v1/messages" || up.Seed != nil || up.OutputConfig.Format.Type != "json_schema" ||
			string(up.OutputConfig.Format.Schema) != bendSchema || up.Thinking.Type != "enabled" || up.Thinking.BudgetTokens != 2048 {
			t.Fatalf("the Anthropic target saw %s %s; want output_config with the schema, thinking with budget 2048, no seed", last.Path, last.Body)
		}
		v := decode(t, body)
		content := v["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"]
		if content != bendAnswer {
			t.Errorf("content %q, want the JSON alone (the thinking block skipped): %s", content, body)
		}
		if got := h.Get("X-Sluice-Validation"); got != "valid" {
			t.Errorf("X-Sluice-Validation %q (%s), want valid", got, h.Get("X-Sluice-Validation-Reason"))
		}
		logs := s.logText()
		if n := strings.Count(logs, "translation dropped parameters"); n != 1 {
			t.Errorf("%d log lines name the dropped parameters, want 1:\n%s", n, logs)
		}
		for _, line := range strings.Split(logs, "\n") {
			if strings.Contains(line, "translation dropped parameters") &&
				(!strings.Contains(line, "dropped=seed") || !strings.Contains(line, "model=mock-gpt") || !strings.Contains(line, "provider=mock-anthropic") || !strings.Contains(line, "level=INFO")) {
				t.Errorf("log line %q: want level INFO, the model, the provider and dropped=seed", line)
			}
		}
		if strings.Contains(logs, "bend-prompt-text") {
			t.Error("the request's content reached the log")
		}
	})
	t.Run("stream", func(t *testing.T) {
		resp, err := s.post(t.Context(), "/v1/chat/completions", strings.Replace(bendChat, `"seed":7`, `"seed":7,"stream":true`, 1), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("X-Sluice-Dropped") != "seed" {
			t.Fatalf("status %d, X-Sluice-Dropped %q", resp.StatusCode, resp.Header.Get("X-Sluice-Dropped"))
		}
		var text strings.Builder
		done := false
		err = sseEvents(resp.Body, func(d string) bool {
			if d == "[DONE]" {
				done = true
				return true
			}
			var c struct {
				Choices []struct{ Delta struct{ Content string } }
			}
			if json.Unmarshal([]byte(d), &c) == nil {
				for _, ch := range c.Choices {
					text.WriteString(ch.Delta.Content)
				}
			}
			return true
		})
		if err != nil || !done || text.String() != bendAnswer {
			t.Fatalf("err %v, done %v, text %q; want the JSON alone", err, done, text.String())
		}
	})
}

func TestBendOnUnsupportedPerModel(t *testing.T) {
	s := newStack(t, mock.Config{OutputTokens: mock.TokenRange{Min: 1, Max: 1}}, func(c *config.Config) {
		openAIOnAnthropic(c)
		c.Models[0].OnUnsupported = "refuse"
		anthropicOnOpenAI(c)
		c.Models[2].OnUnsupported = "drop"
	})
	status, _, body := s.do("/v1/chat/completions", `{"model":"mock-gpt","seed":7,"messages":[{"role":"user","content":"hi"}]}`, nil)
	if status != 400 || !strings.Contains(string(body), "parameter seed ") || errorParam(t, body) != "seed" {
		t.Fatalf("on_unsupported refuse: status %d: %s; want a 400 naming seed", status, body)
	}
	hdr := map[string]string{"anthropic-version": "2023-06-01"}
	status, h, body := s.do("/v1/messages", `{"model":"mock-claude","max_tokens":20,"mcp_servers":[],"messages":[{"role":"user","content":"hi"}]}`, hdr)
	if status != 200 || h.Get("X-Sluice-Dropped") != "mcp_servers" {
		t.Fatalf("on_unsupported drop: status %d, X-Sluice-Dropped %q: %s", status, h.Get("X-Sluice-Dropped"), body)
	}
}

// An Anthropic client's output_config.format is held to, translated or
// not: its contract compiles, and the answer is checked against it.
func TestBendAnthropicOutputConfig(t *testing.T) {
	body := `{"model":"mock-claude","max_tokens":200,"output_config":{"format":{"type":"json_schema","schema":` + bendSchema + `}},` +
		`"messages":[{"role":"user","content":"weather?"}]}`
	hdr := map[string]string{"anthropic-version": "2023-06-01"}
	for name, mutate := range map[string]func(*config.Config){"same API": nil, "translated": anthropicOnOpenAI} {
		t.Run(name, func(t *testing.T) {
			s := newStack(t, mock.Config{OutputTokens: mock.TokenRange{Min: 5, Max: 5}}, mutate)
			status, h, out := s.do("/v1/messages", body, hdr)
			if status != 200 {
				t.Fatalf("status %d: %s", status, out)
			}
			v := decode(t, out)
			if text := v["content"].([]any)[0].(map[string]any)["text"]; text != bendAnswer {
				t.Errorf("text %q, want %s", text, bendAnswer)
			}
			if got := h.Get("X-Sluice-Validation"); got != "valid" {
				t.Errorf("X-Sluice-Validation %q (%s), want valid", got, h.Get("X-Sluice-Validation-Reason"))
			}
			if mutate != nil {
				var up struct {
					ResponseFormat struct {
						Type       string `json:"type"`
						JSONSchema struct {
							Name   string          `json:"name"`
							Schema json.RawMessage `json:"schema"`
						} `json:"json_schema"`
					} `json:"response_format"`
				}
				last := s.mock.LastRequest()
				if json.Unmarshal(last.Body, &up) != nil || up.ResponseFormat.Type != "json_schema" || string(up.ResponseFormat.JSONSchema.Schema) != bendSchema {
					t.Errorf("the OpenAI target saw %s; want a json_schema response_format", last.Body)
				}
			}
		})
	}
	t.Run("a schema that does not compile is a 400", func(t *testing.T) {
		s := newStack(t, mock.Config{}, nil)
		status, _, out := s.do("/v1/messages", strings.Replace(body, bendSchema, `{"type":"nonsense"}`, 1), hdr)
		if status != 400 || !strings.Contains(string(out), "output_config.format.schema") {
			t.Fatalf("status %d: %s; want a 400 naming output_config.format.schema", status, out)
		}
	})
}
