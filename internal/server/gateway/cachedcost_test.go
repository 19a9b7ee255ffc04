package gateway_test

import (
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
)

// The part of the input a provider served from its prompt cache is
// priced at cached_input, in each API's usage shape: OpenAI's
// prompt_tokens_details.cached_tokens, inside prompt_tokens; Anthropic's
// cache_read_input_tokens, beside input_tokens (its cache writes are
// priced as input).
func TestCostWithCachedTokens(t *testing.T) {
	s := chargeStack(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if strings.HasSuffix(r.URL.Path, "/messages") {
			send := sse(w)
			send("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"up\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":100,\"cache_creation_input_tokens\":200,\"cache_read_input_tokens\":3000,\"output_tokens\":1}}}\n\n")
			send("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
			send("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n")
			send("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
			send("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":40}}\n\n")
			send("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c","object":"chat.completion","created":1,"model":"up","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":2000,"completion_tokens":50,"total_tokens":2050,"prompt_tokens_details":{"cached_tokens":1536}}}`)
	}, func(c *config.Config) {
		c.Prices = map[string]config.Price{
			"mock-gpt-4o":        {Input: 2.5, CachedInput: 1.25, Output: 10},
			"mock-claude-sonnet": {Input: 3, CachedInput: 0.3, Output: 15},
		}
	})
	if status, _, body := s.do("/v1/chat/completions", `{"model":"mock-gpt","messages":[{"role":"user","content":"hi"}]}`, nil); status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	if status := readAll(t, s, "/v1/messages", `{"model":"mock-claude","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, nil); status != 200 {
		t.Fatalf("anthropic stream: %d", status)
	}
	waitWithin(t, 15*time.Second, 5*time.Millisecond, "both requests' log lines", func() bool { return strings.Count(s.logText(), "msg=request ") >= 2 })
	for _, c := range []struct {
		series string
		want   float64 // micro-dollars
	}{
		// 464 uncached at $2.50, 1,536 cached at $1.25, 50 out at $10.
		{`sluice_cost_total{key="-",model="mock-gpt",provider="mock-openai",upstream_model="mock-gpt-4o"}`, 464*2.5 + 1536*1.25 + 50*10},
		// 100 + 200 written at $3, 3,000 read at $0.30, 40 out at $15.
		{`sluice_cost_total{key="-",model="mock-claude",provider="mock-anthropic",upstream_model="mock-claude-sonnet"}`, 300*3 + 3000*0.3 + 40*15},
	} {
		if v := seriesValue(t, s, c.series); math.Abs(v*1e6-c.want) > 1e-6 {
			t.Errorf("%s = %v µ$·1e-6, want %v µ$", c.series, v*1e6, c.want)
		}
	}
}
