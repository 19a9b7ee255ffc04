package cloudauth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

const (
	testAWSKeyID     = "AKIDSLUICETEST000001"
	testAWSSecret    = "sEcReT/sluice+test/0123456789abcdefABCDEF"
	testSessionToken = "sessiontoken-sluice-test-abcdef"
)

// isolate keeps the machine's own AWS config, credentials and metadata
// out of the test: every source the default chain reads is pointed at
// empty temp files or turned off.
func isolate(t *testing.T) (configFile, credsFile string) {
	t.Helper()
	dir := t.TempDir()
	configFile, credsFile = filepath.Join(dir, "config"), filepath.Join(dir, "credentials")
	for _, f := range []string{configFile, credsFile} {
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", dir)
	t.Setenv("AWS_CONFIG_FILE", configFile)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", credsFile)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
		"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_ENDPOINT_URL"} {
		t.Setenv(k, "")
	}
	return configFile, credsFile
}

var sigV4 = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=([A-Z0-9]+)/(\d{8})/([a-z0-9-]+)/([a-z]+)/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$`)

// verify recomputes the signature of a request as received, over the
// headers its Authorization says were signed, with the same credentials
// and time, and compares.
func verify(t *testing.T, r *http.Request, body []byte, creds aws.Credentials) string {
	t.Helper()
	auth := r.Header.Get("Authorization")
	m := sigV4.FindStringSubmatch(auth)
	if m == nil {
		t.Fatalf("Authorization %q is not SigV4", auth)
	}
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		t.Fatalf("X-Amz-Date %q: %v", r.Header.Get("X-Amz-Date"), err)
	}
	again, _ := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
	again.ContentLength = r.ContentLength
	for _, h := range strings.Split(m[5], ";") {
		if h != "host" && h != "content-length" {
			again.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	again.Header.Del("X-Amz-Date")
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, again, hex.EncodeToString(sum[:]), m[4], m[3], at); err != nil {
		t.Fatal(err)
	}
	if again.Header.Get("Authorization") != auth {
		t.Fatalf("signature disagrees:\n got %s\nwant %s", auth, again.Header.Get("Authorization"))
	}
	return auth
}

// signedCall signs a Bedrock call with s and sends it to a server that
// verifies it with creds.
func signedCall(t *testing.T, s interface {
	Sign(*http.Request, []byte) error
}, creds aws.Credentials, wantRegion string) {
	t.Helper()
	body := []byte(`{"messages":[{"role":"user","content":[{"text":"hi"}]}]}`)
	var got *http.Request
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if !bytes.Equal(b, body) {
			t.Errorf("body %s", b)
		}
		auth := verify(t, r, b, creds)
		m := sigV4.FindStringSubmatch(auth)
		if m[1] != creds.AccessKeyID || m[3] != wantRegion || m[4] != "bedrock" {
			t.Errorf("scope %v", m[1:5])
		}
		if strings.Contains(auth, creds.SecretAccessKey) {
			t.Error("the secret is in the Authorization header")
		}
		if r.Header.Get("X-Api-Key") != "" {
			t.Error("the gateway's key was sent")
		}
		got = r
		w.WriteHeader(200)
	}))
	defer ts.Close()
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/model/amazon.nova-pro-v1%3A0/converse", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer gateway-key")
	req.Header.Set("X-Api-Key", "gateway-key")
	if err := s.Sign(req, body); err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got == nil {
		t.Fatal("the server saw no request")
	}
	if creds.SessionToken != "" && got.Header.Get("X-Amz-Security-Token") != creds.SessionToken {
		t.Errorf("session token header %q", got.Header.Get("X-Amz-Security-Token"))
	}
}

func TestAWSEnvironmentCredentials(t *testing.T) {
	isolate(t)
	t.Setenv("AWS_ACCESS_KEY_ID", testAWSKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", testAWSSecret)
	t.Setenv("AWS_SESSION_TOKEN", testSessionToken)
	s, err := AWS(context.Background(), "eu-west-3", "")
	if err != nil {
		t.Fatal(err)
	}
	signedCall(t, s, aws.Credentials{AccessKeyID: testAWSKeyID, SecretAccessKey: testAWSSecret, SessionToken: testSessionToken}, "eu-west-3")
}

func TestAWSSharedCredentialsProfile(t *testing.T) {
	configFile, credsFile := isolate(t)
	if err := os.WriteFile(credsFile, []byte("[other]\naws_access_key_id = AKIDWRONG\naws_secret_access_key = wrong\n\n[bedrock-prod]\naws_access_key_id = "+testAWSKeyID+"\naws_secret_access_key = "+testAWSSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(configFile, []byte("[profile bedrock-prod]\nregion = ap-northeast-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The region comes from the profile when the provider names none.
	s, err := AWS(context.Background(), "", "bedrock-prod")
	if err != nil {
		t.Fatal(err)
	}
	signedCall(t, s, aws.Credentials{AccessKeyID: testAWSKeyID, SecretAccessKey: testAWSSecret}, "ap-northeast-1")
}

func TestAWSMissingCredentials(t *testing.T) {
	isolate(t)
	s, err := AWS(context.Background(), "us-east-1", "")
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/model/m/converse", nil)
	err = s.Sign(req, nil)
	if err == nil {
		t.Fatal("signed without credentials")
	}
	for _, want := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "aws_profile", "AWS_WEB_IDENTITY_TOKEN_FILE"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not name %s: %v", want, err)
		}
	}
	if req.Header.Get("Authorization") != "" {
		t.Error("an unsigned request got an Authorization header")
	}
	// A region is required.
	if _, err := AWS(context.Background(), "", ""); err == nil || !strings.Contains(err.Error(), "region") {
		t.Fatalf("no region: %v", err)
	}
	// A profile that does not exist.
	if _, err := AWS(context.Background(), "us-east-1", "nope"); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("missing profile: %v", err)
	}
}

// The secret never appears in an error, whichever way a lookup fails:
// a half-set environment, a profile whose credentials are incomplete.
func TestAWSErrorsCarryNoSecret(t *testing.T) {
	check := func(name string, err error) {
		t.Helper()
		if err == nil {
			return
		}
		for _, secret := range []string{testAWSSecret, testSessionToken} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("%s: the error holds a secret: %v", name, err)
			}
		}
	}
	isolate(t)
	t.Setenv("AWS_SECRET_ACCESS_KEY", testAWSSecret)
	t.Setenv("AWS_SESSION_TOKEN", testSessionToken)
	s, err := AWS(context.Background(), "us-east-1", "")
	check("env without key id: load", err)
	if err == nil {
		req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/x", nil)
		err = s.Sign(req, nil)
		if err == nil {
			t.Fatal("signed with a secret and no key id")
		}
		check("env without key id: sign", err)
	}

	_, credsFile := isolate(t)
	if err := os.WriteFile(credsFile, []byte("[half]\naws_secret_access_key = "+testAWSSecret+"\naws_session_token = "+testSessionToken+"\n[broken\naws_secret_access_key="+testAWSSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, profile := range []string{"half", "broken"} {
		s, err := AWS(context.Background(), "us-east-1", profile)
		check(profile+": load", err)
		if err == nil {
			req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/x", nil)
			err := s.Sign(req, nil)
			if err == nil {
				t.Fatalf("%s: signed with incomplete credentials", profile)
			}
			check(profile+": sign", err)
		}
	}
}
