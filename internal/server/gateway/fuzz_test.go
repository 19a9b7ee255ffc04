package gateway_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/server/gateway"
)

// okTransport answers every upstream call at once: a chat answer, or a
// stream when the body asked for one.
type okTransport struct{}

func (okTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	b, _ := io.ReadAll(r.Body)
	if bytes.Contains(b, []byte(`"stream":true`)) {
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Request: r,
			Body: io.NopCloser(strings.NewReader("data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n"))}, nil
	}
	return jsonResponse(r, 200, `{"choices":[{"message":{"content":"hi"}}],"usage":{"completion_tokens":1}}`), nil
}

// Whatever a client sends (headers, body, path), the handler answers
// exactly once with a well-formed response, never panics, and gives back
// every slot and every byte of body budget.
func FuzzHandler(f *testing.F) {
	f.Add("/v1/chat/completions", "X-Sluice-Priority", "critical", []byte(`{"model":"mock-gpt","messages":[]}`))
	f.Add("/v1/chat/completions", "X-Sluice-Timeout", "1ms", []byte(`{"model":"mock-gpt","stream":true}`))
	f.Add("/v1/messages", "anthropic-version", "2023-06-01", []byte(`{"model":"mock-claude","max_tokens":1}`))
	f.Add("/v1/embeddings", "Content-Length", "9999999999", []byte(`{"model":"mock-embed","input":"x"}`))
	f.Add("/v1/chat/completions", "OpenAI-Organization", "org", []byte(`{"model":"mock-gpt","Model":"x"}`))
	f.Add("/v1/chat/completions", "X-Sluice-Priority", "background", []byte(`{"model":"mock-gpt","model":"mock-gpt"}`))
	f.Add("/v1/nope", "", "", []byte(`[`))
	cfg := config.Default("http://127.0.0.1:1")
	cfg.MaxBodyBytes = 64 << 10
	g, err := gateway.New(cfg, gateway.Options{Transport: okTransport{}, Logger: gateway.NewLogger(io.Discard, cfg.Log)})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(g.Close)
	h := g.Handler()
	f.Fuzz(func(t *testing.T, path, name, value string, body []byte) {
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		req, err := http.NewRequest(http.MethodPost, "http://gw"+path, bytes.NewReader(body))
		if err != nil {
			return // not a URL a server would parse either
		}
		if http.CanonicalHeaderKey(name) != "" && !strings.ContainsAny(name+value, "\r\n\x00:") {
			req.Header.Set(name, value)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		res := rec.Result()
		out, _ := io.ReadAll(res.Body)
		switch ct := res.Header.Get("Content-Type"); {
		case res.StatusCode == 200 && strings.HasPrefix(ct, "text/event-stream"):
		case strings.HasPrefix(ct, "application/json"):
			if !json.Valid(out) {
				t.Fatalf("status %d with a body that is not JSON: %q", res.StatusCode, out)
			}
		default:
			t.Fatalf("status %d, Content-Type %q: %q", res.StatusCode, ct, out)
		}
		if sn := g.Runner().Snapshot(); sn.InFlight != 0 || sn.Queued != [3]int{} {
			t.Fatalf("slots leaked: %+v", sn)
		}
		if n := g.BodyBytesHeld(); n != 0 {
			t.Fatalf("%d bytes of body budget not given back", n)
		}
	})
}
