package gateway_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
)

const responsesBody = `{"model":"mock-gpt","instructions":"be brief","input":"hi"}`

// POST /v1/responses is passed through to an OpenAI-kind target, whole
// and streamed, with the target's model; the stream is relayed to its
// own end (response.completed), and its usage is read.
func TestResponsesPassedThrough(t *testing.T) {
	s := newStack(t, mock.Config{OutputTokens: mock.TokenRange{Min: 5, Max: 5}}, nil)
	status, _, body := s.do("/v1/responses", responsesBody, nil)
	if status != 200 || decode(t, body)["object"] != "response" {
		t.Fatalf("whole: %d %s", status, body)
	}
	if last := s.mock.LastRequest(); last.Path != "/v1/responses" || last.Model != "mock-gpt-4o" || strings.Contains(string(last.Body), "stream_options") {
		t.Fatalf("provider saw %s model %q body %s", last.Path, last.Model, last.Body)
	}

	resp, err := s.post(t.Context(), "/v1/responses", strings.Replace(responsesBody, `"input"`, `"stream":true,"input"`, 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	var deltas int
	var lastData string
	err = sseEvents(resp.Body, func(d string) bool {
		if strings.Contains(d, `"type":"response.output_text.delta"`) {
			deltas++
		}
		lastData = d
		return true
	})
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || deltas != 5 || !strings.HasPrefix(lastData, `{"type":"response.completed"`) {
		t.Fatalf("stream: %d, %v, %d deltas, last %s", resp.StatusCode, err, deltas, lastData)
	}
	s.waitLog(t, "endpoint=responses", "stream=true", "outcome=ok", "output_tokens=5")
}

// A provider that answers 404 to /v1/responses lacks the endpoint: the
// 404 reaches the client, the operator is told once, and its breaker
// does not count it, so its chat traffic goes on.
func TestResponses404DoesNotTripBreaker(t *testing.T) {
	var chat, responses atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/v1/responses" {
			responses.Add(1)
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error":{"message":"Not Found","type":"invalid_request_error","param":null,"code":null}}`))
			return
		}
		chat.Add(1)
		w.Write([]byte(`{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`))
	}))
	t.Cleanup(up.Close)
	s := newStack(t, mock.Config{}, func(c *config.Config) { c.Providers[0].BaseURL = up.URL + "/v1" })
	for range 15 {
		status, _, body := s.do("/v1/responses", responsesBody, nil)
		if status != 404 || errorType(t, body) != "invalid_request_error" {
			t.Fatalf("%d %s; want the provider's 404", status, body)
		}
	}
	status, _, body := s.do("/v1/chat/completions", `{"model":"mock-gpt","messages":[{"role":"user","content":"hi"}]}`, nil)
	if status != 200 || chat.Load() != 1 || responses.Load() != 15 {
		t.Fatalf("chat after 15 Responses 404s: %d %s (chat calls %d, responses calls %d); the breaker must not have opened", status, body, chat.Load(), responses.Load())
	}
	if n := strings.Count(s.logText(), "set responses: false"); n != 1 {
		t.Errorf("warned %d times, want once:\n%s", n, s.logText())
	}
}

// waitLog waits (up to 2 s) for a request-log line holding every part.
func (s *stack) waitLog(t *testing.T, parts ...string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		for _, line := range strings.Split(s.logText(), "\n") {
			all := true
			for _, p := range parts {
				all = all && strings.Contains(line, p)
			}
			if all {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log line with %q in:\n%s", parts, s.logText())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
