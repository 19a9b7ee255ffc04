package gateway_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/server/gateway"
)

// embeddingsAnswer is an embeddings answer for n inputs of dim
// dimensions, as OpenAI formats one.
func embeddingsAnswer(n, dim int) []byte {
	vec := strings.TrimSuffix(strings.Repeat("-0.012345678,", dim), ",")
	var b bytes.Buffer
	b.Grow(n * (len(vec) + 64))
	b.WriteString(`{"object":"list","data":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"object":"embedding","index":`)
		b.WriteString(strconv.Itoa(i))
		b.WriteString(`,"embedding":[`)
		b.WriteString(vec)
		b.WriteString(`]}`)
	}
	b.WriteString(`],"model":"text-embedding-3-large","usage":{"prompt_tokens":4096,"total_tokens":4096}}`)
	return b.Bytes()
}

// fixedTransport answers every call with one body, written in pieces.
type fixedTransport struct{ body []byte }

func (f fixedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	pr, pw := io.Pipe()
	go func() {
		for i := 0; i < len(f.body); i += 1 << 20 {
			if _, err := pw.Write(f.body[i:min(i+1<<20, len(f.body))]); err != nil {
				return
			}
		}
		pw.Close()
	}()
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: pr, Request: r, ContentLength: int64(len(f.body))}, nil
}

// A valid 2,048-input embeddings call (text-embedding-3-large: 3,072
// dimensions, over 64 MiB of answer) is relayed whole and exactly, not
// refused for its size (a fixed 64 MiB buffer refused it before). How
// little the gateway holds of such answers is measured on real processes:
// see docs/BENCHMARKS.md (large answers).
//
// Under the race detector, which makes every byte the test and the relay
// touch some ten times slower, it carries a quarter of that: still far
// past any buffer.
func TestEmbeddingsOf2048Inputs(t *testing.T) {
	inputs, dim := 2048, 3072
	if raceEnabled {
		inputs, dim = 1024, 1536
	}
	answer := embeddingsAnswer(inputs, dim)
	s := newStack(t, mock.Config{}, nil, func(o *gateway.Options) { o.Transport = fixedTransport{answer} })
	resp, err := s.post(t.Context(), "/v1/embeddings", `{"model":"mock-embed","input":["a","b"]}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got bytes.Buffer
	got.Grow(len(answer) + 1)
	_, err = got.ReadFrom(resp.Body)
	b := got.Bytes()
	if resp.StatusCode != 200 || err != nil || !bytes.Equal(b, answer) {
		t.Fatalf("status %d, %d of %d bytes, %v", resp.StatusCode, len(b), len(answer), err)
	}
	t.Logf("relayed a %d MiB embeddings answer", len(b)>>20)
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// bigTransport answers with a large JSON body, in pieces, that may break
// partway.
type bigTransport struct {
	size   int
	break_ bool
}

func (b bigTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	pr, pw := io.Pipe()
	go func() {
		pw.Write([]byte(`{"object":"list","data":[`))
		chunk := strings.Repeat(`0.1234567,`, 1000)
		for n := 0; n < b.size; n += len(chunk) {
			pw.Write([]byte(chunk))
		}
		if b.break_ {
			pw.CloseWithError(io.ErrUnexpectedEOF)
			return
		}
		pw.Write([]byte(`0],"usage":{"prompt_tokens":3,"completion_tokens":7}}`))
		pw.Close()
	}()
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: pr, Request: r, ContentLength: -1}, nil
}

// A large answer that breaks after its status went out reaches the client
// as a broken response (the connection is aborted), never as a short
// body that parses as whole; one that ends properly has its usage read
// from its tail.
func TestLargeAnswerBreakingMidway(t *testing.T) {
	// Past what is held whole (4 MiB for an answer that may be cut at
	// its output limit; 64 KiB here, a size this test can send).
	gateway.LimitHeldAnswer(t, 64<<10)
	for _, broken := range []bool{false, true} {
		t.Run(fmt.Sprint("broken=", broken), func(t *testing.T) {
			s := newStack(t, mock.Config{}, func(c *config.Config) { c.Log.Format = "json" },
				func(o *gateway.Options) { o.Transport = bigTransport{size: 1 << 20, break_: broken} })
			resp, err := s.post(t.Context(), "/v1/chat/completions", chatBody, nil)
			if err != nil {
				t.Fatal(err)
			}
			b, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if broken {
				if rerr == nil && json.Valid(b) {
					t.Fatalf("a broken answer reached the client as %d valid bytes", len(b))
				}
			} else if rerr != nil || !json.Valid(b) {
				t.Fatalf("a whole answer: %v, valid %v", rerr, json.Valid(b))
			}
			waitFor(t, "the log line", func() bool { return len(s.requestLog()) == 1 })
			l := s.requestLog()[0]
			if broken && (l.Outcome != "upstream_error" || l.Reason != "stream_cut") {
				t.Errorf("logged %+v, want upstream_error/stream_cut", l)
			}
			if !broken && (l.Outcome != "ok" || !strings.Contains(s.logText(), `"output_tokens":7`)) {
				t.Errorf("logged %s; want ok with the tail's 7 output tokens", s.logText())
			}
		})
	}
}

// A large answer with a Content-Length that is malformed only at its very
// end never reaches the client whole: the gateway holds its last byte
// until the answer has proved well-formed.
func TestLargeMalformedAnswerIsNeverWhole(t *testing.T) {
	answer := embeddingsAnswer(64, 256)
	answer = answer[:len(answer)-1] // drop the final closer
	s := newStack(t, mock.Config{}, nil, func(o *gateway.Options) { o.Transport = fixedTransport{answer} })
	resp, err := s.post(t.Context(), "/v1/embeddings", `{"model":"mock-embed","input":"x"}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, rerr := io.ReadAll(resp.Body)
	resp.Body.Close()
	if rerr == nil || len(b) >= len(answer) {
		t.Fatalf("read %d of %d bytes, err %v; want it cut short", len(b), len(answer), rerr)
	}
}
