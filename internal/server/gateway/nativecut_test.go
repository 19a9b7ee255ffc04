package gateway_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/wire/vendors"
)

// A native provider's stream cut after 20 of its 60 tokens, with no
// usage ever reported for it, is billed for what was relayed: its
// codec's hub events are read by their meaning, whatever order it
// writes their keys in (the Gemini codec once wrote "type" after
// "message", and a byte scan billed 200 relayed deltas as 1 token).
func TestNativeCutStreamBilledAsRelayed(t *testing.T) {
	if _, ok := vendors.Lookup(config.KindGemini); !ok {
		t.Skip("this build has no gemini codec")
	}
	t.Setenv(geminiKeyEnv, geminiKey)
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		c.Log.Format = "json"
		root := strings.TrimSuffix(c.Providers[0].BaseURL, "/v1")
		c.Providers = append(c.Providers, config.Provider{Name: "gem", Kind: config.KindGemini, BaseURL: root + "/v1beta", APIKeyEnv: geminiKeyEnv,
			Timeout: config.Duration(10 * time.Second), ForwardHeaders: []string{"X-Mock-Output-Tokens", "X-Mock-Fail"}})
		onlyGemModel(c, "gemini-2.5-flash")
		noContinuation(c)
	})
	hdr := map[string]string{"X-Mock-Output-Tokens": "60", "X-Mock-Fail": "truncate:20"}
	for _, c := range []struct{ path, body, text string }{
		{"/v1/chat/completions", `{"model":"mock-gpt","stream":true,"messages":[{"role":"user","content":"hi"}]}`, `"content":`},
		{"/v1/messages", `{"model":"mock-claude","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, `"text_delta"`},
	} {
		h := map[string]string{"Anthropic-Version": "2023-06-01"}
		for k, v := range hdr {
			h[k] = v
		}
		before := len(s.usageLines())
		status, _, body := s.do(c.path, c.body, h)
		if status != 200 {
			t.Fatalf("%s: %d %s", c.path, status, body)
		}
		relayed := strings.Count(string(body), c.text)
		if c.path == "/v1/chat/completions" {
			relayed-- // the role chunk's empty content
		}
		waitFor(t, "the log line", func() bool { return len(s.usageLines()) > before })
		got := s.usageLines()[before].OutputTokens
		if relayed < 15 || got < relayed*95/100 || got > relayed*105/100+1 {
			t.Errorf("%s: logged %d output tokens for %d text deltas relayed; want within 5 %%\n%s", c.path, got, relayed, body)
		}
	}
}
