package gateway_test

import (
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
)

const anthropicBody = `{"model":"mock-claude","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`

// With keys defined, a request needs a known one: the way each SDK sends
// it (a bearer token, or x-api-key), checked by its SHA-256; a missing or
// unknown key is a 401, a model the key may not use a 403, each in its
// API's own shape.
func TestVirtualKeys(t *testing.T) {
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		c.Keys = []config.Key{
			{Name: "search", SHA256: config.KeyHash("sk-search"), Models: []string{"mock-gpt"}},
			{Name: "support", SHA256: config.KeyHash("sk-support")},
		}
	})
	for _, tc := range []struct {
		name, path, body string
		hdr              map[string]string
		status           int
		want             string
	}{
		{"no key", "/v1/chat/completions", chatBody, nil, 401, `"invalid_request_error"`},
		{"unknown key", "/v1/chat/completions", chatBody, map[string]string{"Authorization": "Bearer sk-nope"}, 401, "not one this gateway knows"},
		{"known key", "/v1/chat/completions", chatBody, map[string]string{"Authorization": "Bearer sk-search"}, 200, `"choices"`},
		{"anthropic, x-api-key", "/v1/messages", anthropicBody, map[string]string{"X-Api-Key": "sk-support", "anthropic-version": "2023-06-01"}, 200, `"content"`},
		{"anthropic, no key", "/v1/messages", anthropicBody, map[string]string{"anthropic-version": "2023-06-01"}, 401, `"authentication_error"`},
		{"model not allowed", "/v1/messages", anthropicBody, map[string]string{"X-Api-Key": "sk-search", "anthropic-version": "2023-06-01"}, 403, `"permission_error"`},
	} {
		status, _, body := s.do(tc.path, tc.body, tc.hdr)
		if status != tc.status || !strings.Contains(string(body), tc.want) {
			t.Errorf("%s: status %d, %s; want %d with %s", tc.name, status, body, tc.status, tc.want)
		}
	}
	// The model list is the key's.
	status, _, body := s.get("/v1/models", map[string]string{"Authorization": "Bearer sk-search"})
	if status != 200 || !strings.Contains(string(body), `"mock-gpt"`) || strings.Contains(string(body), "mock-embed") {
		t.Errorf("models for a key limited to mock-gpt: %d %s", status, body)
	}
	if status, _, _ := s.get("/v1/models", nil); status != 401 {
		t.Errorf("models without a key: %d, want 401", status)
	}
	// One model by id: the key's own, in each API's shape; another's is
	// not found, as a model that does not exist is.
	if status, _, body := s.get("/v1/models/mock-gpt", map[string]string{"Authorization": "Bearer sk-search"}); status != 200 || !strings.Contains(string(body), `"object":"model"`) {
		t.Errorf("GET /v1/models/mock-gpt: %d %s", status, body)
	}
	if status, _, body := s.get("/v1/models/mock-claude", map[string]string{"X-Api-Key": "sk-support", "anthropic-version": "2023-06-01"}); status != 200 || !strings.Contains(string(body), `"type":"model"`) {
		t.Errorf("GET /v1/models/mock-claude (Anthropic): %d %s", status, body)
	}
	for _, id := range []string{"mock-embed", "no-such-model"} {
		if status, _, body := s.get("/v1/models/"+id, map[string]string{"Authorization": "Bearer sk-search"}); status != 404 || !strings.Contains(string(body), "GET /v1/models lists") {
			t.Errorf("GET /v1/models/%s with a key limited to mock-gpt: %d %s; want 404", id, status, body)
		}
	}
	// The key never reaches the provider.
	if got := s.mock.LastRequest().Header.Get("X-Api-Key"); got == "sk-support" {
		t.Error("the client's key reached the provider")
	}
}

// A key's class is its ceiling: its requests are of its class, and the
// header can lower that, never raise it.
func TestKeyPriority(t *testing.T) {
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		c.Keys = []config.Key{{Name: "batch", SHA256: config.KeyHash("sk-batch"), Priority: config.PriorityBackground}}
	})
	s.do("/v1/chat/completions", chatBody, map[string]string{"Authorization": "Bearer sk-batch", "X-Sluice-Priority": "critical"})
	if logs := s.logText(); !strings.Contains(logs, "priority=background") {
		t.Errorf("a background key asking for critical was not served as background:\n%s", logs)
	}
}
