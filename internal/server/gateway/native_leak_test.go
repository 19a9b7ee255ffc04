package gateway_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/wire/vendors"
)

// The real signers' credentials stay out of everything Sluice shows, even
// from a vendor that echoes them: a Gemini API that quotes the key it was
// sent in its error, whole and in a stream's error chunk, and a Bedrock
// endpoint that quotes its Authorization header. The client's bodies and
// headers, the log and /metrics hold neither the Gemini key nor the AWS
// secret (which never leaves the process: SigV4 sends a signature).
func TestNativeRealSignersLeakNoCredential(t *testing.T) {
	if _, ok := vendors.Lookup(config.KindGemini); !ok {
		t.Skip("this build has no gemini codec")
	}
	if _, ok := vendors.Lookup(config.KindBedrock); !ok {
		t.Skip("this build has no bedrock codec")
	}
	t.Setenv(geminiKeyEnv, geminiKey)
	fakeAWSCredentials(t)

	var heard []string // the credentials the echoing vendor received
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.Contains(r.URL.Path, ":streamGenerateContent"):
			heard = append(heard, r.Header.Get("X-Goog-Api-Key"))
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write([]byte(`data: {"error":{"code":500,"message":"internal error for key ` + r.Header.Get("X-Goog-Api-Key") + `","status":"INTERNAL"}}` + "\r\n\r\n"))
		case strings.Contains(r.URL.Path, ":generateContent"):
			heard = append(heard, r.Header.Get("X-Goog-Api-Key"))
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":{"code":400,"message":"API key ` + r.Header.Get("X-Goog-Api-Key") + ` not valid","status":"INVALID_ARGUMENT"}}`))
		default: // Bedrock
			heard = append(heard, r.Header.Get("Authorization"))
			w.Header().Set("X-Amzn-ErrorType", "UnrecognizedClientException")
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"message":"The security token included in the request is invalid: ` + r.Header.Get("Authorization") + `"}`))
		}
	}))
	t.Cleanup(echo.Close)

	s := newStack(t, mock.Config{}, func(c *config.Config) {
		c.Providers = append(c.Providers,
			config.Provider{Name: "gem", Kind: config.KindGemini, BaseURL: echo.URL + "/v1beta", APIKeyEnv: geminiKeyEnv, Timeout: config.Duration(10 * time.Second)},
			config.Provider{Name: "rock", Kind: config.KindBedrock, Region: "us-east-1", BaseURL: echo.URL, Timeout: config.Duration(10 * time.Second)})
		c.Models[0].Targets = []config.Target{{Provider: "gem", Model: "gemini-2.5-flash"}}
		c.Models[2].Targets = []config.Target{{Provider: "rock", Model: "anthropic.claude-sonnet-4:0"}}
	})
	var seen []string
	ant := map[string]string{"Anthropic-Version": "2023-06-01"}
	for _, call := range []struct {
		path, body string
		hdr        map[string]string
	}{
		{"/v1/chat/completions", plainChat, nil},
		{"/v1/chat/completions", `{"model":"mock-gpt","stream":true,"messages":[{"role":"user","content":"hi"}]}`, nil},
		{"/v1/messages", messagesBody, ant},
		{"/v1/messages", `{"model":"mock-claude","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, ant},
	} {
		status, hdr, body := s.do(call.path, call.body, call.hdr)
		if status == http.StatusOK && !strings.Contains(string(body), "error") {
			t.Errorf("%s: the echoing vendor only fails, yet the client got %d %s", call.path, status, body)
		}
		seen = append(seen, string(body))
		if strings.Contains(string(body), geminiKey) || strings.Contains(string(body), awsSecret) {
			t.Errorf("%s %s: a credential in the answer: %s", call.path, call.body, body)
		}
		for k, vv := range hdr {
			seen = append(seen, k+": "+strings.Join(vv, ","))
		}
	}
	if len(heard) == 0 || !strings.Contains(strings.Join(heard, " "), geminiKey) || !strings.Contains(strings.Join(heard, " "), "AWS4-HMAC-SHA256") {
		t.Fatalf("the vendor did not hear both signers' credentials: %q", heard)
	}
	rec := httptest.NewRecorder()
	s.gw.AdminHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	seen = append(seen, rec.Body.String(), s.logText())
	for _, text := range seen {
		for _, secret := range []string{geminiKey, awsSecret} {
			if strings.Contains(text, secret) {
				t.Fatalf("a credential leaked into:\n%s", text)
			}
		}
	}
}

// fakeAWSCredentials gives the real AWS signer a key pair from the
// environment, and nothing else of the machine's: no profile, shared
// files or instance metadata.
func fakeAWSCredentials(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", awsSecret)
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", dir+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", dir+"/none")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}
