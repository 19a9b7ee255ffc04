package gateway_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/server/gateway"
)

const (
	openAIKey    = "sk-proj-gatewayOpenAISecret0123456789"
	anthropicKey = "sk-ant-gatewayAnthropicSecret0123456789"
	clientKey    = "sk-client-own-secret-0123456789abcdef"
)

// echoProvider answers like a careless upstream that echoes the
// credentials it received: in error bodies, in a success body, in a
// header, and mid-stream, split across writes. Calls for other models go
// to the real fake provider behind it.
type echoProvider struct{ next http.RoundTripper }

func (e echoProvider) RoundTrip(r *http.Request) (*http.Response, error) {
	body, _ := io.ReadAll(r.Body)
	var q struct{ Model string }
	json.Unmarshal(body, &q)
	key := r.Header.Get("X-Api-Key")
	if a := r.Header.Get("Authorization"); a != "" {
		key = strings.TrimPrefix(a, "Bearer ")
	}
	resp := func(status int, ct, text string) *http.Response {
		return &http.Response{StatusCode: status, Request: r, Body: io.NopCloser(strings.NewReader(text)),
			Header: http.Header{"Content-Type": {ct}, "X-Debug-Auth": {"Bearer " + key}}, ContentLength: -1}
	}
	switch q.Model {
	case "echo-401":
		return resp(401, "application/json", `{"error":{"message":"Incorrect API key provided: `+key+`","type":"invalid_request_error"}}`), nil
	case "echo-500":
		return resp(500, "application/json", `{"error":{"message":"upstream saw Authorization: Bearer `+key+`","type":"server_error"}}`), nil
	case "echo-200":
		return resp(200, "application/json", `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"your key is `+key+`"},"finish_reason":"stop"}],"usage":{"completion_tokens":5}}`), nil
	case "echo-stream":
		// The key split across two events' worth of reads.
		half := len(key) / 2
		pr, pw := io.Pipe()
		go func() {
			fmt.Fprintf(pw, "data: {\"choices\":[{\"delta\":{\"content\":\"key %s", key[:half])
			fmt.Fprintf(pw, "%s\"}}]}\n\n", key[half:])
			fmt.Fprint(pw, "data: [DONE]\n\n")
			pw.Close()
		}()
		rr := resp(200, "text/event-stream", "")
		rr.Body = pr
		return rr, nil
	}
	r.Body = io.NopCloser(strings.NewReader(string(body)))
	return e.next.RoundTrip(r)
}

// bearerShaped is what must never come out: a bearer token or a key in
// the shape providers issue.
var bearerShaped = regexp.MustCompile(`(?i)bearer\s+[A-Za-z0-9._~+/=-]{8,}|sk-[A-Za-z0-9_-]{16,}`)

// No configured key, and nothing shaped like a bearer token, comes out of
// the gateway: not in an answer's body or headers, whatever the provider
// sends back; not in the log; not in the metrics. A mixed workload runs
// through it and every byte that came out is searched.
func TestNoSecretComesOut(t *testing.T) {
	t.Setenv("SLUICE_TEST_OPENAI_KEY", openAIKey)
	t.Setenv("SLUICE_TEST_ANTHROPIC_KEY", anthropicKey)
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		c.Log.Level = "debug"
		c.Providers[0].APIKeyEnv = "SLUICE_TEST_OPENAI_KEY"
		c.Providers[1].APIKeyEnv = "SLUICE_TEST_ANTHROPIC_KEY"
		for _, m := range []string{"echo-401", "echo-500", "echo-200", "echo-stream"} {
			c.Models = append(c.Models, config.Model{Name: m, Targets: []config.Target{{Provider: "mock-openai", Model: m}}})
		}
		c.Models = append(c.Models, config.Model{Name: "claude-echo", Targets: []config.Target{{Provider: "mock-anthropic", Model: "echo-401"}}})
	}, func(o *gateway.Options) { o.Transport = echoProvider{next: gateway.NewTransport()} })

	var out strings.Builder
	send := func(path, body string, hdr map[string]string) {
		if hdr == nil {
			hdr = map[string]string{}
		}
		hdr["Authorization"] = "Bearer " + clientKey
		status, h, b := s.do(path, body, hdr)
		fmt.Fprintf(&out, "%s %d\n%s\n%s\n", path, status, headerText(h), b)
	}
	claude := map[string]string{"anthropic-version": "2023-06-01", "x-api-key": clientKey}
	for _, m := range []string{"echo-401", "echo-500", "echo-200", "echo-stream", "mock-gpt"} {
		send("/v1/chat/completions", `{"model":"`+m+`","stream":`+fmt.Sprint(m == "echo-stream")+`,"messages":[{"role":"user","content":"hi"}]}`, nil)
	}
	send("/v1/chat/completions", `{"model":"mock-gpt","stream":true,"messages":[{"role":"user","content":"hi"}]}`, nil)
	send("/v1/chat/completions", chatBody, map[string]string{"X-Mock-Fail": "500"})
	send("/v1/chat/completions", chatBody, map[string]string{"X-Mock-Fail": "429"})
	send("/v1/chat/completions", chatBody, map[string]string{"X-Mock-Fail": "truncate"})
	send("/v1/chat/completions", `{"model":"nope"}`, nil)
	send("/v1/chat/completions", `{bad json`, nil)
	send("/v1/embeddings", `{"model":"mock-embed","input":"hi"}`, nil)
	send("/v1/messages", `{"model":"mock-claude","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`, claude)
	send("/v1/messages", `{"model":"claude-echo","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`, claude)
	send("/v1/messages", `{"model":"mock-claude","stream":true,"max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`, claude)

	resp, err := http.Get(s.url + "/v1/models")
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		out.Write(b)
	}
	metrics := httpGetAdmin(t, s, "/metrics")
	waitFor(t, "every log line", func() bool { return strings.Count(s.logText(), "msg=request ") >= 15 })

	for name, text := range map[string]string{"answers": out.String(), "log": s.logText(), "metrics": metrics} {
		for _, secret := range []string{openAIKey, anthropicKey, clientKey, "gatewayOpenAISecret", "gatewayAnthropicSecret"} {
			if strings.Contains(text, secret) {
				t.Errorf("%s carry %q", name, secret)
			}
		}
		if m := bearerShaped.FindString(text); m != "" {
			t.Errorf("%s carry something bearer-shaped: %q", name, m)
		}
	}
	if !strings.Contains(out.String(), "your key is ******") || !strings.Contains(out.String(), "key ****") {
		t.Errorf("the scrubbed answers do not show where the key was:\n%s", out.String())
	}
}

func httpGetAdmin(t *testing.T, s *stack, path string) string {
	t.Helper()
	rec := &responseRecorder{header: http.Header{}}
	req, _ := http.NewRequest(http.MethodGet, path, nil)
	s.gw.AdminHandler().ServeHTTP(rec, req)
	return rec.body.String()
}

type responseRecorder struct {
	header http.Header
	body   strings.Builder
	status int
}

func (r *responseRecorder) Header() http.Header         { return r.header }
func (r *responseRecorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *responseRecorder) WriteHeader(s int)           { r.status = s }

// A credential the operator sets as a header (Azure's api-key, say) is a
// secret like the provider's key: scrubbed from what comes back. And the
// provider's request id, which the log keeps, is scrubbed and cut to an
// id's shape before it is logged.
func TestOperatorCredentialsAndRequestIDsAreScrubbed(t *testing.T) {
	const azureKey = "0123456789abcdef0123456789abcdef"
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		c.Providers[0].Headers = map[string]string{"Api-Key": azureKey}
	}, func(o *gateway.Options) {
		o.Transport = idTransport{}
	})
	status, hdr, body := s.do("/v1/chat/completions", chatBody, nil)
	waitFor(t, "the log line", func() bool { return strings.Contains(s.logText(), "msg=request") })
	for name, text := range map[string]string{"answer": string(body), "headers": headerText(hdr), "log": s.logText()} {
		if strings.Contains(text, azureKey) || strings.Contains(text, "\n\t") {
			t.Errorf("status %d; the %s carries the operator's credential or a raw request id:\n%s", status, name, text)
		}
	}
}

// idTransport echoes the credential it received in a header, the request
// id and the body.
type idTransport struct{}

func (idTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	key := r.Header.Get("Api-Key")
	resp := jsonResponse(r, 200, `{"choices":[{"message":{"content":"key `+key+`"}}],"usage":{"completion_tokens":2}}`)
	resp.Header.Set("X-Request-Id", "req-"+key+"\n\tinjected=1")
	resp.Header.Set("X-Echo", key)
	return resp, nil
}

const escapedKey = "sk-proj-escaped/Secret+0123456789ab"

// escapeEcho echoes the key it received the way encoders that escape
// more than they must write it: '/' as \/, letters as \u escapes, in a
// whole answer, an error body and a spaced, CRLF-framed stream that
// splits it across three events.
type escapeEcho struct{}

func (escapeEcho) RoundTrip(r *http.Request) (*http.Response, error) {
	body, _ := io.ReadAll(r.Body)
	var q struct{ Model string }
	json.Unmarshal(body, &q)
	key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	esc := func(s string) string {
		var b strings.Builder
		for i, c := range []byte(s) {
			switch {
			case c == '/':
				b.WriteString(`\/`)
			case i%3 == 0 && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'):
				fmt.Fprintf(&b, `\u%04x`, c)
			default:
				b.WriteByte(c)
			}
		}
		return b.String()
	}
	switch q.Model {
	case "esc-200":
		return jsonResponse(r, 200, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"your key is `+esc(key)+`"},"finish_reason":"stop"}],"usage":{"completion_tokens":5}}`), nil
	case "esc-400":
		return jsonResponse(r, 400, `{"error":{"message":"bad key `+esc(key)+`","type":"invalid_request_error"}}`), nil
	}
	chunk := func(content string) string {
		return `data: {"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "` + content + `"}, "finish_reason": null}]}` + "\r\n\r\n"
	}
	stream := chunk("key: "+esc(key[:6])) + chunk(esc(key[6:17])) + chunk(esc(key[17:])+" end") +
		`data: {"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}` + "\r\n\r\ndata: [DONE]\r\n\r\n"
	return &http.Response{StatusCode: 200, Request: r, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(strings.NewReader(stream)), ContentLength: -1}, nil
}

// jsonStrings is every JSON string in text, decoded, one a line: what a
// client reads, whatever escapes the bytes used.
func jsonStrings(text string) string {
	var b strings.Builder
	for _, lit := range regexp.MustCompile(`"(?:[^"\\]|\\.)*"`).FindAllString(text, -1) {
		var s string
		if json.Unmarshal([]byte(lit), &s) == nil {
			b.WriteString(s + "\n")
		}
	}
	return b.String()
}

// A key the provider writes with JSON escapes is blanked by what the
// client decodes: in a whole answer, an error body and a stream that
// splits it across events, spaced and CRLF-framed.
func TestEscapedKeyComesOutBlank(t *testing.T) {
	t.Setenv("SLUICE_TEST_ESCAPED_KEY", escapedKey)
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		c.Providers[0].APIKeyEnv = "SLUICE_TEST_ESCAPED_KEY"
		for _, m := range []string{"esc-200", "esc-400", "esc-stream"} {
			c.Models = append(c.Models, config.Model{Name: m, Targets: []config.Target{{Provider: "mock-openai", Model: m}}})
		}
	}, func(o *gateway.Options) { o.Transport = escapeEcho{} })
	for _, m := range []string{"esc-200", "esc-400", "esc-stream"} {
		status, _, body := s.do("/v1/chat/completions", `{"model":"`+m+`","stream":`+fmt.Sprint(m == "esc-stream")+`,"messages":[{"role":"user","content":"hi"}]}`, nil)
		read := jsonStrings(string(body))
		for i := 0; i+8 <= len(escapedKey); i++ {
			if strings.Contains(read, escapedKey[i:i+8]) {
				t.Errorf("%s: status %d; the client decodes %q of the key:\n%s", m, status, escapedKey[i:i+8], read)
				break
			}
		}
		if m != "esc-stream" {
			continue
		}
		var text strings.Builder
		for _, c := range regexp.MustCompile(`"content": ?("(?:[^"\\]|\\.)*")`).FindAllStringSubmatch(string(body), -1) {
			text.WriteString(strings.TrimSuffix(jsonStrings(c[1]), "\n"))
		}
		if want := "key: " + strings.Repeat("*", len(escapedKey)) + " end"; text.String() != want {
			t.Errorf("the client read %q, want %q", text.String(), want)
		}
	}
}
