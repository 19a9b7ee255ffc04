package e2e

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const signalsConfig = `listen: ${LISTEN}
admin_listen: ${ADMIN}
server: {drain_delay: 500ms, shutdown_grace: 5s}
providers:
  - {name: up, kind: openai, base_url: "http://${UP}/v1", forward_headers: [X-Mock-Output-Tokens]}
models:
  - {name: chat, targets: [{provider: up, model: m}]}
`

// serveProcess runs sluice serve on a config written from text, with a
// mock provider, and returns the addresses, the config's path and the
// command (stopped by the test's cleanup if still running).
func serveProcess(t *testing.T, text string) (listen, admin, path string, cmd *exec.Cmd, out *syncBuffer) {
	t.Helper()
	bin := buildSluice(t)
	listen, admin, up := freeAddr(t), freeAddr(t), freeAddr(t)
	start(t, bin, "mock", "--listen", up, "--ttft", "10ms", "--tpot", "20ms")
	waitHTTP(t, "http://"+up+"/stats")
	path = filepath.Join(t.TempDir(), "sluice.yaml")
	write := func(s string) {
		s = strings.NewReplacer("${LISTEN}", listen, "${ADMIN}", admin, "${UP}", up).Replace(s)
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(text)
	out = &syncBuffer{}
	cmd = exec.Command(bin, "serve", "--config", path)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	waitHTTP(t, "http://"+admin+"/readyz")
	return listen, admin, path, cmd, out
}

func stream(t *testing.T, listen, model, tokens string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+listen+"/v1/chat/completions",
		strings.NewReader(`{"model":"`+model+`","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("X-Mock-Output-Tokens", tokens)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// syncBuffer is a process's output, read while the process writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func waitLog(t *testing.T, out *syncBuffer, s string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("the log never said %q:\n%s", s, out)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// SIGHUP reloads the configuration without disturbing the stream in
// flight; a broken file is refused and logged, and the old configuration
// keeps serving. SIGTERM fails /readyz first, then lets the stream in
// flight finish, and the process exits 0 with its log flushed.
func TestSignals(t *testing.T) {
	listen, admin, path, cmd, out := serveProcess(t, signalsConfig)
	resp := stream(t, listen, "chat", "100") // about 2 s of tokens

	// A new model, by SIGHUP, mid-stream.
	added := strings.Replace(signalsConfig, "models:\n", "models:\n  - {name: added, targets: [{provider: up, model: m}]}\n", 1)
	added = strings.NewReplacer("${LISTEN}", listen, "${ADMIN}", admin, "${UP}", upFrom(t, path)).Replace(added)
	os.WriteFile(path, []byte(added), 0o600)
	cmd.Process.Signal(syscall.SIGHUP)
	waitLog(t, out, "SIGHUP: configuration reloaded")
	if st := status(t, listen, "added"); st != 200 {
		t.Fatalf("the reloaded model answered %d", st)
	}
	// A broken file: refused, logged, and the running one stays.
	os.WriteFile(path, []byte("providers: [\n"), 0o600)
	cmd.Process.Signal(syscall.SIGHUP)
	waitLog(t, out, "SIGHUP: configuration refused")
	if st := status(t, listen, "added"); st != 200 {
		t.Fatalf("after a refused reload the model answered %d", st)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || !strings.HasSuffix(string(body), "data: [DONE]\n\n") {
		t.Fatalf("the stream across two reloads: %v\n%.300s", err, body)
	}

	// SIGTERM with a stream in flight.
	resp = stream(t, listen, "chat", "50") // about 1 s
	sent := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	time.Sleep(100 * time.Millisecond)
	if r, err := http.Get("http://" + admin + "/readyz"); err != nil || r.StatusCode != 503 {
		t.Fatalf("/readyz during the drain delay: %v %v", r, err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.HasSuffix(string(body), "data: [DONE]\n\n") {
		t.Fatalf("the stream in flight at SIGTERM was cut: %.300s", body)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("sluice serve exited with %v after SIGTERM\n%s", err, out)
	}
	if took := time.Since(sent); took < 500*time.Millisecond {
		t.Errorf("exited %v after SIGTERM, before its 500ms drain delay", took)
	}
	if !strings.Contains(out.String(), "shutdown complete") || !strings.Contains(out.String(), "model=chat") {
		t.Errorf("the log was not flushed on the way out:\n%s", out)
	}
}

// upFrom reads the provider's address back from the written config.
func upFrom(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "http://") + len("http://")
	return s[i : i+strings.Index(s[i:], "/v1")]
}

func status(t *testing.T, listen, model string) int {
	t.Helper()
	resp, err := http.Post("http://"+listen+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}
