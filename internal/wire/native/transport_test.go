package native_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/wire/native"
	"github.com/sluice-gw/sluice/internal/wire/native/nativetest"
	"github.com/sluice-gw/sluice/internal/wire/translate"
)

// vendor is a fake toy-API server that records what it received.
type vendor struct {
	mu      sync.Mutex
	calls   int
	path    string
	rawPath string
	header  http.Header
	body    []byte
	handle  func(w http.ResponseWriter, r *http.Request)
}

func (v *vendor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	v.mu.Lock()
	v.calls++
	v.path, v.rawPath, v.header, v.body = r.URL.Path, r.URL.EscapedPath(), r.Header.Clone(), b
	v.mu.Unlock()
	v.handle(w, r)
}

func (v *vendor) seen() (int, string, http.Header, []byte) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.calls, v.rawPath, v.header, v.body
}

// signer sets a fixed credential header.
type signer struct{ err error }

func (s signer) Sign(req *http.Request, body []byte) error {
	if s.err != nil {
		return s.err
	}
	req.Header.Set("X-Toy-Key", "toy-secret")
	return nil
}

func start(t *testing.T, h func(w http.ResponseWriter, r *http.Request)) (*vendor, string) {
	t.Helper()
	v := &vendor{handle: h}
	srv := httptest.NewServer(v)
	t.Cleanup(srv.Close)
	return v, srv.URL + "/v9"
}

func hubRequest(t *testing.T, base, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/messages", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Api-Key", "hub-key-must-not-leak")
	req.Header.Set("Authorization", "Bearer client-token-must-not-leak")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	req.Header.Set("Anthropic-Beta", "something")
	req.Header.Set("X-Sluice-Timeout", "5000ms")
	req.Header.Set("Traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	req.Header.Set("OpenAI-Organization", "org-x")
	return req
}

func transport(c native.Codec) *native.Transport {
	return &native.Transport{Base: http.DefaultTransport, Codec: c, Signer: signer{}}
}

func TestTransportWhole(t *testing.T) {
	v, base := start(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"text":"hello there","in":7,"out":2,"end":"done"}`)
	})
	tr := transport(nativetest.Codec{})
	resp, err := tr.RoundTrip(hubRequest(t, base, `{"model":"fam/m:1","max_tokens":16,"messages":[{"role":"user","content":"hi"}],"metadata":{"user_id":"u1"}}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, type %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	var a struct {
		Content []struct{ Text string } `json:"content"`
		Usage   struct {
			In  int `json:"input_tokens"`
			Out int `json:"output_tokens"`
		} `json:"usage"`
		StopReason string `json:"stop_reason"`
	}
	if err := json.Unmarshal(body, &a); err != nil || len(a.Content) != 1 || a.Content[0].Text != "hello there" || a.Usage.In != 7 || a.Usage.Out != 2 || a.StopReason != "end_turn" {
		t.Fatalf("hub answer %s (%v)", body, err)
	}
	if got := resp.Header.Get("X-Sluice-Dropped"); got != "metadata.user_id" {
		t.Errorf("X-Sluice-Dropped = %q, want metadata.user_id", got)
	}
	n, path, h, vb := v.seen()
	if n != 1 || path != "/v9/toy/fam%2Fm:1:say" {
		t.Errorf("vendor saw %d calls, last at %q", n, path)
	}
	if !bytes.Contains(vb, []byte(`"turns":[{"who":"user","text":"hi"}]`)) || !bytes.Contains(vb, []byte(`"limit":16`)) {
		t.Errorf("vendor body %s", vb)
	}
	for _, k := range []string{"X-Api-Key", "Authorization", "Anthropic-Version", "Anthropic-Beta", "Openai-Organization"} {
		if h.Get(k) != "" {
			t.Errorf("the vendor heard the hub's %s: %q", k, h.Get(k))
		}
	}
	for k, want := range map[string]string{"X-Toy-Key": "toy-secret", "X-Sluice-Timeout": "5000ms", "Content-Type": "application/json",
		"Traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"} {
		if h.Get(k) != want {
			t.Errorf("vendor header %s = %q, want %q", k, h.Get(k), want)
		}
	}
}

func TestTransportStreamIsIncremental(t *testing.T) {
	release := make(chan struct{})
	_, base := start(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"text\":\"one\",\"in\":3}\n\n")
		w.(http.Flusher).Flush()
		<-release // the rest only once the hub side has read the first token
		io.WriteString(w, "data: {\"text\":\" two\"}\n\ndata: {\"end\":\"limit\",\"in\":3,\"out\":2}\n\n")
	})
	resp, err := transport(nativetest.Codec{}).RoundTrip(hubRequest(t, base, `{"model":"m","max_tokens":2,"stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var got bytes.Buffer
	buf := make([]byte, 64)
	for !bytes.Contains(got.Bytes(), []byte(`"text":"one"`)) {
		n, err := resp.Body.Read(buf)
		got.Write(buf[:n])
		if err != nil {
			close(release)
			t.Fatalf("read %v before the first token: %s", err, got.Bytes())
		}
	}
	close(release)
	rest, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the rest: %v", err)
	}
	got.Write(rest)
	s := got.String()
	for _, want := range []string{"event: message_start", `"text":" two"`, `"stop_reason":"max_tokens"`, "event: message_stop"} {
		if !strings.Contains(s, want) {
			t.Errorf("hub stream lacks %s:\n%s", want, s)
		}
	}
}

func TestTransportStreamCutAndFailed(t *testing.T) {
	for _, tc := range []struct {
		name, vendor string
		want         error
		tail         string
	}{
		{"truncated", "data: {\"text\":\"one\"}\n\n", io.ErrUnexpectedEOF, `"text":"one"`},
		{"failed", "data: {\"text\":\"one\"}\n\ndata: {\"problem\":\"boom\"}\n\n", nil, "event: error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, base := start(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, tc.vendor)
			})
			resp, err := transport(nativetest.Codec{}).RoundTrip(hubRequest(t, base, `{"model":"m","max_tokens":2,"stream":true,"messages":[{"role":"user","content":"hi"}]}`))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			got, err := io.ReadAll(resp.Body)
			if !errors.Is(err, tc.want) && err != tc.want {
				t.Fatalf("read error %v, want %v", err, tc.want)
			}
			if !strings.Contains(string(got), tc.tail) || strings.Contains(string(got), "message_stop") {
				t.Errorf("hub stream:\n%s", got)
			}
		})
	}
}

// retryCodec is the toy codec with a fixed retry delay and a record of
// what Failure was given.
type retryCodec struct {
	nativetest.Codec
	retry time.Duration
	mu    sync.Mutex
	seen  int
}

func (c *retryCodec) Failure(status int, h http.Header, body []byte) native.Failure {
	c.mu.Lock()
	c.seen = len(body)
	c.mu.Unlock()
	f := c.Codec.Failure(status, h, body)
	f.RetryAfter = c.retry
	return f
}

func TestTransportFailure(t *testing.T) {
	_, base := start(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"problem":"quota exhausted"`+strings.Repeat(" ", 2*native.MaxFailure)+`}`)
	})
	c := &retryCodec{retry: 1500 * time.Millisecond}
	resp, err := transport(c).RoundTrip(hubRequest(t, base, `{"model":"m","max_tokens":2,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "2" || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, Retry-After %q, type %q", resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("Content-Type"))
	}
	if !bytes.Contains(body, []byte(`"type":"rate_limit_error"`)) {
		t.Errorf("hub error body %s", body)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen != native.MaxFailure {
		t.Errorf("Failure saw %d bytes of the error body, want the bound %d", c.seen, native.MaxFailure)
	}
}

func TestTransportOversizedAnswer(t *testing.T) {
	_, base := start(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"text":"`+strings.Repeat("x", native.MaxAnswer)+`","end":"done"}`)
	})
	resp, err := transport(nativetest.Codec{}).RoundTrip(hubRequest(t, base, `{"model":"m","max_tokens":2,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadGateway || !bytes.Contains(body, []byte(`"api_error"`)) {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
}

func TestTransportBadAnswer(t *testing.T) {
	_, base := start(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"text":"half`)
	})
	resp, err := transport(nativetest.Codec{}).RoundTrip(hubRequest(t, base, `{"model":"m","max_tokens":2,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadGateway || !bytes.Contains(body, []byte(`"api_error"`)) {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
}

func TestTransportRefusesUntranslatable(t *testing.T) {
	v, base := start(t, func(w http.ResponseWriter, r *http.Request) { t.Error("the vendor was called") })
	resp, err := transport(nativetest.Codec{}).RoundTrip(hubRequest(t, base, `{"model":"m","max_tokens":2,"top_k":5,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 400 || !bytes.Contains(body, []byte(`"invalid_request_error"`)) || !bytes.Contains(body, []byte("top_k")) {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if n, _, _, _ := v.seen(); n != 0 {
		t.Errorf("vendor called %d times", n)
	}
}

func TestTransportSignerError(t *testing.T) {
	v, base := start(t, func(w http.ResponseWriter, r *http.Request) { t.Error("the vendor was called") })
	tr := &native.Transport{Codec: nativetest.Codec{}, Signer: signer{err: errors.New("no credentials found")}}
	_, err := tr.RoundTrip(hubRequest(t, base, `{"model":"m","max_tokens":2,"messages":[{"role":"user","content":"hi"}]}`))
	if err == nil || !strings.Contains(err.Error(), "no credentials found") {
		t.Fatalf("error %v", err)
	}
	if n, _, _, _ := v.seen(); n != 0 {
		t.Errorf("vendor called %d times", n)
	}
}

// The operator's headers and the forwarded client headers reach the
// vendor; the hub's credentials never do, even when listed.
func TestTransportOperatorAndForwardedHeaders(t *testing.T) {
	v, base := start(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"text":"ok","end":"done"}`)
	})
	tr := transport(nativetest.Codec{})
	tr.Header = http.Header{"X-Goog-User-Project": {"billing-project"}}
	tr.Forward = []string{"X-Mock-Fail", "Authorization", "X-Api-Key", "Anthropic-Version"}
	req := hubRequest(t, base, `{"model":"m","max_tokens":2,"messages":[{"role":"user","content":"hi"}]}`)
	req.Header.Set("X-Mock-Fail", "429")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	_, _, h, _ := v.seen()
	if h.Get("X-Goog-User-Project") != "billing-project" || h.Get("X-Mock-Fail") != "429" {
		t.Errorf("vendor headers %v", h)
	}
	for _, k := range []string{"Authorization", "X-Api-Key", "Anthropic-Version"} {
		if h.Get(k) != "" {
			t.Errorf("the vendor heard %s", k)
		}
	}
}

// A request's own options (WithOptions) stand over the Transport's.
func TestTransportRequestOptions(t *testing.T) {
	v, base := start(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"text":"ok","end":"done"}`)
	})
	req := hubRequest(t, base, `{"model":"m","max_tokens":2,"top_k":4,"messages":[{"role":"user","content":"hi"}]}`)
	req = req.WithContext(native.WithOptions(req.Context(), translate.Options{Unsupported: translate.UnsupportedDrop}))
	resp, err := transport(nativetest.Codec{}).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n, _, _, _ := v.seen(); resp.StatusCode != 200 || n != 1 || resp.Header.Get("X-Sluice-Dropped") != "top_k" {
		t.Fatalf("status %d, vendor calls %d, dropped %q", resp.StatusCode, n, resp.Header.Get("X-Sluice-Dropped"))
	}
}

// countingCodec counts its Request calls.
type countingCodec struct {
	nativetest.Codec
	requests atomic.Int32
}

func (c *countingCodec) Request(hub []byte, model string, opts translate.Options) (*native.Call, error) {
	c.requests.Add(1)
	return c.Codec.Request(hub, model, opts)
}

// A call made before (WithCall) is sent as it is, by every attempt: the
// codec translates a request once, and each attempt reads its own answer.
func TestTransportSendsAGivenCall(t *testing.T) {
	v, base := start(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"text":"hello there","in":7,"out":2,"end":"done"}`)
	})
	c := &countingCodec{}
	body := `{"model":"m","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`
	call, err := c.Request([]byte(body), "m", translate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tr := transport(c)
	for range 2 {
		req := hubRequest(t, base, body)
		resp, err := tr.RoundTrip(req.WithContext(native.WithCall(req.Context(), call)))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || !bytes.Contains(got, []byte("hello there")) {
			t.Fatalf("status %d: %s", resp.StatusCode, got)
		}
	}
	if n, _, _, vb := v.seen(); n != 2 || !bytes.Contains(vb, []byte(`"limit":16`)) {
		t.Errorf("the vendor saw %d calls, last %s", n, vb)
	}
	if n := c.requests.Load(); n != 1 {
		t.Errorf("the codec translated the request %d times, want once", n)
	}
}
