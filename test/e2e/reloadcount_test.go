package e2e

import (
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
)

// A SIGHUP whose file does not parse is refused, and counted as refused
// in sluice_config_reloads_total; before, only refusals that reached the
// gateway (a key not set) were counted, so a broken file left no trace
// in the metrics.
func TestRefusedReloadIsCounted(t *testing.T) {
	_, admin, path, serve := serveProcess(t, signalsConfig)
	os.WriteFile(path, []byte("providers: [\n"), 0o600)
	serve.Signal(syscall.SIGHUP)
	waitLog(t, serve, "SIGHUP: configuration refused")
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	const want = `sluice_config_reloads_total{result="refused"} 1`
	if !strings.Contains(string(body), want+"\n") {
		var got []string
		for _, l := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(l, "sluice_config_reloads_total") {
				got = append(got, l)
			}
		}
		t.Fatalf("after one refused reload /metrics has %q, want %q", got, want)
	}
}
