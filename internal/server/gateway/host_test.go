package gateway_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/server/gateway"
)

// hostStack is a Host on real listeners in front of a fake provider.
type hostStack struct {
	h          *gateway.Host
	url, admin string
	mockURL    string
	served     chan error
	// stop shuts the host down (at once: no drain delay) and waits for
	// it; the test's end calls it too, and the second call does
	// nothing.
	stop func()
}

func newHostStack(t *testing.T, mc mock.Config, mutate func(*config.Config)) *hostStack {
	t.Helper()
	base, stop, err := mock.New(mc).Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	hs := hostStackAt(t, base, mutate)
	hs.mockURL = base
	return hs
}

// hostStackAt serves a Host on loopback in front of the provider at
// base (the default config, changed by mutate), until the test ends.
func hostStackAt(t *testing.T, base string, mutate func(*config.Config)) *hostStack {
	t.Helper()
	return serveHost(t, hostConfig(base, mutate), io.Discard)
}

// serveHost serves a Host built from cfg, logging to logs, on loopback
// until the test ends.
func serveHost(t *testing.T, cfg *config.Config, logs io.Writer) *hostStack {
	t.Helper()
	h, err := gateway.NewHost(cfg, gateway.Options{Logger: gateway.NewLogger(logs, cfg.Log)})
	if err != nil {
		t.Fatal(err)
	}
	client, _ := net.Listen("tcp", "127.0.0.1:0")
	admin, _ := net.Listen("tcp", "127.0.0.1:0")
	hs := &hostStack{h: h, url: "http://" + client.Addr().String(), admin: "http://" + admin.Addr().String(), served: make(chan error, 1)}
	go func() { hs.served <- h.Serve(client, admin) }()
	hs.stop = sync.OnceFunc(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		h.Shutdown(ctx, 0)
	})
	t.Cleanup(hs.stop)
	return hs
}

func hostConfig(mockBase string, mutate func(*config.Config)) *config.Config {
	cfg := config.Default(mockBase)
	if mutate != nil {
		mutate(cfg)
	}
	return cfg
}

func (hs *hostStack) get(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// A reload does not drop or disturb a request in flight: a stream that
// started on the old configuration ends whole on it, new requests see
// the new one, and a configuration that cannot be served is refused with
// the old one still serving.
func TestReloadDoesNotDisturbInFlight(t *testing.T) {
	hs := newHostStack(t, mock.Config{TTFT: 10 * time.Millisecond, TPOT: 20 * time.Millisecond}, nil)
	resp, err := http.Post(hs.url+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"mock-gpt","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	// Mid-stream, a new configuration with another model.
	if err := hs.h.Reload(hostConfig(hs.mockURL, func(c *config.Config) {
		c.Models = append(c.Models, config.Model{Name: "added", Targets: []config.Target{{Provider: "mock-openai", Model: "m"}}})
	})); err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || !strings.HasSuffix(string(body), "data: [DONE]\n\n") || strings.Contains(string(body), "error") {
		t.Fatalf("the stream in flight across the reload: %v\n%s", err, body)
	}
	status, _ := postStatus(t, hs.url, `{"model":"added","messages":[{"role":"user","content":"hi"}]}`)
	if status != 200 {
		t.Fatalf("the reloaded model: status %d", status)
	}
	// A key variable that is not set: refused, and the running one stays.
	bad := hostConfig(hs.mockURL, func(c *config.Config) { c.Providers[0].APIKeyEnv = "SLUICE_TEST_UNSET_KEY_VAR" })
	if err := hs.h.Reload(bad); err == nil || !strings.Contains(err.Error(), "SLUICE_TEST_UNSET_KEY_VAR") {
		t.Fatalf("Reload of a config with an unset key = %v", err)
	}
	if status, _ := postStatus(t, hs.url, `{"model":"added","messages":[{"role":"user","content":"hi"}]}`); status != 200 {
		t.Fatalf("after a refused reload: status %d", status)
	}
}

func postStatus(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Shutdown fails /readyz first, lets a request in flight finish within
// the grace, and ends one that outlasts it with an error event rather
// than a cut.
func TestShutdownDrains(t *testing.T) {
	hs := newHostStack(t, mock.Config{TTFT: 10 * time.Millisecond, TPOT: 100 * time.Millisecond}, nil)
	open := func(tokens string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, hs.url+"/v1/chat/completions",
			strings.NewReader(`{"model":"mock-gpt","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("X-Mock-Output-Tokens", tokens)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	short, long := open("5"), open("200") // 0.5 s and 20 s of tokens
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- hs.h.Shutdown(ctx, 300*time.Millisecond) }()
	time.Sleep(100 * time.Millisecond)
	if st := hs.get(t, hs.admin+"/readyz"); st != 503 {
		t.Fatalf("/readyz during the drain delay: %d, want 503", st)
	}
	shortBody, _ := io.ReadAll(short.Body)
	if !strings.HasSuffix(string(shortBody), "data: [DONE]\n\n") {
		t.Fatalf("a request that fits in the grace was cut: %s", shortBody)
	}
	longBody, _ := io.ReadAll(long.Body)
	if !strings.Contains(string(longBody), "shutting down") || !strings.HasSuffix(string(longBody), "\n\n") {
		t.Fatalf("a request that outlasts the grace: %q; want an error event saying why", longBody[max(0, len(longBody)-300):])
	}
	if err := <-done; err == nil {
		t.Fatal("Shutdown reported a clean drain, yet a request outlasted the grace")
	}
}

// A Shutdown that comes before Serve has run (a signal in the moment
// after start) leaves nothing serving: Serve then returns at once and
// closes its listeners. Before, Serve started servers that Shutdown had
// never seen, and whoever waited for Serve waited forever (the demo's
// Ctrl-C, now and then). A second Shutdown waits for the first.
func TestShutdownBeforeServe(t *testing.T) {
	cfg := hostConfig("http://127.0.0.1:1/v1", nil)
	h, err := gateway.NewHost(cfg, gateway.Options{Logger: gateway.NewLogger(io.Discard, cfg.Log)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.Shutdown(ctx, 0); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if err := h.Shutdown(ctx, 0); err != nil {
		t.Fatalf("a second shutdown: %v", err)
	}
	client, _ := net.Listen("tcp", "127.0.0.1:0")
	admin, _ := net.Listen("tcp", "127.0.0.1:0")
	served := make(chan error, 1)
	go func() { served <- h.Serve(client, admin) }()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve after Shutdown: %v, want nil", err)
		}
	case <-ctx.Done():
		t.Fatal("Serve after Shutdown still serving after 10 s")
	}
	if c, err := net.Dial("tcp", client.Addr().String()); err == nil {
		c.Close()
		t.Error("the client listener still accepts after Serve returned")
	}
}
