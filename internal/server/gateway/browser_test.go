package gateway_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
)

// send makes one request to url with the given Host header (none: the
// URL's) and headers, and returns its status, headers and body.
func send(t *testing.T, method, url, host, body string, hdr map[string]string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// Any web page the operator opens may POST to a gateway on loopback. A
// text/plain or form POST needs no preflight, so without a check it runs
// and spends the provider's key; a request whose Origin is another site
// is refused (403), and so is one a browser marks as from another site
// without an Origin, while a plain API client (curl -d included) is
// served.
func TestCrossOriginSimplePostIsRefused(t *testing.T) {
	hs := newHostStack(t, mock.Config{}, nil)
	url := hs.url + "/v1/chat/completions"
	if st, _, b := send(t, "POST", url, "", chatBody, map[string]string{"Content-Type": "text/plain", "Origin": "https://evil.example"}); st != http.StatusForbidden || !strings.Contains(b, "server.cors.allowed_origins") {
		t.Errorf("cross-origin text/plain POST: %d %s; want 403 naming server.cors.allowed_origins", st, b)
	}
	if st, _, b := send(t, "POST", url, "", chatBody, map[string]string{"Content-Type": "application/json", "Origin": "https://evil.example"}); st != http.StatusForbidden {
		t.Errorf("cross-origin JSON POST: %d %s; want 403", st, b)
	}
	for _, site := range []string{"cross-site", "same-site"} {
		if st, _, b := send(t, "POST", url, "", chatBody, map[string]string{"Content-Type": "text/plain", "Sec-Fetch-Site": site}); st != http.StatusForbidden || !strings.Contains(b, "server.cors.allowed_origins") {
			t.Errorf("text/plain POST marked Sec-Fetch-Site: %s, no Origin: %d %s; want 403", site, st, b)
		}
	}
	// curl -d sends a form Content-Type and no browser's marks: served.
	for _, ct := range []string{"application/x-www-form-urlencoded", "text/plain;charset=UTF-8"} {
		if st, _, b := send(t, "POST", url, "", chatBody, map[string]string{"Content-Type": ct}); st != 200 {
			t.Errorf("POST with Content-Type %s from no browser: %d %s; want 200", ct, st, b)
		}
	}
	if st, _, b := send(t, "POST", url, "", chatBody, map[string]string{"Content-Type": "application/json"}); st != 200 {
		t.Errorf("an API client's POST: %d %s; want 200", st, b)
	}
}

// With server.cors, the allowed origin's preflight is answered and its
// requests carry Access-Control-Allow-Origin; other origins are still
// refused, preflight and all.
func TestCORSAllowsConfiguredOrigins(t *testing.T) {
	hs := newHostStack(t, mock.Config{}, func(c *config.Config) {
		c.Server.CORS = config.CORS{AllowedOrigins: []string{"https://app.example"}, MaxAge: config.Duration(time.Minute)}
	})
	url := hs.url + "/v1/chat/completions"
	st, h, b := send(t, "OPTIONS", url, "", "", map[string]string{"Origin": "https://app.example",
		"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization, content-type, x-stainless-os"})
	if st != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != "https://app.example" ||
		!strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") || h.Get("Access-Control-Allow-Headers") != "authorization, content-type, x-stainless-os" ||
		h.Get("Access-Control-Max-Age") != "60" {
		t.Errorf("preflight: %d %v %s", st, h, b)
	}
	st, h, b = send(t, "POST", url, "", chatBody, map[string]string{"Content-Type": "application/json", "Origin": "https://app.example"})
	if st != 200 || h.Get("Access-Control-Allow-Origin") != "https://app.example" || h.Get("Access-Control-Expose-Headers") == "" {
		t.Errorf("allowed origin's POST: %d %v %s", st, h, b)
	}
	if st, h, _ := send(t, "OPTIONS", url, "", "", map[string]string{"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"}); st != http.StatusForbidden || h.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("another origin's preflight: %d %v; want 403 without Access-Control-Allow-Origin", st, h)
	}
}

// DNS rebinding: a page at evil.example, whose name the attacker points
// at 127.0.0.1, is same-origin with itself and reads what the gateway
// answers. A listener on loopback, client or admin, answers only to this
// machine's names and server.allowed_hosts; others get 421 saying how to
// allow one.
func TestLoopbackListenersCheckHost(t *testing.T) {
	hs := newHostStack(t, mock.Config{}, func(c *config.Config) { c.Server.AllowedHosts = []string{"Gateway.Internal"} })
	json := map[string]string{"Content-Type": "application/json"}
	for _, host := range []string{"evil.example", "evil.example:8080", "10.0.0.1"} {
		if st, _, b := send(t, "GET", hs.admin+"/healthz", host, "", nil); st != http.StatusMisdirectedRequest || !strings.Contains(b, "server.allowed_hosts") {
			t.Errorf("admin with Host %s: %d %s; want 421 naming server.allowed_hosts", host, st, b)
		}
		if st, _, b := send(t, "GET", hs.admin+"/metrics", host, "", nil); st != http.StatusMisdirectedRequest {
			t.Errorf("admin /metrics with Host %s: %d %.100s; want 421", host, st, b)
		}
		if st, _, b := send(t, "POST", hs.url+"/v1/chat/completions", host, chatBody, json); st != http.StatusMisdirectedRequest || !strings.Contains(b, "server.allowed_hosts") {
			t.Errorf("client with Host %s: %d %s; want 421 naming server.allowed_hosts", host, st, b)
		}
	}
	for _, host := range []string{"", "localhost:9", "LOCALHOST", "127.0.0.1", "[::1]:80", "app.localhost", "gateway.internal:443"} {
		if st, _, b := send(t, "GET", hs.admin+"/healthz", host, "", nil); st != 200 {
			t.Errorf("admin with Host %q: %d %s; want 200", host, st, b)
		}
		if st, _, b := send(t, "POST", hs.url+"/v1/chat/completions", host, chatBody, json); st != 200 {
			t.Errorf("client with Host %q: %d %s; want 200", host, st, b)
		}
	}
}

// A provider's response headers reach the client by an allow-list: its
// request id, the rate-limit and timing headers the SDKs read. Its CORS
// headers (which would open the gateway to every web page), replay
// markers, account identity, cookies and server fingerprints stop at the
// gateway, on whole answers and streams alike.
func TestProviderResponseHeadersAreAllowListed(t *testing.T) {
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h := w.Header()
		for k, v := range map[string]string{
			"Access-Control-Allow-Origin": "*", "Access-Control-Allow-Credentials": "true", "Idempotent-Replayed": "true",
			"Openai-Organization": "org-gateway-account", "Set-Cookie": "session=1", "Server": "upstream/1.2", "Via": "1.1 cdn",
			"Strict-Transport-Security": "max-age=1", "Cache-Control": "public, max-age=86400", "X-Debug-Backend": "10.1.2.3",
			"X-Request-Id": "req-1", "Openai-Processing-Ms": "12", "X-Ratelimit-Remaining-Requests": "99", "X-Should-Retry": "false",
		} {
			h.Set(k, v)
		}
		if strings.Contains(string(b), `"stream":true`) {
			h.Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
			return
		}
		h.Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	t.Cleanup(evil.Close)
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		c.Providers[0].BaseURL = evil.URL + "/v1"
		c.Providers[0].Timeout = config.Duration(5 * time.Second)
	})
	for _, body := range []string{chatBody, `{"model":"mock-gpt","stream":true,"messages":[{"role":"user","content":"hi"}]}`} {
		status, h, b := s.do("/v1/chat/completions", body, nil)
		if status != 200 {
			t.Fatalf("status %d: %s", status, b)
		}
		for _, k := range []string{"Access-Control-Allow-Origin", "Access-Control-Allow-Credentials", "Idempotent-Replayed", "Openai-Organization",
			"Set-Cookie", "Server", "Via", "Strict-Transport-Security", "Cache-Control", "X-Debug-Backend"} {
			if v := h.Values(k); len(v) > 0 {
				t.Errorf("the provider's %s: %q reached the client", k, v)
			}
		}
		for k, want := range map[string]string{"X-Request-Id": "req-1", "Openai-Processing-Ms": "12", "X-Ratelimit-Remaining-Requests": "99", "X-Should-Retry": "false"} {
			if got := h.Get(k); got != want {
				t.Errorf("%s = %q, want the provider's %q", k, got, want)
			}
		}
	}
}

// The admin listener holds at most admin.max_connections connections:
// idle ones past that wait in the kernel's accept queue and take no file
// descriptor, so they cannot starve the client listener; one is served
// as soon as another closes.
func TestAdminListenerConnectionCap(t *testing.T) {
	hs := newHostStack(t, mock.Config{}, func(c *config.Config) { c.Admin.MaxConnections = 2 })
	addr := strings.TrimPrefix(hs.admin, "http://")
	get := func(c net.Conn) (*http.Response, error) {
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
			return nil, err
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return resp, err
	}
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if resp, err := get(c); err != nil || resp.StatusCode != 200 {
			t.Fatalf("connection %d: %v %v", len(held), resp, err)
		}
		held = append(held, c) // open and idle
	}
	third, err := net.Dial("tcp", addr) // the kernel accepts it; the gateway does not
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { third.Close() })
	third.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if resp, err := get(third); err == nil {
		t.Fatalf("a third admin connection was served (%d) while two were open, with admin.max_connections 2", resp.StatusCode)
	}
	// The request is written; the answer comes once a slot frees.
	held[0].Close()
	third.SetDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(third), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("after one closed, the waiting connection got %v %v; want 200", resp, err)
	}
	resp.Body.Close()
}
