package cloudauth

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-gw/sluice/internal/wire/native"
)

// sink records what a signer reports.
type sink struct {
	mu  sync.Mutex
	got []string
}

func (s *sink) Credentials(values ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range values {
		if v != "" {
			s.got = append(s.got, v)
		}
	}
}

// signReporting signs a request made in a context with a sink, and
// returns it and what the signer reported.
func signReporting(t *testing.T, s native.Signer) (*http.Request, []string) {
	t.Helper()
	var k sink
	body := []byte(`{"messages":[]}`)
	req := httptest.NewRequest(http.MethodPost, "https://vendor.example/model/m/converse", bytes.NewReader(body))
	req = req.WithContext(native.WithCredentialSink(context.Background(), &k))
	if err := s.Sign(req, body); err != nil {
		t.Fatal(err)
	}
	return req, k.got
}

// Every signer reports, as it signs, each credential it set on the
// request or signed it with, so the gateway can scrub an echo of it:
// the API key; the OAuth2 access token; SigV4's access key id, the
// signature it put in the Authorization header, the session token and
// the secret behind them. A request without a sink is signed the same.
func TestSignersReportTheirCredentials(t *testing.T) {
	_, got := signReporting(t, APIKey("x-goog-api-key", "AIza-report-test-key"))
	if !slices.Equal(got, []string{"AIza-report-test-key"}) {
		t.Errorf("the API key signer reported %q", got)
	}

	_, path, _ := serviceAccount(t)
	g, err := Google(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if _, got := signReporting(t, g); !slices.Equal(got, []string{testToken}) {
		t.Errorf("the Google signer reported %q, want the access token", got)
	}

	isolate(t)
	t.Setenv("AWS_ACCESS_KEY_ID", testAWSKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", testAWSSecret)
	t.Setenv("AWS_SESSION_TOKEN", testSessionToken)
	a, err := AWS(context.Background(), "us-east-1", "")
	if err != nil {
		t.Fatal(err)
	}
	req, got := signReporting(t, a)
	_, sig, _ := strings.Cut(req.Header.Get("Authorization"), "Signature=")
	if len(sig) != 64 {
		t.Fatalf("Authorization %q has no signature", req.Header.Get("Authorization"))
	}
	for _, want := range []string{testAWSKeyID, testAWSSecret, testSessionToken, sig} {
		if !slices.Contains(got, want) {
			t.Errorf("the AWS signer did not report %q; it reported %q", want, got)
		}
	}
	// Without a sink, nothing is reported and the request is signed.
	plain := httptest.NewRequest(http.MethodPost, "https://vendor.example/model/m/converse", nil)
	if err := a.Sign(plain, nil); err != nil || plain.Header.Get("Authorization") == "" {
		t.Fatalf("signing without a sink: %v", err)
	}
}

func TestSignatureOf(t *testing.T) {
	for in, want := range map[string]string{
		"AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/bedrock/aws4_request, SignedHeaders=host;x-amz-date, Signature=abc123": "abc123",
		"AWS4-HMAC-SHA256 Signature=abc123, Credential=AKID/x":                                                                      "abc123",
		"Bearer token": "",
		"":             "",
	} {
		if got := signatureOf(in); got != want {
			t.Errorf("signatureOf(%q) = %q, want %q", in, got, want)
		}
	}
}
