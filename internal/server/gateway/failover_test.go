package gateway_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
)

// A primary that answers slowly but never errors trips its slow-call
// breaker while its calls are still in flight; new requests then go to
// the backup at once, and the breaker's transition is logged once with
// its numbers.
func TestSlowPrimaryFailsOverToBackup(t *testing.T) {
	backup, addBackup := withBackup(t, mock.Config{TTFT: 10 * time.Millisecond, OutputTokens: mock.TokenRange{Min: 1}})
	s := newStack(t, mock.Config{TTFT: 2 * time.Second, OutputTokens: mock.TokenRange{Min: 1}}, func(c *config.Config) {
		c.Log.Format = "json"
		c.Providers[0].Breaker = &config.Breaker{
			SlowThreshold: config.Duration(200 * time.Millisecond), MinCalls: 4, Window: config.Duration(2 * time.Second),
		}
		addBackup(c)
	})

	// Four calls to the slow primary; they pass 200 ms in flight and trip
	// the breaker long before they answer.
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := s.post(context.Background(), "/v1/chat/completions", chatBody, nil)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	waitFor(t, "the breaker to open", func() bool { return strings.Contains(s.logText(), `"to":"open"`) })

	start := time.Now()
	status, _, body := s.do("/v1/chat/completions", chatBody, nil)
	if status != 200 || time.Since(start) > time.Second {
		t.Fatalf("status %d after %v: %s", status, time.Since(start), body)
	}
	if got := backup.LastRequest().Model; got != "backup-model" {
		t.Errorf("backup saw model %q, want the backup target's name", got)
	}
	wg.Wait()
	logs := s.logText()
	if n := strings.Count(logs, `"msg":"breaker"`); n < 1 || !strings.Contains(logs, `"reason":"slow_rate"`) {
		t.Errorf("want the breaker transition logged with reason slow_rate:\n%s", logs)
	}
	resp, err := http.Get(s.url + "/v1/models") // the client listener still serves
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	mf, err := s.gw.Metrics().Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range mf {
		if f.GetName() == "sluice_failovers_total" {
			found = true
		}
	}
	if !found {
		t.Error("no sluice_failovers_total metric")
	}
}
