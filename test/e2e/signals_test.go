package e2e

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/harness/procs"
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
// process (stopped by the test's cleanup if still running).
func serveProcess(t *testing.T, text string) (listen, admin, path string, serve *procs.Proc) {
	t.Helper()
	bin := buildSluice(t)
	listen, admin, up := freeAddr(t), freeAddr(t), freeAddr(t)
	start(t, ready("http://"+up+"/stats"), bin, "mock", "--listen", up, "--ttft", "10ms", "--tpot", "20ms")
	path = filepath.Join(t.TempDir(), "sluice.yaml")
	write := func(s string) {
		s = strings.NewReplacer("${LISTEN}", listen, "${ADMIN}", admin, "${UP}", up).Replace(s)
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(text)
	// A test that signals it itself ends it at once if it is still
	// running at the end: a kill, as the test is over.
	serve = runUntilEnd(t, procs.Spec{Path: bin, Args: []string{"serve", "--config", path},
		Ready: ready("http://" + admin + "/readyz"), StopSignal: syscall.SIGKILL})
	return listen, admin, path, serve
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

// waitLog waits up to 5 s for p's log to say s.
func waitLog(t *testing.T, p *procs.Proc, s string) {
	t.Helper()
	await(t, p, 5*time.Second, procs.LogLine(s))
}

// SIGHUP reloads the configuration without disturbing the stream in
// flight; a broken file is refused and logged, and the old configuration
// keeps serving. SIGTERM fails /readyz first, then lets the stream in
// flight finish, and the process exits 0 with its log flushed.
func TestSignals(t *testing.T) {
	listen, admin, path, serve := serveProcess(t, signalsConfig)
	resp := stream(t, listen, "chat", "100") // about 2 s of tokens

	// A new model, by SIGHUP, mid-stream.
	added := strings.Replace(signalsConfig, "models:\n", "models:\n  - {name: added, targets: [{provider: up, model: m}]}\n", 1)
	added = strings.NewReplacer("${LISTEN}", listen, "${ADMIN}", admin, "${UP}", upFrom(t, path)).Replace(added)
	os.WriteFile(path, []byte(added), 0o600)
	serve.Signal(syscall.SIGHUP)
	waitLog(t, serve, "SIGHUP: configuration reloaded")
	if st := status(t, listen, "added"); st != 200 {
		t.Fatalf("the reloaded model answered %d", st)
	}
	// A broken file: refused, logged, and the running one stays.
	os.WriteFile(path, []byte("providers: [\n"), 0o600)
	serve.Signal(syscall.SIGHUP)
	waitLog(t, serve, "SIGHUP: configuration refused")
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
	serve.Signal(syscall.SIGTERM)
	time.Sleep(100 * time.Millisecond)
	if r, err := http.Get("http://" + admin + "/readyz"); err != nil || r.StatusCode != 503 {
		t.Fatalf("/readyz during the drain delay: %v %v", r, err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.HasSuffix(string(body), "data: [DONE]\n\n") {
		t.Fatalf("the stream in flight at SIGTERM was cut: %.300s", body)
	}
	if err := serve.Wait(); err != nil {
		t.Fatalf("sluice serve exited with %v after SIGTERM\n%s", err, serve.Output())
	}
	if took := time.Since(sent); took < 500*time.Millisecond {
		t.Errorf("exited %v after SIGTERM, before its 500ms drain delay", took)
	}
	if out := serve.Output(); !strings.Contains(out, "shutdown complete") || !strings.Contains(out, "model=chat") {
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
