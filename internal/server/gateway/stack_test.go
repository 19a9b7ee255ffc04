package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/server/gateway"
)

// stack is a gateway in front of a mock provider, both on real loopback
// sockets.
type stack struct {
	t     *testing.T
	url   string
	gw    *gateway.Gateway
	mock  *mock.Server
	logs  *bytes.Buffer
	logMu *sync.Mutex
}

func newStack(t *testing.T, mc mock.Config, mutate func(*config.Config), opts ...func(*gateway.Options)) *stack {
	t.Helper()
	m := mock.New(mc)
	base, stop, err := m.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	cfg := config.Default(base)
	if mutate != nil {
		mutate(cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("test config invalid: %v", err)
	}
	logs := &bytes.Buffer{}
	sw := &syncWriter{w: logs}
	o := gateway.Options{Logger: gateway.NewLogger(sw, cfg.Log)}
	for _, f := range opts {
		f(&o)
	}
	g, err := gateway.New(cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(g.Close)
	s := &stack{t: t, url: srv.URL, gw: g, mock: m, logs: logs, logMu: &sw.mu}
	t.Cleanup(s.assertDrained)
	return s
}

// assertDrained checks invariant 1 after every test: every admitted
// request gave its slot back.
func (s *stack) assertDrained() {
	deadline := time.Now().Add(2 * time.Second)
	for {
		snap := s.gw.Runner().Snapshot()
		total := snap.Queued[0] + snap.Queued[1] + snap.Queued[2]
		if snap.InFlight == 0 && total == 0 {
			return
		}
		if time.Now().After(deadline) {
			s.t.Errorf("slots leaked: in flight %d, queued %v", snap.InFlight, snap.Queued)
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (s *stack) post(ctx context.Context, path, body string, hdr map[string]string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url+path, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return http.DefaultClient.Do(req)
}

// do posts and reads the whole answer.
func (s *stack) do(path, body string, hdr map[string]string) (int, http.Header, []byte) {
	s.t.Helper()
	resp, err := s.post(context.Background(), path, body, hdr)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// get sends a GET and reads the whole answer.
func (s *stack) get(path string, hdr map[string]string) (int, http.Header, []byte) {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.url+path, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// waitFor polls cond until it holds or ten seconds pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	// Ten seconds: a condition that holds in milliseconds on an idle
	// machine took over two under the race detector on a loaded
	// two-core one (three slow uploads held, in the full suite).
	waitWithin(t, 10*time.Second, 2*time.Millisecond, what, cond)
}

// waitWithin polls cond every poll until it holds, or fails the test
// after d.
func waitWithin(t *testing.T, d, poll time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(poll)
	}
}

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("response is not JSON: %v\n%s", err, b)
	}
	return v
}

// errorType reads the error type from either dialect's error shape.
func errorType(t *testing.T, b []byte) string {
	t.Helper()
	v := decode(t, b)
	e, _ := v["error"].(map[string]any)
	if e == nil {
		t.Fatalf("no error object in %s", b)
	}
	typ, _ := e["type"].(string)
	if _, ok := e["message"].(string); !ok {
		t.Fatalf("error has no message: %s", b)
	}
	return typ
}

// sseEvents reads SSE events from r, calling fn for each data payload.
func sseEvents(r io.Reader, fn func(data string) bool) error {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			if !fn(d) {
				return nil
			}
		}
	}
	return sc.Err()
}

// syncWriter lets concurrent handlers share one log buffer.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

func (s *stack) logText() string {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	return s.logs.String()
}

// withBackup starts a second fake provider, "backup", and returns a
// config change that adds it to mock-gpt's targets, after the primary.
func withBackup(t *testing.T, mc mock.Config) (*mock.Server, func(*config.Config)) {
	t.Helper()
	backup := mock.New(mc)
	url, stop, err := backup.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return backup, func(c *config.Config) {
		c.Providers = append(c.Providers, config.Provider{
			Name: "backup", Kind: "openai", BaseURL: url + "/v1", Timeout: config.Duration(10 * time.Second),
		})
		c.Models[0].Targets = append(c.Models[0].Targets, config.Target{Provider: "backup", Model: "backup-model"})
	}
}

// lagMeter measures how late this machine wakes a sleeping goroutine
// while a test runs, so a timing assertion allows the slack the machine
// actually has (a busy two-core box can be tens of milliseconds late)
// rather than a guess that flakes.
type lagMeter struct {
	worst atomic.Int64
	stop  chan struct{}
	done  chan struct{}
}

func measureLag() *lagMeter {
	m := &lagMeter{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for {
			select {
			case <-m.stop:
				return
			default:
			}
			start := time.Now()
			time.Sleep(time.Millisecond)
			if late := int64(time.Since(start) - time.Millisecond); late > m.worst.Load() {
				m.worst.Store(late)
			}
		}
	}()
	return m
}

// Worst stops the meter and reports the worst lateness it saw.
func (m *lagMeter) Worst() time.Duration {
	close(m.stop)
	<-m.done
	return time.Duration(m.worst.Load())
}
