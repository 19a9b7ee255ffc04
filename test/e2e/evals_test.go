package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/harness/procs"
)

const evalsConfig = `
listen: ${LISTEN}
admin_listen: ${ADMIN}
log: {format: json}
providers:
  - {name: primary, kind: openai, base_url: "http://${P}/v1"}
  - {name: backup, kind: anthropic, base_url: "http://${B}/v1"}
models:
  - name: chat
    targets: [{provider: primary, model: m1}, {provider: backup, model: m2}]
    evals:
      interval: 1s
      cases:
        - {name: arithmetic, prompt: "What is 17 * 23? Answer with the number only.", number: 391}
        - {name: capital, prompt: "Capital of Australia?", contains: Canberra}
evals: {max_calls_per_minute: 600}
`

const evalsScript = `
ttft: 5ms
tpot: 0s
answers:
  - {match: "17 * 23", reply: "391", wrong: "400"}
  - {match: "Australia", reply: "Canberra", wrong: "Sydney"}
`

// Fallback evals in real processes: sluice serve with two sluice mock
// providers, the primary scripted to answer the eval set wrongly. serve
// degrades the primary and logs it once, /admin/evals says why, clients
// are served by the backup (of the other kind, through translation),
// and an interrupt stops the process cleanly with its evals.
func TestEvalsInRealProcesses(t *testing.T) {
	bin := buildSluice(t)
	dir := t.TempDir()
	listen, admin, p, b := freeAddr(t), freeAddr(t), freeAddr(t), freeAddr(t)
	for _, up := range []struct{ addr, extra string }{{p, "quality: 0\n"}, {b, ""}} {
		script := filepath.Join(dir, up.addr+".yaml")
		if err := os.WriteFile(script, []byte(evalsScript+up.extra), 0o600); err != nil {
			t.Fatal(err)
		}
		start(t, ready("http://"+up.addr+"/stats"), bin, "mock", "--listen", up.addr, "--script", script)
	}
	cfg := filepath.Join(dir, "sluice.yaml")
	text := strings.NewReplacer("${LISTEN}", listen, "${ADMIN}", admin, "${P}", p, "${B}", b).Replace(evalsConfig)
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	// The test interrupts it itself; one still running at the end is
	// killed.
	serve := runUntilEnd(t, procs.Spec{Path: bin, Args: []string{"serve", "--config", cfg},
		Ready: ready("http://" + admin + "/readyz"), StopSignal: syscall.SIGKILL})
	waitLog(t, serve, `"state":"degraded"`)

	// Three runs of each target later, the transition is still logged once.
	type target struct {
		Provider     string
		PassRate     *float64 `json:"pass_rate"`
		Degraded     bool
		Calls        struct{ Pass, Fail, Error int }
		LastFailures []struct{ Case, Reason string } `json:"last_failures"`
	}
	var ts []target
	waitUntil(t, 15*time.Second, "three runs per target", func() bool {
		resp, err := http.Get("http://" + admin + "/admin/evals")
		if err != nil {
			t.Fatal(err)
		}
		var v struct{ Models []struct{ Targets []target } }
		err = json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		if err != nil || len(v.Models) != 1 {
			t.Fatalf("/admin/evals: %v %+v", err, v)
		}
		ts = v.Models[0].Targets
		return ts[0].Calls.Fail >= 6 && ts[1].Calls.Pass >= 6
	})
	if !ts[0].Degraded || *ts[0].PassRate != 0 || ts[1].Degraded || *ts[1].PassRate != 1 {
		t.Errorf("targets: %+v", ts)
	}
	// The failures say why, case by case. Runs of one target never
	// overlap, but a run's cases finish in either order, so the last
	// five hold both cases, in no fixed order.
	var saw []string
	for _, f := range ts[0].LastFailures {
		saw = append(saw, f.Case+": "+f.Reason)
	}
	for _, want := range []string{`arithmetic: want 391, got 400`, `capital: answer "Sydney" does not contain "Canberra"`} {
		if !slices.Contains(saw, want) {
			t.Errorf("primary's failures %q: none says %q", saw, want)
		}
	}
	if n := strings.Count(serve.Output(), `"msg":"eval"`); n != 1 {
		t.Errorf("%d eval transitions logged, want 1:\n%s", n, serve.Output())
	}

	resp, err := http.Post("http://"+listen+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"chat","messages":[{"role":"user","content":"What is 17 * 23?"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"content":"391"`) || !strings.Contains(string(body), `"chat.completion"`) {
		t.Errorf("client answer %d: %s", resp.StatusCode, body)
	}

	serve.Signal(os.Interrupt)
	select {
	case <-serve.Done():
		if err := serve.Err(); err != nil {
			t.Errorf("serve exited: %v\n%s", err, serve.Output())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("serve did not stop on an interrupt:\n%s", serve.Output())
	}
}
