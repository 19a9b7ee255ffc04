package gateway_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
)

// fakeAzure is Azure OpenAI's front door before the mock: it takes only
// {endpoint}/openai/deployments/{deployment}/{op}?api-version=V with the
// key in api-key (and no Authorization), answering anything else with
// Azure's 404 or 401, then serves the call from the mock's OpenAI API.
type fakeAzure struct {
	mu   sync.Mutex
	seen []string // "path?query api-key"
}

func (f *fakeAzure) handler(t *testing.T, mockURL, deployment, version, key string) http.Handler {
	target, err := url.Parse(mockURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	prefix := "/openai/deployments/" + deployment + "/"
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.seen = append(f.seen, r.URL.Path+"?"+r.URL.RawQuery+" "+r.Header.Get("Api-Key"))
		f.mu.Unlock()
		switch {
		case r.Header.Get("Api-Key") != key || r.Header.Get("Authorization") != "":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":{"code":"401","message":"Access denied due to invalid subscription key."}}`))
		case !strings.HasPrefix(r.URL.Path, prefix) || r.URL.Query().Get("api-version") != version || len(r.URL.Query()) != 1:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error":{"code":"DeploymentNotFound","message":"The API deployment for this resource does not exist."}}`))
		default:
			r.URL.Path, r.URL.RawQuery = "/v1/"+strings.TrimPrefix(r.URL.Path, prefix), ""
			proxy.ServeHTTP(w, r)
		}
	})
}

func (f *fakeAzure) calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.seen...)
}

// An azure provider is called at its deployment's URL with api-version
// and api-key, and otherwise speaks OpenAI's API: chat whole and
// streamed, embeddings, and an Anthropic client through translation all
// reach the deployment.
func TestAzureProvider(t *testing.T) {
	t.Setenv("SLUICE_TEST_AZURE_KEY", "azure-secret")
	az := &fakeAzure{}
	var srv *httptest.Server
	s := newStack(t, mock.Config{OutputTokens: mock.TokenRange{Min: 4, Max: 4}}, func(c *config.Config) {
		mockURL := strings.TrimSuffix(c.Providers[0].BaseURL, "/v1")
		srv = httptest.NewServer(az.handler(t, mockURL, "gpt-4o-prod", config.DefaultAzureAPIVersion, "azure-secret"))
		t.Cleanup(srv.Close)
		c.Providers = append(c.Providers, config.Provider{Name: "azure", Kind: config.KindAzure, BaseURL: srv.URL,
			APIKeyEnv: "SLUICE_TEST_AZURE_KEY", Timeout: config.Duration(config.DefaultProviderTimeout), APIVersion: config.DefaultAzureAPIVersion})
		c.Models[0].Targets = []config.Target{{Provider: "azure", Model: "gpt-4o-prod"}} // mock-gpt
		c.Models[1].Targets = []config.Target{{Provider: "azure", Model: "gpt-4o-prod"}} // mock-embed
		c.Models[2].Targets = []config.Target{{Provider: "azure", Model: "gpt-4o-prod"}} // mock-claude
	})
	want := "/openai/deployments/gpt-4o-prod/%s?api-version=" + config.DefaultAzureAPIVersion + " azure-secret"
	check := func(name, op string) {
		t.Helper()
		c := az.calls()
		if len(c) == 0 || c[len(c)-1] != strings.Replace(want, "%s", op, 1) {
			t.Errorf("%s: Azure saw %q; want %q", name, c, strings.Replace(want, "%s", op, 1))
		}
	}

	status, _, body := s.do("/v1/chat/completions", `{"model":"mock-gpt","messages":[{"role":"user","content":"hi"}]}`, nil)
	if status != 200 || decode(t, body)["object"] != "chat.completion" {
		t.Fatalf("chat: %d %s", status, body)
	}
	check("chat", "chat/completions")
	if last := s.mock.LastRequest(); last.Authorization != "" || last.Model != "gpt-4o-prod" {
		t.Errorf("the deployment got Authorization %q, model %q", last.Authorization, last.Model)
	}

	resp, err := s.post(t.Context(), "/v1/chat/completions", `{"model":"mock-gpt","stream":true,"messages":[{"role":"user","content":"hi"}]}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := false
	sseEvents(resp.Body, func(d string) bool { done = done || d == "[DONE]"; return true })
	resp.Body.Close()
	if resp.StatusCode != 200 || !done {
		t.Fatalf("stream: %d, [DONE] %v", resp.StatusCode, done)
	}
	check("stream", "chat/completions")

	status, _, body = s.do("/v1/embeddings", `{"model":"mock-embed","input":"hi"}`, nil)
	if status != 200 {
		t.Fatalf("embeddings: %d %s", status, body)
	}
	check("embeddings", "embeddings")

	status, _, body = s.do("/v1/messages", `{"model":"mock-claude","max_tokens":20,"messages":[{"role":"user","content":"hi"}]}`,
		map[string]string{"anthropic-version": "2023-06-01"})
	if status != 200 || decode(t, body)["type"] != "message" {
		t.Fatalf("an Anthropic client through translation: %d %s", status, body)
	}
	check("translated", "chat/completions")
}

// A deployment that does not exist is the provider's 404, passed on in
// OpenAI's shape; the key never appears in what the client gets.
func TestAzureProviderWrongDeployment(t *testing.T) {
	t.Setenv("SLUICE_TEST_AZURE_KEY", "azure-secret")
	az := &fakeAzure{}
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		srv := httptest.NewServer(az.handler(t, strings.TrimSuffix(c.Providers[0].BaseURL, "/v1"), "gpt-4o-prod", "2024-10-21", "azure-secret"))
		t.Cleanup(srv.Close)
		c.Providers = append(c.Providers, config.Provider{Name: "azure", Kind: config.KindAzure, BaseURL: srv.URL,
			APIKeyEnv: "SLUICE_TEST_AZURE_KEY", Timeout: config.Duration(config.DefaultProviderTimeout), APIVersion: "2024-10-21"})
		c.Models[0].Targets = []config.Target{{Provider: "azure", Model: "no-such-deployment"}}
	})
	status, _, body := s.do("/v1/chat/completions", `{"model":"mock-gpt","messages":[{"role":"user","content":"hi"}]}`, nil)
	if status != 404 || !strings.Contains(string(body), "DeploymentNotFound") || strings.Contains(string(body), "azure-secret") {
		t.Fatalf("%d %s; want Azure's 404 passed on", status, body)
	}
	if c := az.calls(); len(c) != 1 || !strings.HasPrefix(c[0], "/openai/deployments/no-such-deployment/chat/completions?api-version=2024-10-21 ") {
		t.Fatalf("Azure saw %q", c)
	}
}
