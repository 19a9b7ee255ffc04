package gateway_test

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
)

// A stream cut after 4 of its 8 tokens and continued, whose
// continuation is cut after 4 tokens too (the fault header reaches it
// as well): the broken call is billed its 4 tokens and its input, the
// continuation its own 4 and its own input (the prompt again, with the
// answer so far), though the client's stream ended in an error.
func TestSpendBillsContinuations(t *testing.T) {
	s := newStack(t, mock.Config{}, spendConfig(t, config.SpendLimits{Daily: dollars(10)}), memoryStore)
	hdr := bearer("sk-k")
	hdr["X-Mock-Output-Tokens"] = "8"
	hdr["X-Mock-Fail"] = "truncate:4"
	resp, err := s.post(context.Background(), "/v1/chat/completions", `{"model":"mock-gpt","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, hdr)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "broke off the stream") {
		t.Fatalf("%d: want a stream that ends in the provider's break\n%s", resp.StatusCode, b)
	}
	spent := seriesValue(t, s, `sluice_spend_dollars{name="k",scope="key",window="daily"}`)
	// 8 tokens at a cent; the two inputs, of about ten tokens each, at
	// a dollar a million.
	if spent < 0.08 || spent > 0.0801 {
		t.Fatalf("spent $%.6f, want $0.08 and two inputs: both calls' tokens", spent)
	}
}
