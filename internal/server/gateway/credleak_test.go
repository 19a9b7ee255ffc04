package gateway_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/server/gateway"
	"github.com/sluice-gw/sluice/internal/wire/bedrock"
	"github.com/sluice-gw/sluice/internal/wire/vendors"
)

// The credentials of TestNoCredentialLeavesWhateverItsSource: each
// with '/' and '+' where its kind allows, so that the escaped and
// percent-encoded forms differ from the raw one.
const (
	leakOpenAIKey   = "oai-static/Key+0123456789abcdef=="
	leakOprHeader   = "opr/Hdr+Secret-01234567" // short enough to be a finish reason
	leakVtxHeader   = "vtx/Header+Secret-9876543210"
	leakGoogleToken = "ya29.a0AfB_byC-sluiceTestToken_0123456789abcdefghij"
	leakEnvKeyID    = "AKIASLUICEENV0000001"
	leakEnvSecret   = "env/Secret+Key0123456789abcdefABCDEFGH"
	leakProfKeyID   = "ASIASLUICEPROF000001"
	leakProfSecret  = "prof/Secret+Key0123456789abcdefABCDEF"
	leakSession     = "IQoJb3JpZ2luX2VjE/sluice+session/Token0123456789abcdefABCDEF=="
)

// credEcho is a provider of every API the gateway calls (OpenAI's,
// Vertex AI's Gemini, Bedrock's Converse) that echoes every credential
// it heard, in every form a body can carry one, in whatever the request
// asks for (by a word in its prompt): a whole answer, a stream, an
// error body, a stream's error event, a stream cut short, and a large
// whole answer cut between writes inside a credential. It also puts
// one in a response header the gateway relays and one it logs.
type credEcho struct {
	mu    sync.Mutex
	heard map[string][]string // by API: every credential heard
}

var sigV4Auth = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=([A-Z0-9]+)/[^,]+, SignedHeaders=[^,]+, Signature=([0-9a-f]{64})$`)

// credentialsOf is what a request's headers carry: a bearer token, a
// SigV4 signature's access key id and signature, the vendors' key and
// session token headers, the operator's header.
func credentialsOf(h http.Header) []string {
	var out []string
	if a := h.Get("Authorization"); a != "" {
		if tok, ok := strings.CutPrefix(a, "Bearer "); ok {
			out = append(out, tok)
		}
		if m := sigV4Auth.FindStringSubmatch(a); m != nil {
			out = append(out, m[1], m[2])
		}
	}
	for _, k := range []string{"X-Goog-Api-Key", "X-Api-Key", "X-Amz-Security-Token", "X-Gw-Auth"} {
		if v := h.Get(k); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// echoForms are the forms of v, each as a JSON string's inside: as it
// is, '/' escaped, every byte \u-escaped, percent-encoded, and base64:
// alone, and inside a longer text that is encoded whole (URL alphabet).
func echoForms(v string) []string {
	var u strings.Builder
	for i := 0; i < len(v); i++ {
		fmt.Fprintf(&u, `\u%04x`, v[i])
	}
	return []string{
		v,
		strings.ReplaceAll(v, "/", `\/`),
		u.String(),
		url.QueryEscape(v),
		base64.StdEncoding.EncodeToString([]byte(v)),
		base64.URLEncoding.EncodeToString([]byte("x-echo: " + v + "\n")),
	}
}

// echoHalves are v's forms cut in two, for two events: each half of v in
// the forms that encode byte by byte, each half of the encoding in
// base64's.
func echoHalves(v string) [][2]string {
	a, b := v[:len(v)/2], v[len(v)/2:]
	fa, fb, whole := echoForms(a), echoForms(b), echoForms(v)
	var out [][2]string
	for i := range 4 {
		out = append(out, [2]string{fa[i], fb[i]})
	}
	for _, f := range whole[4:] {
		out = append(out, [2]string{f[:len(f)/2], f[len(f)/2:]})
	}
	return out
}

// text is the echo of creds as one JSON string's inside.
func echoText(creds []string, authorization string) string {
	parts := []string{"echo"}
	for _, c := range creds {
		parts = append(parts, echoForms(c)...)
	}
	if authorization != "" {
		// The whole header, as a debugging provider dumps it.
		parts = append(parts, base64.StdEncoding.EncodeToString([]byte("Authorization: "+authorization)),
			strings.ReplaceAll(authorization, "/", `\/`))
	}
	return strings.Join(parts, " | ")
}

func (e *credEcho) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body := new(bytes.Buffer)
	body.ReadFrom(r.Body)
	creds := credentialsOf(r.Header)
	api := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 2)[0]
	switch api {
	// The vendor knows the secret behind a signature.
	case "rock":
		creds = append(creds, leakEnvSecret)
	case "rocks":
		creds = append(creds, leakProfSecret)
	}
	e.mu.Lock()
	e.heard[api] = append(e.heard[api], creds...)
	e.mu.Unlock()
	mode := "whole"
	for _, m := range []string{"refuse", "refusecut", "streamerr", "cut", "large"} {
		if bytes.Contains(body.Bytes(), []byte("mode:"+m)) {
			mode = m
		}
	}
	stream := bytes.Contains(body.Bytes(), []byte(`"stream":true`)) || strings.Contains(r.URL.Path, "stream")
	if mode == "cut" && api != "oai" {
		mode = "whole" // the continuation's target answers in full
	}
	text := echoText(creds, r.Header.Get("Authorization"))
	w.Header().Set("X-Request-Id", "req-"+creds[0])
	w.Header().Set("X-Ratelimit-Remaining-Requests", creds[0])
	var v vendorEcho
	switch api {
	case "oai":
		// Its whole answer's finish reason is the operator's header,
		// which the trace would carry.
		v = openAIEcho{finish: r.Header.Get("X-Gw-Auth")}
	case "vtx":
		v = geminiEcho{}
	default:
		v = converseEcho{}
	}
	switch {
	case mode == "refuse":
		v.refuse(w, text)
	case mode == "refusecut":
		// Bedrock's codec keeps 2 KiB of a message: the cut falls 11
		// bytes into the access key id.
		v.refuse(w, strings.Repeat("x", 2036)+" "+text[len("echo | "):])
	case mode == "large":
		// Over what the gateway holds of a whole answer (64 KiB in this
		// test, LimitHeldAnswer): relayed as it comes, the write cut
		// inside a credential.
		b := []byte(openAIAnswer(strings.Repeat("padding ", 9000)+text, "stop"))
		at := bytes.Index(b, []byte(creds[0])) + len(creds[0])/2
		w.Header().Set("Content-Type", "application/json")
		w.Write(b[:at])
		w.(http.Flusher).Flush()
		w.Write(b[at:])
	case !stream:
		v.whole(w, text)
	default:
		v.streamHead(w)
		flush := func() { w.(http.Flusher).Flush() }
		v.delta(w, "echo: ")
		flush()
		if mode == "streamerr" {
			v.streamError(w, text)
			return
		}
		if mode == "cut" {
			v.delta(w, "a partial answer, then the provider goes away")
			flush()
			return
		}
		for _, c := range creds {
			for _, h := range echoHalves(c) {
				v.delta(w, h[0])
				flush()
				v.delta(w, h[1]+" | ")
				flush()
			}
		}
		v.streamEnd(w)
	}
}

// vendorEcho writes one API's answers.
type vendorEcho interface {
	whole(w http.ResponseWriter, text string)
	refuse(w http.ResponseWriter, text string)
	streamHead(w http.ResponseWriter)
	delta(w http.ResponseWriter, text string)
	streamError(w http.ResponseWriter, text string)
	streamEnd(w http.ResponseWriter)
}

type openAIEcho struct{ finish string }

func openAIAnswer(text, finish string) string {
	return `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"` + text +
		`"},"finish_reason":"` + finish + `"}],"usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8}}`
}

func (o openAIEcho) whole(w http.ResponseWriter, text string) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, openAIAnswer(text, o.finish))
}

func (openAIEcho) refuse(w http.ResponseWriter, text string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	fmt.Fprint(w, `{"error":{"message":"`+text+`","type":"invalid_request_error","param":null,"code":null}}`)
}

func (openAIEcho) streamHead(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprint(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`+"\n\n")
}

func (openAIEcho) delta(w http.ResponseWriter, text string) {
	fmt.Fprint(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"`+text+`"},"finish_reason":null}]}`+"\n\n")
}

func (openAIEcho) streamError(w http.ResponseWriter, text string) {
	fmt.Fprint(w, `data: {"error":{"message":"`+text+`","type":"server_error"}}`+"\n\n")
}

func (openAIEcho) streamEnd(w http.ResponseWriter) {
	fmt.Fprint(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
}

type geminiEcho struct{}

func (geminiEcho) whole(w http.ResponseWriter, text string) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, `{"candidates":[{"content":{"role":"model","parts":[{"text":"`+text+`"}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":5,"totalTokenCount":8}}`)
}

func (geminiEcho) refuse(w http.ResponseWriter, text string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	fmt.Fprint(w, `{"error":{"code":400,"message":"`+text+`","status":"INVALID_ARGUMENT"}}`)
}

func (geminiEcho) streamHead(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
}

func (geminiEcho) delta(w http.ResponseWriter, text string) {
	fmt.Fprint(w, `data: {"candidates":[{"content":{"role":"model","parts":[{"text":"`+text+`"}]},"index":0}]}`+"\r\n\r\n")
}

func (geminiEcho) streamError(w http.ResponseWriter, text string) {
	fmt.Fprint(w, `data: {"error":{"code":500,"message":"`+text+`","status":"INTERNAL"}}`+"\r\n\r\n")
}

func (geminiEcho) streamEnd(w http.ResponseWriter) {
	fmt.Fprint(w, `data: {"candidates":[{"content":{"role":"model","parts":[{"text":"."}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":5,"totalTokenCount":8}}`+"\r\n\r\n")
}

type converseEcho struct{}

func (converseEcho) whole(w http.ResponseWriter, text string) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, `{"output":{"message":{"role":"assistant","content":[{"text":"`+text+`"}]}},"stopReason":"end_turn","usage":{"inputTokens":3,"outputTokens":5,"totalTokens":8},"metrics":{"latencyMs":1}}`)
}

func (converseEcho) refuse(w http.ResponseWriter, text string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-Errortype", "ValidationException")
	w.WriteHeader(http.StatusBadRequest)
	fmt.Fprint(w, `{"message":"`+text+`"}`)
}

func converseFrame(w http.ResponseWriter, kind, typ, payload string) {
	m := bedrock.Message{Headers: []bedrock.Header{
		bedrock.StringHeader(":"+kind+"-type", typ),
		bedrock.StringHeader(":content-type", "application/json"),
		bedrock.StringHeader(":message-type", kind),
	}, Payload: []byte(payload)}
	w.Write(bedrock.AppendMessage(nil, m))
}

func (converseEcho) streamHead(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	converseFrame(w, "event", "messageStart", `{"role":"assistant"}`)
}

func (converseEcho) delta(w http.ResponseWriter, text string) {
	converseFrame(w, "event", "contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"`+text+`"}}`)
}

func (converseEcho) streamError(w http.ResponseWriter, text string) {
	converseFrame(w, "exception", "internalServerException", `{"message":"`+text+`"}`)
}

func (converseEcho) streamEnd(w http.ResponseWriter) {
	converseFrame(w, "event", "contentBlockStop", `{"contentBlockIndex":0}`)
	converseFrame(w, "event", "messageStop", `{"stopReason":"end_turn"}`)
	converseFrame(w, "event", "metadata", `{"usage":{"inputTokens":3,"outputTokens":5,"totalTokens":8},"metrics":{"latencyMs":1}}`)
}

// leaksIn names the secrets text holds, and how: as they are, once
// JSON's escapes (\/, \uXXXX) or percent-encoding are read, or in
// base64 (either alphabet, any alignment) in any of those.
func leaksIn(text string, secrets []string) []string {
	views := []string{text, jsonUnescape(text)}
	views = append(views, percentDecode(views[0]), percentDecode(views[1]))
	n := len(views)
	for _, v := range views[:n] {
		views = append(views, base64Decodings(v)...)
	}
	var found []string
	for _, s := range secrets {
		for i, v := range views {
			if strings.Contains(v, s) {
				how := "as it is"
				if i >= n {
					how = "in base64"
				}
				found = append(found, s+" ("+how+")")
				break
			}
		}
	}
	return found
}

func jsonUnescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && s[i+1] == '/':
			b.WriteByte('/')
			i++
		case s[i] == '\\' && i+5 < len(s) && s[i+1] == 'u':
			if r, err := strconv.ParseUint(s[i+2:i+6], 16, 32); err == nil {
				b.WriteRune(rune(r))
				i += 5
				continue
			}
			b.WriteByte(s[i])
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

func percentDecode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if c, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(c))
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

var base64Run = regexp.MustCompile(`[A-Za-z0-9+/_=-]{12,}`)

// base64Decodings are what the runs of base64 characters in text decode
// to, each at the four alignments it may start at.
func base64Decodings(text string) []string {
	var out []string
	for _, run := range base64Run.FindAllString(text, -1) {
		run = strings.NewReplacer("-", "+", "_", "/", "=", "").Replace(run)
		for off := range 4 {
			r := run[min(off, len(run)):]
			if d, err := base64.RawStdEncoding.DecodeString(r[:len(r)/4*4]); err == nil && len(d) > 0 {
				out = append(out, string(d))
			}
		}
	}
	return out
}

// streamText is the text a client's stream carries in its deltas and
// error events, joined, as the client reads it: a credential split
// across events is whole in it.
func streamText(body []byte) string {
	var b strings.Builder
	for _, line := range strings.Split(string(body), "\n") {
		data, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
			Delta struct{ Text string }    `json:"delta"`
			Error struct{ Message string } `json:"error"`
		}
		if json.Unmarshal([]byte(data), &ev) != nil {
			continue
		}
		for _, c := range ev.Choices {
			b.WriteString(c.Delta.Content)
		}
		b.WriteString(ev.Delta.Text)
		b.WriteString(ev.Error.Message)
	}
	return b.String()
}

// No credential a request was signed with leaves the gateway, whatever
// its source and whatever form a provider echoes it in. Four providers,
// each signing the way it really does, call an echoing upstream on
// 127.0.0.1: OpenAI with a static key and an operator's header; Vertex
// AI through Google's OAuth2 signer (an authorized_user file whose token
// endpoint is a fake on 127.0.0.1, handing out a ya29 token) and an
// operator's header; Bedrock through AWS's SigV4 signer with static
// keys from the environment; and Bedrock with a profile's temporary
// keys and session token. The upstream echoes every credential it heard
// (and the AWS secrets, which it knows) raw, \/-escaped, \u-escaped,
// percent-encoded and base64 (alone and inside an encoded header line),
// in whole answers (and one's finish reason), streams (each form split
// across two events), error bodies, stream error events, a large answer
// cut between writes inside a credential, a message long enough that
// Bedrock's codec cuts it inside one, and a stream cut short and
// continued on Vertex; to clients of both APIs. No form of any of them
// reaches the client (body, headers, the text its events carry
// joined), the request log, a trace or /metrics.
func TestNoCredentialLeavesWhateverItsSource(t *testing.T) {
	if _, ok := vendors.Lookup(config.KindGemini); !ok {
		t.Skip("this build has no gemini codec")
	}
	if _, ok := vendors.Lookup(config.KindBedrock); !ok {
		t.Skip("this build has no bedrock codec")
	}
	gateway.LimitHeldAnswer(t, 64<<10) // the large answer is relayed as it comes
	dir := t.TempDir()
	// Google's token endpoint, handing out one access token.
	var tokens sync.Map
	tokenSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tokens.Store(r.URL.Path, true)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":3600}`, leakGoogleToken)
	}))
	t.Cleanup(tokenSrv.Close)
	googleFile := filepath.Join(dir, "google.json")
	gf, _ := json.Marshal(map[string]string{"type": "authorized_user", "client_id": "sluice-test.apps.example", "client_secret": "client-secret-not-sent-upstream",
		"refresh_token": "refresh-token-not-sent-upstream", "token_uri": tokenSrv.URL + "/token"})
	// AWS: static keys in the environment; a profile with temporary ones.
	credsFile := filepath.Join(dir, "aws-credentials")
	for f, data := range map[string]string{
		googleFile:                       string(gf),
		credsFile:                        "[sess]\naws_access_key_id = " + leakProfKeyID + "\naws_secret_access_key = " + leakProfSecret + "\naws_session_token = " + leakSession + "\n",
		filepath.Join(dir, "aws-config"): "",
	} {
		if err := os.WriteFile(f, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", dir)
	t.Setenv("AWS_ACCESS_KEY_ID", leakEnvKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", leakEnvSecret)
	t.Setenv("SLUICE_TEST_LEAK_KEY", leakOpenAIKey)
	for k, v := range map[string]string{"AWS_SESSION_TOKEN": "", "AWS_PROFILE": "", "AWS_DEFAULT_PROFILE": "", "AWS_REGION": "", "AWS_DEFAULT_REGION": "",
		"AWS_WEB_IDENTITY_TOKEN_FILE": "", "AWS_ROLE_ARN": "", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "", "AWS_CONTAINER_CREDENTIALS_FULL_URI": "",
		"AWS_ENDPOINT_URL": "", "AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": filepath.Join(dir, "aws-config"), "AWS_SHARED_CREDENTIALS_FILE": credsFile,
		"GOOGLE_APPLICATION_CREDENTIALS": ""} {
		t.Setenv(k, v)
	}

	echo := &credEcho{heard: map[string][]string{}}
	up := httptest.NewServer(echo)
	t.Cleanup(up.Close)
	exp := tracetest.NewInMemoryExporter()
	timeout := config.Duration(10 * time.Second)
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		c.Log.Level = "debug"
		c.Providers = append(c.Providers,
			config.Provider{Name: "oai", Kind: "openai", BaseURL: up.URL + "/oai/v1", APIKeyEnv: "SLUICE_TEST_LEAK_KEY", Timeout: timeout,
				Headers: map[string]string{"X-Gw-Auth": leakOprHeader}},
			config.Provider{Name: "vtx", Kind: config.KindGemini, BaseURL: up.URL + "/vtx", Timeout: timeout,
				Vertex:  &config.Vertex{Project: "sluice-test", Location: "us-central1", CredentialsFile: googleFile},
				Headers: map[string]string{"X-Gw-Auth": leakVtxHeader}},
			config.Provider{Name: "rock", Kind: config.KindBedrock, BaseURL: up.URL + "/rock", Region: "us-east-1", Timeout: timeout},
			config.Provider{Name: "rocks", Kind: config.KindBedrock, BaseURL: up.URL + "/rocks", Region: "us-west-2", AWSProfile: "sess", Timeout: timeout},
		)
		c.Models = append(c.Models,
			config.Model{Name: "m-oai", Targets: []config.Target{{Provider: "oai", Model: "gpt-x"}}},
			config.Model{Name: "m-vtx", Targets: []config.Target{{Provider: "vtx", Model: "gemini-2.5-flash"}}},
			config.Model{Name: "m-rock", Targets: []config.Target{{Provider: "rock", Model: "anthropic.claude-sonnet-4:0"}}},
			config.Model{Name: "m-rocks", Targets: []config.Target{{Provider: "rocks", Model: "anthropic.claude-sonnet-4:0"}}},
			config.Model{Name: "m-cont", Targets: []config.Target{{Provider: "oai", Model: "gpt-x"}, {Provider: "vtx", Model: "gemini-2.5-flash"}}},
		)
	}, tracing(exp))

	secrets := []string{leakOpenAIKey, leakOprHeader, leakVtxHeader, leakGoogleToken, leakEnvKeyID, leakEnvSecret, leakProfKeyID, leakProfSecret, leakSession}
	var sigs []string // the SigV4 signatures, learnt from what the upstream heard
	check := func(what, text string) {
		t.Helper()
		if found := leaksIn(text, append(secrets, sigs...)); len(found) > 0 {
			t.Errorf("%s: credentials leaked: %v\n%.3000s", what, found, text)
		}
	}
	ant := map[string]string{"Anthropic-Version": "2023-06-01"}
	type call struct{ model, mode string }
	var calls []call
	for _, m := range []string{"m-oai", "m-vtx", "m-rock", "m-rocks"} {
		for _, mode := range []string{"whole", "stream", "refuse", "streamerr"} {
			calls = append(calls, call{m, mode})
		}
	}
	calls = append(calls, call{"m-oai", "large"}, call{"m-cont", "cut"}, call{"m-rock", "refusecut"}, call{"m-rocks", "refusecut"})
	for _, c := range calls {
		for _, api := range []string{"openai", "anthropic"} {
			if c.mode == "large" && api == "anthropic" {
				continue // a translated answer is held whole
			}
			stream := c.mode == "stream" || c.mode == "streamerr" || c.mode == "cut"
			prompt := "say hello mode:" + c.mode
			path, body, hdr := "/v1/chat/completions", fmt.Sprintf(`{"model":%q,"stream":%v,"messages":[{"role":"user","content":%q}]}`, c.model, stream, prompt), map[string]string(nil)
			if api == "anthropic" {
				path, body, hdr = "/v1/messages", fmt.Sprintf(`{"model":%q,"max_tokens":50,"stream":%v,"messages":[{"role":"user","content":%q}]}`, c.model, stream, prompt), ant
			}
			status, h, got := s.do(path, body, hdr)
			what := fmt.Sprintf("%s %s to %s", c.mode, api, c.model)
			want, echoed := http.StatusOK, "echo"
			switch c.mode {
			case "refuse":
				want = http.StatusBadRequest
			case "refusecut":
				want, echoed = http.StatusBadRequest, "xxx"
				for _, id := range []string{leakEnvKeyID, leakProfKeyID} {
					if bytes.Contains(got, []byte(id[:11])) {
						t.Errorf("%s: what is left of a credential cut short reached the client:\n%s", what, got[len(got)-200:])
					}
				}
			}
			if status != want || !bytes.Contains(got, []byte(echoed)) {
				t.Errorf("%s: status %d, want %d with the blanked echo:\n%.2000s", what, status, want, got)
			}
			if !utf8.Valid(got) {
				t.Errorf("%s: the answer is not UTF-8", what)
			}
			echo.mu.Lock()
			for _, cred := range echo.heard["rock"] {
				if len(cred) == 64 {
					sigs = append(sigs, cred)
				}
			}
			for _, cred := range echo.heard["rocks"] {
				if len(cred) == 64 {
					sigs = append(sigs, cred)
				}
			}
			echo.mu.Unlock()
			check(what+": body", string(got))
			if stream {
				check(what+": the events' text", streamText(got))
			}
			var hs strings.Builder
			for k, vv := range h {
				fmt.Fprintf(&hs, "%s: %s\n", k, strings.Join(vv, ","))
			}
			check(what+": headers", hs.String())
		}
	}

	// The upstream heard every credential the test searches for: the
	// search is not of things that never left.
	echo.mu.Lock()
	heard := map[string]string{}
	for api, creds := range echo.heard {
		heard[api] = strings.Join(creds, " ")
	}
	echo.mu.Unlock()
	for api, want := range map[string][]string{
		"oai":   {leakOpenAIKey, leakOprHeader},
		"vtx":   {leakGoogleToken, leakVtxHeader},
		"rock":  {leakEnvKeyID},
		"rocks": {leakProfKeyID, leakSession},
	} {
		for _, w := range want {
			if !strings.Contains(heard[api], w) {
				t.Errorf("the %s upstream never heard %s: it heard %q", api, w, heard[api])
			}
		}
	}
	if len(sigs) == 0 {
		t.Error("no SigV4 signature was heard")
	}
	if _, ok := tokens.Load("/token"); !ok {
		t.Error("the Google signer never asked the token endpoint")
	}

	rec := httptest.NewRecorder()
	s.gw.AdminHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	check("/metrics", rec.Body.String())
	check("the log", s.logText())
	waitFor(t, "the requests' spans", func() bool { return len(exp.GetSpans()) > 0 })
	var spans strings.Builder
	for _, sp := range exp.GetSpans() {
		fmt.Fprintf(&spans, "%s %s %s\n", sp.Name, sp.Status.Code, sp.Status.Description)
		for _, kv := range sp.Attributes {
			fmt.Fprintf(&spans, "  %s=%s\n", kv.Key, kv.Value.Emit())
		}
		for _, ev := range sp.Events {
			fmt.Fprintf(&spans, "  event %s\n", ev.Name)
			for _, kv := range ev.Attributes {
				fmt.Fprintf(&spans, "    %s=%s\n", kv.Key, kv.Value.Emit())
			}
		}
	}
	check("the traces", spans.String())
}
