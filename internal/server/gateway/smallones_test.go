package gateway_test

import (
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
)

// The 404 for a model the gateway does not serve lists the models the
// caller may use: its key's, not every model on the gateway, so that a
// key scoped to one model learns nothing of the others.
func TestUnknownModelListsOnlyTheKeysModels(t *testing.T) {
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		c.Keys = []config.Key{
			{Name: "search", SHA256: config.KeyHash("sk-search"), Models: []string{"mock-gpt"}},
			{Name: "support", SHA256: config.KeyHash("sk-support")},
		}
	})
	body := `{"model":"no-such-model","messages":[{"role":"user","content":"hi"}]}`
	status, _, b := s.do("/v1/chat/completions", body, map[string]string{"Authorization": "Bearer sk-search"})
	if status != 404 || !strings.Contains(string(b), "available models: mock-gpt") {
		t.Fatalf("scoped key: %d %s; want 404 listing mock-gpt", status, b)
	}
	for _, other := range []string{"mock-claude", "mock-embed"} {
		if strings.Contains(string(b), other) {
			t.Errorf("the scoped key's 404 names %s, which it may not use: %s", other, b)
		}
	}
	status, _, b = s.do("/v1/chat/completions", body, map[string]string{"Authorization": "Bearer sk-support"})
	if status != 404 || !strings.Contains(string(b), "mock-claude") || !strings.Contains(string(b), "mock-gpt") {
		t.Errorf("unscoped key: %d %s; want 404 listing every model", status, b)
	}
}
