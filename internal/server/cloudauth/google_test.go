package cloudauth

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

const testToken = "ya29.sluice-test-access-token"

// tokenServer is a Google OAuth2 token endpoint on 127.0.0.1 that checks
// the service account's JWT grant against pub. fail makes it answer 500.
type tokenServer struct {
	*httptest.Server
	pub      *rsa.PublicKey
	email    string
	requests atomic.Int32
	fail     atomic.Bool
	mu       sync.Mutex
	problem  string
}

func (ts *tokenServer) complain(s string) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.problem == "" {
		ts.problem = s
	}
}

func newTokenServer(t *testing.T, pub *rsa.PublicKey, email string) *tokenServer {
	ts := &tokenServer{pub: pub, email: email}
	ts.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ts.requests.Add(1)
		if ts.fail.Load() {
			w.WriteHeader(500)
			// An endpoint that echoes secrets: none of it may reach an error.
			w.Write([]byte(`{"error":"backend_error","access_token":"` + testToken + `"}`))
			return
		}
		if err := r.ParseForm(); err != nil {
			ts.complain("form: " + err.Error())
		}
		if g := r.PostForm.Get("grant_type"); g != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
			ts.complain("grant_type " + g)
		}
		if p := ts.checkJWT(r.PostForm.Get("assertion"), "http://"+r.Host+r.URL.Path); p != "" {
			ts.complain(p)
			w.WriteHeader(400)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"access_token":"` + testToken + `","token_type":"Bearer","expires_in":3600}`))
	}))
	t.Cleanup(ts.Close)
	return ts
}

// checkJWT verifies an RS256 JWT's signature and claims; "" when good.
func (ts *tokenServer) checkJWT(jwt, aud string) string {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return "assertion is not a JWT"
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return "signature not base64url"
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(ts.pub, crypto.SHA256, sum[:], sig); err != nil {
		return "bad JWT signature"
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "claims not base64url"
	}
	var c struct {
		Iss, Scope, Aud string
		Exp, Iat        int64
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return "claims not JSON"
	}
	switch {
	case c.Iss != ts.email:
		return "iss " + c.Iss
	case c.Scope != CloudPlatformScope:
		return "scope " + c.Scope
	case c.Aud != aud:
		return "aud " + c.Aud + " want " + aud
	case c.Exp <= c.Iat:
		return "exp not after iat"
	}
	return ""
}

// serviceAccount writes a service account key file whose token_uri is
// ts's, and returns its path and the private key's PEM.
func serviceAccount(t *testing.T) (*tokenServer, string, string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	email := "sluice-test@example-project.iam.gserviceaccount.com"
	ts := newTokenServer(t, &key.PublicKey, email)
	sa, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": "example-project", "private_key_id": "key-1",
		"private_key": pemKey, "client_email": email, "client_id": "1234567890",
		"token_uri": ts.URL + "/token",
	})
	path := filepath.Join(t.TempDir(), "sa.json")
	if err := os.WriteFile(path, sa, 0o600); err != nil {
		t.Fatal(err)
	}
	return ts, path, pemKey
}

// keyBody is the PEM's base64 body, whose lines must never reach an error.
func keyLines(pemKey string) []string {
	var out []string
	for _, l := range strings.Split(pemKey, "\n") {
		if len(l) > 20 && !strings.HasPrefix(l, "-----") {
			out = append(out, l)
		}
	}
	return out
}

func TestGoogleServiceAccountBearer(t *testing.T) {
	ts, path, _ := serviceAccount(t)
	s, err := Google(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 25 {
		req := httptest.NewRequest("POST", "https://us-central1-aiplatform.googleapis.com/v1/x", nil)
		req.Header.Set("X-Api-Key", "client-key")
		if err := s.Sign(req, nil); err != nil {
			t.Fatalf("sign %d: %v", i, err)
		}
		if got := req.Header.Get("Authorization"); got != "Bearer "+testToken {
			t.Fatalf("Authorization = %q", got)
		}
		if req.Header.Get("X-Api-Key") != "" {
			t.Fatal("a client's x-api-key reached the provider")
		}
	}
	ts.mu.Lock()
	problem := ts.problem
	ts.mu.Unlock()
	if problem != "" {
		t.Fatalf("token endpoint: %s", problem)
	}
	if n := ts.requests.Load(); n != 1 {
		t.Fatalf("%d token requests for 25 signs, want 1 (the token is reused)", n)
	}
}

func TestGoogleConcurrentSignsShareOneToken(t *testing.T) {
	ts, path, _ := serviceAccount(t)
	s, err := Google(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			req := httptest.NewRequest("POST", "https://example.invalid/", nil)
			errs <- s.Sign(req, nil)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := ts.requests.Load(); n < 1 || n > 16 {
		t.Fatalf("%d token requests", n)
	}
}

func TestGoogleTokenErrorKeepsSecretsOut(t *testing.T) {
	ts, path, pemKey := serviceAccount(t)
	ts.fail.Store(true)
	s, err := Google(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest("POST", "https://example.invalid/", nil)
	err = s.Sign(req, nil)
	if err == nil {
		t.Fatal("sign succeeded against a failing token endpoint")
	}
	msg := err.Error()
	if !strings.Contains(msg, "500") {
		t.Errorf("error %q does not say the endpoint's status", msg)
	}
	if strings.Contains(msg, testToken) {
		t.Errorf("error carries the token endpoint's body: %q", msg)
	}
	for _, l := range keyLines(pemKey) {
		if strings.Contains(msg, l) {
			t.Fatalf("error carries private key material: %q", msg)
		}
	}
	if req.Header.Get("Authorization") != "" {
		t.Error("a failed sign set Authorization")
	}
}

func TestGoogleBadKeyErrorKeepsKeyOut(t *testing.T) {
	_, path, pemKey := serviceAccount(t)
	data, _ := os.ReadFile(path)
	var sa map[string]string
	json.Unmarshal(data, &sa)
	// Cut the key: it no longer parses, and the error must not quote it.
	sa["private_key"] = pemKey[:len(pemKey)/2]
	data, _ = json.Marshal(sa)
	os.WriteFile(path, data, 0o600)
	s, err := Google(context.Background(), path)
	if err == nil {
		err = s.Sign(httptest.NewRequest("POST", "https://example.invalid/", nil), nil)
	}
	if err == nil {
		t.Fatal("a cut private key signed")
	}
	for _, l := range keyLines(pemKey[:len(pemKey)/2]) {
		if strings.Contains(err.Error(), l) {
			t.Fatalf("error carries private key material: %q", err)
		}
	}
}

func TestGoogleCredentialsFileType(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.json")
	os.WriteFile(path, []byte(`{"type":"something_else"}`), 0o600)
	if _, err := Google(context.Background(), path); err == nil || !strings.Contains(err.Error(), "something_else") {
		t.Fatalf("err = %v, want a refusal naming the type", err)
	}
	if _, err := Google(context.Background(), filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Fatal("a missing file was accepted")
	}
}

func TestAPIKey(t *testing.T) {
	s := APIKey("x-goog-api-key", "AIza-test-key")
	req := httptest.NewRequest("POST", "https://generativelanguage.googleapis.com/v1beta/models/m:generateContent", nil)
	req.Header.Set("Authorization", "Bearer client")
	req.Header.Set("x-api-key", "client")
	if err := s.Sign(req, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if got := req.Header.Get("X-Goog-Api-Key"); got != "AIza-test-key" {
		t.Fatalf("x-goog-api-key = %q", got)
	}
	if req.Header.Get("Authorization") != "" || req.Header.Get("X-Api-Key") != "" {
		t.Fatalf("client credentials left in place: %v", req.Header)
	}
	if err := APIKey("x-goog-api-key", "").Sign(req, nil); err == nil {
		t.Fatal("an empty key signed")
	}
}

func TestGoogleDefaultCredentialsFromEnvironment(t *testing.T) {
	ts, path, _ := serviceAccount(t)
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", path)
	s, err := Google(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest("POST", "https://example.invalid/", nil)
	if err := s.Sign(req, nil); err != nil {
		t.Fatal(err)
	}
	if req.Header.Get("Authorization") != "Bearer "+testToken || ts.requests.Load() != 1 {
		t.Fatalf("Authorization %q after %d token requests", req.Header.Get("Authorization"), ts.requests.Load())
	}
}
