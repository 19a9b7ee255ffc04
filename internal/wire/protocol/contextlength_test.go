package protocol

import (
	"strings"
	"testing"
)

func TestContextExceeded(t *testing.T) {
	for _, c := range []struct {
		name   string
		d      Dialect
		status int
		body   string
		want   bool
	}{
		{"openai code", OpenAI, 400, `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, true},
		{"vllm message only", OpenAI, 400, `{"object":"error","message":"x","error":{"message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens","code":400}}`, true},
		{"openai other 400", OpenAI, 400, `{"error":{"message":"Invalid value for temperature","type":"invalid_request_error","code":"invalid_value"}}`, false},
		{"openai content filter", OpenAI, 400, `{"error":{"message":"The response was filtered due to the prompt triggering content management policy.","type":null,"param":"prompt","code":"content_filter"}}`, false},
		{"openai 500 with the code", OpenAI, 500, `{"error":{"code":"context_length_exceeded"}}`, false},
		{"anthropic too long", Anthropic, 400, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}`, true},
		{"anthropic max_tokens", Anthropic, 400, `{"type":"error","error":{"type":"invalid_request_error","message":"input length and ` + "`max_tokens`" + ` exceed context limit: 198000 + 8192 > 200000"}}`, true},
		{"anthropic other", Anthropic, 400, `{"type":"error","error":{"type":"invalid_request_error","message":"messages: roles must alternate"}}`, false},
		{"not json", OpenAI, 400, `context_length_exceeded`, false},
		{"too big", OpenAI, 400, `{"error":{"code":"context_length_exceeded","message":"` + strings.Repeat("x", MaxErrorBody) + `"}}`, false},
	} {
		if got := ContextExceeded(c.d, c.status, []byte(c.body)); got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}
