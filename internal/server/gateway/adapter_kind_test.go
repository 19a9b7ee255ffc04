package gateway_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/server/gateway"
	"github.com/sluice-gw/sluice/internal/wire/native"
	"github.com/sluice-gw/sluice/internal/wire/native/nativetest"
	"github.com/sluice-gw/sluice/internal/wire/vendors"
)

// TestNewProviderKind adds a provider kind the build does not know, as
// docs/ARCHITECTURE.md's recipe says, from outside the gateway: a codec
// (the toy API of package nativetest under a new kind name), registered
// in package vendors, which makes it a config kind; and its signer,
// registered with gateway.RegisterSigner. Nothing else is told of it: the
// gateway serves both APIs' clients through it, whole and streamed, and
// refuses what its codec cannot carry as for any native kind.
func TestNewProviderKind(t *testing.T) {
	const kind = "toyvendor"
	t.Cleanup(vendors.Register(nativetest.Kind(kind)))
	t.Cleanup(gateway.RegisterSigner(kind, func(_ context.Context, pc *config.Provider) (native.Signer, error) {
		return toySigner{key: pc.APIKey()}, nil
	}))
	t.Setenv(geminiKeyEnv, geminiKey)
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		root := strings.TrimSuffix(c.Providers[0].BaseURL, "/v1")
		c.Providers = append(c.Providers, config.Provider{Name: "toyp", Kind: kind, BaseURL: root, APIKeyEnv: geminiKeyEnv,
			Timeout: config.Duration(10 * time.Second), ForwardHeaders: []string{"X-Mock-Output-Tokens"}})
		c.Models[0].Targets = []config.Target{{Provider: "toyp", Model: "toy-1"}}
		c.Models[2].Targets = []config.Target{{Provider: "toyp", Model: "toy-1"}}
	})
	three := map[string]string{"X-Mock-Output-Tokens": "3"}

	status, _, body := s.do("/v1/chat/completions", plainChat, three)
	var chat struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	if status != 200 || json.Unmarshal(body, &chat) != nil || len(chat.Choices) != 1 || len(strings.Fields(chat.Choices[0].Message.Content)) != 3 {
		t.Fatalf("OpenAI client: status %d: %s", status, body)
	}
	checkVendorCall(t, s, "/toy/toy-1:say")

	status, _, body = s.do("/v1/messages", `{"model":"mock-claude","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, three)
	if status != 200 || !strings.Contains(string(body), "event: message_stop") {
		t.Fatalf("Anthropic client, streamed: status %d:\n%s", status, body)
	}
	checkVendorCall(t, s, "/toy/toy-1:stream")

	// What the toy codec cannot carry is the client's 400, named.
	status, _, body = s.do("/v1/messages", `{"model":"mock-claude","max_tokens":50,"top_k":5,"messages":[{"role":"user","content":"hi"}]}`, nil)
	if status != 400 || !strings.Contains(string(body), "native API provider") {
		t.Fatalf("a request the codec cannot carry: status %d: %s", status, body)
	}
}
