package gateway_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
)

// A 404 caused by the request's body (here a file id the provider does
// not have) is the client's: however many one client sends, each gets the
// provider's 404, and the provider's breaker stays closed, so the other
// clients' calls still go there.
func TestBodyCaused404DoesNotTripBreaker(t *testing.T) {
	var good, bad atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(string(b), "file-missing") {
			bad.Add(1)
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error":{"message":"No such File object: file-missing","type":"invalid_request_error","param":"file_id","code":null}}`))
			return
		}
		good.Add(1)
		w.Write([]byte(`{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`))
	}))
	t.Cleanup(up.Close)
	s := newStack(t, mock.Config{}, func(c *config.Config) { c.Providers[0].BaseURL = up.URL + "/v1" })
	const n = 15 // three times the default consecutive_errors
	for i := range n {
		status, _, body := s.do("/v1/chat/completions", `{"model":"mock-gpt","messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"file-missing"}}]}]}`, nil)
		if status != 404 {
			t.Fatalf("bad request %d: %d %s; want the provider's 404 (a breaker opened by the client's own 404s refuses with 503)", i, status, body)
		}
	}
	status, _, body := s.do("/v1/chat/completions", `{"model":"mock-gpt","messages":[{"role":"user","content":"hi"}]}`, nil)
	if status != 200 || good.Load() != 1 || bad.Load() != n {
		t.Fatalf("another client after %d body-caused 404s: %d %s (good calls %d, bad calls %d); the breaker must not have opened", n, status, body, good.Load(), bad.Load())
	}
}
