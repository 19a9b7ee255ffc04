package gateway_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/server/gateway"
)

// benchSession is a session token's length (AWS's run 700 to 1,100
// bytes), '/' and '+' in it.
var benchSession = strings.Repeat("IQoJb3JpZ2luX2VjE/sluice+session", 32)

// wholeTransport answers every call with one whole chat completion.
type wholeTransport struct{ body string }

func (w wholeTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(w.body)), ContentLength: int64(len(w.body)), Request: r}, nil
}

// BenchmarkScrub is what scrubbing costs one request through the
// gateway, side by side with a request that has nothing to scrub (no
// secret: the scrubbers return at their first test): a provider with
// a key (its raw, percent-encoded and base64 forms), and one whose set
// is a signed Bedrock call's (access key id, secret, a 1 KiB session
// token, a signature and an operator's header, each in every form).
// The answers: a stream of 400 text events that cannot begin a secret
// (plain), one whose text the scrub must read (escapes, words ending as
// a secret begins), and a whole 2 KiB answer (docs/BENCHMARKS.md).
func BenchmarkScrub(b *testing.B) {
	sets := []struct {
		name    string
		key     string
		headers map[string]string
	}{
		{"none", "", nil},
		{"key", "sk-bench-provider-key-0123456789abcdef", nil},
		{"signed", "", map[string]string{
			"X-Bench-Key-Id": "AKIASLUICEBENCH00001", "X-Bench-Secret": "bench/Secret+Key0123456789abcdefABCDEF",
			"X-Bench-Session": benchSession, "X-Bench-Signature": strings.Repeat("0123456789abcdef", 4), "X-Gw-Auth": "opr/Header+Secret-0123456789",
		}},
	}
	whole := `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"` +
		strings.Repeat("plain words of an answer, ", 80) + `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":400,"total_tokens":403}}`
	answers := []struct {
		name, req string
		rt        http.RoundTripper
	}{
		{"stream-plain", streamReq, sseTransport{body: cannedStream(400)}},
		{"stream-read", streamReq, sseTransport{body: cannedKeyStream(400)}},
		{"whole", `{"model":"mock-gpt","messages":[{"role":"user","content":"hi"}]}`, wholeTransport{body: whole}},
	}
	for _, a := range answers {
		for _, set := range sets {
			b.Run(a.name+"/"+set.name, func(b *testing.B) {
				b.Setenv("SLUICE_BENCH_KEY", set.key)
				cfg := config.Default("http://127.0.0.1:1")
				cfg.Providers[0].APIKeyEnv = "SLUICE_BENCH_KEY"
				cfg.Providers[0].Headers = set.headers
				g, err := gateway.New(cfg, gateway.Options{Logger: gateway.NewLogger(io.Discard, cfg.Log), Transport: a.rt})
				if err != nil {
					b.Fatal(err)
				}
				defer g.Close()
				h := g.Handler()
				b.ReportAllocs()
				for b.Loop() {
					req, _ := http.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(a.req))
					req.Header.Set("Content-Type", "application/json")
					w := &flushDiscard{h: http.Header{}}
					h.ServeHTTP(w, req)
				}
			})
		}
	}
}
