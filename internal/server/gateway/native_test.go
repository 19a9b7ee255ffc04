package gateway_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
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

// Native providers are tested with the toy API of package nativetest
// standing in for Gemini's and Bedrock's (registered under their kinds
// for the test), served by the mock through its native handler, and a
// fake signer: the real codecs and signers have their own tests.

// plainChat is a chat request the toy API can carry.
const plainChat = `{"model":"mock-gpt","messages":[{"role":"user","content":"hi"}],"temperature":0.25}`

const (
	geminiKeyEnv = "SLUICE_TEST_GEMINI_KEY"
	geminiKey    = "gem-key-0123456789-do-not-print"
	awsSecret    = "aws-secret-ABCDEFGHIJKLMNOP-do-not-print"
)

// toySigner signs as the fake vendor expects: a gemini provider's key in
// X-Toy-Key, a bedrock provider's with an HMAC-like digest of its secret
// (never the secret).
type toySigner struct{ key, secret string }

func (s toySigner) Sign(req *http.Request, body []byte) error {
	if s.key != "" {
		req.Header.Set("X-Toy-Key", s.key)
	}
	if s.secret != "" {
		sum := sha256.Sum256(append([]byte(s.secret), body...))
		req.Header.Set("X-Toy-Signature", hex.EncodeToString(sum[:]))
	}
	return nil
}

func toySigners(ctx context.Context, pc *config.Provider) (native.Signer, error) {
	if pc.Kind == config.KindBedrock {
		s := os.Getenv("AWS_SECRET_ACCESS_KEY")
		if s == "" {
			return nil, errors.New("no AWS credentials found in the chain")
		}
		return toySigner{secret: s}, nil
	}
	return toySigner{key: pc.APIKey()}, nil
}

// nativeStack registers the toy API as kinds gemini and bedrock, and
// starts a stack with a gemini provider "gem" (before mutate runs) on
// the mock.
func nativeStack(t *testing.T, mc mock.Config, mutate func(*config.Config)) *stack {
	t.Helper()
	t.Cleanup(vendors.Register(nativetest.Kind(config.KindGemini)))
	t.Cleanup(vendors.Register(nativetest.Kind(config.KindBedrock)))
	t.Setenv(geminiKeyEnv, geminiKey)
	return newStack(t, mc, func(c *config.Config) {
		root := strings.TrimSuffix(c.Providers[0].BaseURL, "/v1")
		c.Providers = append(c.Providers, config.Provider{Name: "gem", Kind: config.KindGemini, BaseURL: root, APIKeyEnv: geminiKeyEnv,
			Timeout:        config.Duration(10 * time.Second),
			ForwardHeaders: []string{"X-Mock-Output-Tokens", "X-Mock-Fail", "X-Mock-Retry-After"}})
		if mutate != nil {
			mutate(c)
		}
	}, gateway.WithSigner(toySigners))
}

// onlyGem points mock-gpt and mock-claude at the gemini provider alone.
func onlyGem(c *config.Config) { onlyGemModel(c, "toy-1") }

func onlyGemModel(c *config.Config, model string) {
	c.Models[0].Targets = []config.Target{{Provider: "gem", Model: model}}
	c.Models[2].Targets = []config.Target{{Provider: "gem", Model: model}}
}

// checkVendorCall checks the mock's last call was the toy API's, signed,
// with nothing of Anthropic's API or the client's credentials.
func checkVendorCall(t *testing.T, s *stack, path string) {
	t.Helper()
	last := s.mock.LastRequest()
	if last.Path != path {
		t.Errorf("the vendor was called at %q, want %q", last.Path, path)
	}
	if got := last.Header.Get("X-Toy-Key"); got != geminiKey {
		t.Errorf("the vendor call was not signed: X-Toy-Key %q", got)
	}
	for _, k := range []string{"Authorization", "X-Api-Key", "Anthropic-Version", "Anthropic-Beta"} {
		if v := last.Header.Get(k); v != "" {
			t.Errorf("the vendor heard %s: %q", k, v)
		}
	}
}

func TestNativeProviderServesBothAPIs(t *testing.T) {
	s := nativeStack(t, mock.Config{}, onlyGem)
	three := map[string]string{"X-Mock-Output-Tokens": "3", "Authorization": "Bearer client-token-xyz", "Anthropic-Beta": "tools-2024"}

	status, hdr, body := s.do("/v1/chat/completions", plainChat, three)
	var chat struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
		Usage struct {
			Prompt     int `json:"prompt_tokens"`
			Completion int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if status != 200 || json.Unmarshal(body, &chat) != nil || len(chat.Choices) != 1 || len(strings.Fields(chat.Choices[0].Message.Content)) != 3 ||
		chat.Usage.Completion != 3 || chat.Usage.Prompt <= 0 {
		t.Fatalf("OpenAI client: status %d: %s", status, body)
	}
	if hdr.Get("X-Sluice-Dropped") != "" {
		t.Errorf("nothing was dropped, yet X-Sluice-Dropped: %q", hdr.Get("X-Sluice-Dropped"))
	}
	checkVendorCall(t, s, "/toy/toy-1:say")

	status, _, body = s.do("/v1/chat/completions", `{"model":"mock-gpt","stream":true,"messages":[{"role":"user","content":"hi"}]}`, three)
	if status != 200 || !strings.Contains(string(body), `"finish_reason":"stop"`) || !strings.HasSuffix(strings.TrimSpace(string(body)), "data: [DONE]") {
		t.Fatalf("OpenAI client, streamed: status %d:\n%s", status, body)
	}
	checkVendorCall(t, s, "/toy/toy-1:stream")

	ant := map[string]string{"X-Mock-Output-Tokens": "3", "Anthropic-Version": "2023-06-01", "X-Api-Key": "client-key-xyz"}
	status, _, body = s.do("/v1/messages", messagesBody, ant)
	var msg struct {
		Content []struct{ Text string } `json:"content"`
		Usage   struct {
			Out int `json:"output_tokens"`
		} `json:"usage"`
		StopReason string `json:"stop_reason"`
	}
	if status != 200 || json.Unmarshal(body, &msg) != nil || len(msg.Content) != 1 || len(strings.Fields(msg.Content[0].Text)) != 3 ||
		msg.Usage.Out != 3 || msg.StopReason != "end_turn" {
		t.Fatalf("Anthropic client: status %d: %s", status, body)
	}
	checkVendorCall(t, s, "/toy/toy-1:say")

	status, _, body = s.do("/v1/messages", `{"model":"mock-claude","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, ant)
	if status != 200 || !strings.Contains(string(body), "event: message_stop") || !strings.Contains(string(body), `"output_tokens":3`) {
		t.Fatalf("Anthropic client, streamed: status %d:\n%s", status, body)
	}
	checkVendorCall(t, s, "/toy/toy-1:stream")
	if !strings.Contains(s.logText(), "provider=gem") {
		t.Errorf("the log does not name the native provider:\n%s", s.logText())
	}
}

// What the codec drops is named to the client and in the log; what it
// cannot carry is refused before any call, as the client's 400.
func TestNativeDroppedAndRefused(t *testing.T) {
	s := nativeStack(t, mock.Config{}, onlyGem)
	ant := map[string]string{"Anthropic-Version": "2023-06-01"}
	status, hdr, body := s.do("/v1/messages", `{"model":"mock-claude","max_tokens":5,"metadata":{"user_id":"u-1"},"messages":[{"role":"user","content":"hi"}]}`, ant)
	if status != 200 || hdr.Get("X-Sluice-Dropped") != "metadata.user_id" {
		t.Fatalf("status %d, X-Sluice-Dropped %q: %s", status, hdr.Get("X-Sluice-Dropped"), body)
	}
	if !strings.Contains(s.logText(), "dropped=metadata.user_id") {
		t.Errorf("the log does not name what was dropped:\n%s", s.logText())
	}
	calls := s.mock.Stats().Total
	status, _, body = s.do("/v1/messages", `{"model":"mock-claude","max_tokens":5,"top_k":3,"messages":[{"role":"user","content":"hi"}]}`, ant)
	if status != 400 || !strings.Contains(string(body), "invalid_request_error") || !strings.Contains(string(body), "top_k") {
		t.Fatalf("status %d: %s; want a 400 naming top_k", status, body)
	}
	if s.mock.Stats().Total != calls {
		t.Error("a request the codec refuses reached the vendor")
	}
	// count_tokens is the gateway's own count, never the vendor's.
	status, hdr, body = s.do("/v1/messages/count_tokens", messagesBody, ant)
	if status != 200 || hdr.Get("X-Sluice-Token-Count") == "provider" || s.mock.Stats().Total != calls {
		t.Fatalf("count_tokens: status %d, count %q, vendor calls %d→%d: %s", status, hdr.Get("X-Sluice-Token-Count"), calls, s.mock.Stats().Total, body)
	}
	status, _, body = s.get("/v1/models/mock-claude", nil)
	if status != 200 || !strings.Contains(string(body), `"native":["gemini/gem"]`) || !strings.Contains(string(body), `"translated":["/v1/chat/completions","/v1/responses","/v1/messages"]`) {
		t.Errorf("/v1/models/mock-claude: %d %s", status, body)
	}
}

// A request one native target cannot carry goes to the model's other
// targets instead.
func TestNativeUntranslatableSkipsTheTarget(t *testing.T) {
	s := nativeStack(t, mock.Config{}, func(c *config.Config) {
		c.Models[2].Targets = []config.Target{{Provider: "gem", Model: "toy-1"}, {Provider: "mock-anthropic", Model: "mock-claude-sonnet"}}
	})
	status, _, body := s.do("/v1/messages", `{"model":"mock-claude","max_tokens":5,"top_k":3,"messages":[{"role":"user","content":"hi"}]}`, map[string]string{"Anthropic-Version": "2023-06-01"})
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	if last := s.mock.LastRequest(); last.Path != "/v1/messages" {
		t.Errorf("served at %q; want the Anthropic target", last.Path)
	}
}

// An OpenAI target that fails is failed over to a native one.
func TestNativeFailoverFromOpenAI(t *testing.T) {
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `{"error":{"message":"down","type":"server_error"}}`)
	}))
	t.Cleanup(down.Close)
	s := nativeStack(t, mock.Config{}, func(c *config.Config) {
		c.Providers[0].BaseURL = down.URL + "/v1"
		c.Models[0].Targets = []config.Target{{Provider: "mock-openai", Model: "mock-gpt-4o"}, {Provider: "gem", Model: "toy-1"}}
	})
	status, _, body := s.do("/v1/chat/completions", plainChat, map[string]string{"X-Mock-Output-Tokens": "2"})
	if status != 200 || !strings.Contains(string(body), `"completion_tokens":2`) {
		t.Fatalf("status %d: %s", status, body)
	}
	checkVendorCall(t, s, "/toy/toy-1:say")
}

// A native provider's 429 with a retry delay is honoured as any
// provider's: answered at once with the delay, and the provider paused.
func TestNativeRetryAfterIsHonoured(t *testing.T) {
	s := nativeStack(t, mock.Config{}, onlyGem)
	start := time.Now()
	status, hdr, body := s.do("/v1/chat/completions", plainChat, map[string]string{"X-Mock-Fail": "429", "X-Mock-Retry-After": "30s"})
	if took := time.Since(start); status != 429 || took > time.Second || hdr.Get("Retry-After") != "30" {
		t.Fatalf("status %d after %v, Retry-After %q: %s; want the 429 at once with its Retry-After", status, took, hdr.Get("Retry-After"), body)
	}
	if !strings.Contains(string(body), "injected by sluice mock") {
		t.Errorf("the vendor's message is lost: %s", body)
	}
	status, hdr, body = s.do("/v1/chat/completions", plainChat, nil)
	if ra, _ := strconv.Atoi(hdr.Get("Retry-After")); status != 503 || ra < 28 || ra > 30 || s.mock.Stats().Total != 1 {
		t.Fatalf("during the pause: status %d, Retry-After %q, vendor calls %d: %s; want a 503 and no call", status, hdr.Get("Retry-After"), s.mock.Stats().Total, body)
	}
}

// A provider whose signer cannot be built fails the load, naming the
// provider and what to set.
func TestNativeSignerFailureFailsTheLoad(t *testing.T) {
	t.Cleanup(vendors.Register(nativetest.Kind(config.KindBedrock)))
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	cfg := config.Default("http://127.0.0.1:1")
	cfg.Providers = append(cfg.Providers, config.Provider{Name: "rock", Kind: config.KindBedrock, Region: "us-east-1",
		BaseURL: "http://127.0.0.1:1", Timeout: config.Duration(time.Second)})
	cfg.Models[2].Targets = []config.Target{{Provider: "rock", Model: "anthropic.claude-x"}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	o := gateway.Options{}
	gateway.WithSigner(toySigners)(&o)
	_, err := gateway.New(cfg, o)
	if err == nil || !strings.Contains(err.Error(), "providers[2] (rock)") || !strings.Contains(err.Error(), "AWS_ACCESS_KEY_ID") {
		t.Fatalf("error %v; want one naming providers[2] (rock) and what to set", err)
	}
	// Without a codec for the kind, the load fails too.
	undo := vendors.Register(nativetest.Kind("unused"))
	undo()
	t.Cleanup(vendors.Register(native.Kind{Name: config.KindBedrock}))
	if _, err := gateway.New(cfg, o); err == nil || !strings.Contains(err.Error(), "kind bedrock is not built into this Sluice") {
		t.Fatalf("error %v", err)
	}
}

// No credential of a native provider (a Gemini key, an AWS secret)
// appears in the log, the metrics, or an answer, whatever happens.
func TestNativeCredentialsStayOut(t *testing.T) {
	t.Setenv("AWS_SECRET_ACCESS_KEY", awsSecret)
	s := nativeStack(t, mock.Config{}, func(c *config.Config) {
		root := strings.TrimSuffix(c.Providers[0].BaseURL, "/v1")
		c.Providers = append(c.Providers, config.Provider{Name: "rock", Kind: config.KindBedrock, Region: "us-east-1", AWSProfile: "prod",
			BaseURL: root, Timeout: config.Duration(10 * time.Second), ForwardHeaders: []string{"X-Mock-Fail"}})
		c.Models[0].Targets = []config.Target{{Provider: "gem", Model: "toy-1"}}
		c.Models[2].Targets = []config.Target{{Provider: "rock", Model: "toy-2"}}
	})
	var seen []string
	for _, fail := range []string{"", "429", "500", "401", "truncate:1"} {
		h := map[string]string{"X-Mock-Fail": fail, "Anthropic-Version": "2023-06-01"}
		for _, call := range [][2]string{{"/v1/chat/completions", plainChat}, {"/v1/messages", messagesBody},
			{"/v1/messages", `{"model":"mock-claude","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"}]}`}} {
			_, hdr, body := s.do(call[0], call[1], h)
			seen = append(seen, string(body))
			for k, vv := range hdr {
				seen = append(seen, k+": "+strings.Join(vv, ","))
			}
		}
	}
	if last := s.mock.LastRequest(); last.Header.Get("X-Toy-Signature") == "" {
		t.Errorf("the bedrock call was not signed: %v", last.Header)
	}
	rec := httptest.NewRecorder()
	s.gw.AdminHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if !strings.Contains(rec.Body.String(), `provider="rock"`) {
		t.Errorf("the metrics do not name the native provider")
	}
	seen = append(seen, rec.Body.String(), s.logText())
	for _, text := range seen {
		for _, secret := range []string{geminiKey, awsSecret} {
			if strings.Contains(text, secret) {
				t.Fatalf("a credential leaked into:\n%s", text)
			}
		}
	}
}

// The real Gemini codec and API-key signer, against the mock's Gemini
// API: an OpenAI and an Anthropic client, whole and streamed, reach
// generateContent with the key in x-goog-api-key and nothing of the
// hub's credentials.
func TestGeminiThroughTheMock(t *testing.T) {
	if _, ok := vendors.Lookup(config.KindGemini); !ok {
		t.Skip("this build has no gemini codec")
	}
	t.Setenv(geminiKeyEnv, geminiKey)
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		root := strings.TrimSuffix(c.Providers[0].BaseURL, "/v1")
		c.Providers = append(c.Providers, config.Provider{Name: "gem", Kind: config.KindGemini, BaseURL: root + "/v1beta", APIKeyEnv: geminiKeyEnv,
			Timeout: config.Duration(10 * time.Second), ForwardHeaders: []string{"X-Mock-Output-Tokens", "X-Mock-Fail", "X-Mock-Retry-After"}})
		onlyGemModel(c, "gemini-2.5-flash")
	})
	three := map[string]string{"X-Mock-Output-Tokens": "3", "Authorization": "Bearer client-token-xyz"}
	check := func(path string) {
		t.Helper()
		last := s.mock.LastRequest()
		if last.Path != path || last.Header.Get("X-Goog-Api-Key") != geminiKey || last.Header.Get("Authorization") != "" || last.Header.Get("X-Api-Key") != "" {
			t.Errorf("the vendor call: %s, key %q, Authorization %q, X-Api-Key %q", last.Path, last.Header.Get("X-Goog-Api-Key"), last.Header.Get("Authorization"), last.Header.Get("X-Api-Key"))
		}
	}
	status, _, body := s.do("/v1/chat/completions", plainChat, three)
	if status != 200 || !strings.Contains(string(body), `"completion_tokens":3`) {
		t.Fatalf("OpenAI client: %d %s", status, body)
	}
	check("/v1beta/models/gemini-2.5-flash:generateContent")
	status, _, body = s.do("/v1/chat/completions", `{"model":"mock-gpt","stream":true,"messages":[{"role":"user","content":"hi"}]}`, three)
	if status != 200 || !strings.HasSuffix(strings.TrimSpace(string(body)), "data: [DONE]") {
		t.Fatalf("OpenAI client, streamed: %d %s", status, body)
	}
	check("/v1beta/models/gemini-2.5-flash:streamGenerateContent")
	ant := map[string]string{"X-Mock-Output-Tokens": "3", "Anthropic-Version": "2023-06-01", "X-Api-Key": "client-key"}
	status, _, body = s.do("/v1/messages", messagesBody, ant)
	if status != 200 || !strings.Contains(string(body), `"output_tokens":3`) {
		t.Fatalf("Anthropic client: %d %s", status, body)
	}
	check("/v1beta/models/gemini-2.5-flash:generateContent")
	status, _, body = s.do("/v1/messages", `{"model":"mock-claude","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, ant)
	if status != 200 || !strings.Contains(string(body), "event: message_stop") {
		t.Fatalf("Anthropic client, streamed: %d %s", status, body)
	}
	check("/v1beta/models/gemini-2.5-flash:streamGenerateContent")
	// Gemini's 429 (RESOURCE_EXHAUSTED with a RetryInfo) is the
	// gateway's 429 with its Retry-After.
	status, hdr, body := s.do("/v1/chat/completions", plainChat, map[string]string{"X-Mock-Fail": "429", "X-Mock-Retry-After": "7s"})
	if status != 429 || hdr.Get("Retry-After") != "7" {
		t.Fatalf("status %d, Retry-After %q: %s", status, hdr.Get("Retry-After"), body)
	}
	if strings.Contains(s.logText(), geminiKey) {
		t.Error("the Gemini key is in the log")
	}
}

// The real Bedrock codec and SigV4 signer (static credentials from the
// environment), against the mock's Converse API: both clients, whole
// and streamed, and the AWS secret nowhere in what comes back or the log.
func TestBedrockThroughTheMock(t *testing.T) {
	if _, ok := vendors.Lookup(config.KindBedrock); !ok {
		t.Skip("this build has no bedrock codec")
	}
	fakeAWSCredentials(t)
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		root := strings.TrimSuffix(c.Providers[0].BaseURL, "/v1")
		c.Providers = append(c.Providers, config.Provider{Name: "rock", Kind: config.KindBedrock, Region: "us-east-1", BaseURL: root,
			Timeout: config.Duration(10 * time.Second), ForwardHeaders: []string{"X-Mock-Output-Tokens"}})
		c.Models[0].Targets = []config.Target{{Provider: "rock", Model: "anthropic.claude-sonnet-4:0"}}
		c.Models[2].Targets = []config.Target{{Provider: "rock", Model: "anthropic.claude-sonnet-4:0"}}
	})
	var seen []string
	check := func(suffix string) {
		t.Helper()
		last := s.mock.LastRequest()
		if !strings.HasPrefix(last.Path, "/model/anthropic.claude-sonnet-4") || !strings.HasSuffix(last.Path, suffix) ||
			!strings.HasPrefix(last.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") || last.Header.Get("X-Api-Key") != "" {
			t.Errorf("the vendor call: %s, Authorization %q, X-Api-Key %q", last.Path, last.Header.Get("Authorization"), last.Header.Get("X-Api-Key"))
		}
	}
	three := map[string]string{"X-Mock-Output-Tokens": "3", "Authorization": "Bearer client-token-xyz"}
	ant := map[string]string{"X-Mock-Output-Tokens": "3", "Anthropic-Version": "2023-06-01", "X-Api-Key": "client-key"}
	for _, c := range []struct {
		path, body string
		hdr        map[string]string
		want       string
		suffix     string
	}{
		{"/v1/chat/completions", plainChat, three, `"completion_tokens":3`, "/converse"},
		{"/v1/chat/completions", `{"model":"mock-gpt","stream":true,"messages":[{"role":"user","content":"hi"}]}`, three, "data: [DONE]", "/converse-stream"},
		{"/v1/messages", messagesBody, ant, `"output_tokens":3`, "/converse"},
		{"/v1/messages", `{"model":"mock-claude","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, ant, "event: message_stop", "/converse-stream"},
	} {
		status, hdr, body := s.do(c.path, c.body, c.hdr)
		if status != 200 || !strings.Contains(string(body), c.want) {
			t.Fatalf("%s: %d %s", c.path, status, body)
		}
		check(c.suffix)
		seen = append(seen, string(body))
		for k, vv := range hdr {
			seen = append(seen, k+": "+strings.Join(vv, ","))
		}
	}
	for _, text := range append(seen, s.logText()) {
		if strings.Contains(text, awsSecret) {
			t.Fatalf("the AWS secret leaked into:\n%s", text)
		}
	}
}

// A model's on_unsupported reaches its native targets' codecs when their
// provider sets none of its own: refuse turns the shape-neutral
// metadata.user_id, dropped by default, into a 400 naming it; the
// provider's own setting, where written, stands over the model's.
func TestNativeModelOnUnsupported(t *testing.T) {
	ant := map[string]string{"Anthropic-Version": "2023-06-01"}
	body := `{"model":"mock-claude","max_tokens":5,"metadata":{"user_id":"u-1"},"messages":[{"role":"user","content":"hi"}]}`
	s := nativeStack(t, mock.Config{}, func(c *config.Config) {
		onlyGem(c)
		c.Models[2].OnUnsupported = "refuse"
	})
	status, _, got := s.do("/v1/messages", body, ant)
	if status != 400 || !strings.Contains(string(got), "metadata.user_id") {
		t.Fatalf("model refuse: status %d: %s; want a 400 naming metadata.user_id", status, got)
	}
	s = nativeStack(t, mock.Config{}, func(c *config.Config) {
		onlyGem(c)
		c.Models[2].OnUnsupported = "refuse"
		c.Providers[len(c.Providers)-1].OnUnsupported = "drop"
	})
	status, hdr, got := s.do("/v1/messages", body, ant)
	if status != 200 || hdr.Get("X-Sluice-Dropped") != "metadata.user_id" {
		t.Fatalf("provider drop over model refuse: status %d, X-Sluice-Dropped %q: %s", status, hdr.Get("X-Sluice-Dropped"), got)
	}
	// drop on the model alone drops what default refuses (top_k here).
	s = nativeStack(t, mock.Config{}, func(c *config.Config) {
		onlyGem(c)
		c.Models[2].OnUnsupported = "drop"
	})
	status, hdr, got = s.do("/v1/messages", `{"model":"mock-claude","max_tokens":5,"top_k":3,"messages":[{"role":"user","content":"hi"}]}`, ant)
	if status != 200 || hdr.Get("X-Sluice-Dropped") != "top_k" {
		t.Fatalf("model drop: status %d, X-Sluice-Dropped %q: %s", status, hdr.Get("X-Sluice-Dropped"), got)
	}
}
