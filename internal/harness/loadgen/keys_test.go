package loadgen

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/server/gateway"
	"github.com/sluice-gw/sluice/internal/sim/report"
	"github.com/sluice-gw/sluice/internal/sim/scenario"
)

// Each stream sends its own key, the way its API carries one, with its
// prompt size; a 429 is rate limited (and retried), a degraded answer is
// counted, and the report breaks the row down by stream.
func TestStreamsSendTheirKeys(t *testing.T) {
	g := newFake(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/messages" {
			w.Header().Set("X-Sluice-Degraded", "max_tokens=64")
			answerAnthropic(w)
			return
		}
		w.Header().Set("Retry-After-Ms", "5")
		answerStatus(w, http.StatusTooManyRequests, `{"error":{"type":"rate_limit_error"}}`)
	})
	f := loadScenario(t, "keys.yaml", func(s *scenario.Scenario) {
		s.Clients.Retry = scenario.Retry{Strategy: "immediate", MaxAttempts: 2}
	})
	row := mustRun(t, f, Options{Target: g.url})
	var openai, anthropic int
	for _, h := range g.seen() {
		var body struct {
			Model    string `json:"model"`
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(h.body, &body); err != nil || len(body.Messages) != 1 {
			t.Fatalf("body %q: %v", h.body, err)
		}
		switch h.path {
		case "/v1/chat/completions":
			openai++
			if got := h.hdr.Get("Authorization"); got != "Bearer sk-sim-tenant-a" || h.hdr.Get("X-Api-Key") != "" || body.Model != "gpt" {
				t.Errorf("stream a sent Authorization %q, x-api-key %q, model %q", got, h.hdr.Get("X-Api-Key"), body.Model)
			}
			if n := mock.EstimateTokens(len(body.Messages[0].Content)); n != scenario.DefaultPromptTokens {
				t.Errorf("stream a's prompt is %d tokens, want the default %d", n, scenario.DefaultPromptTokens)
			}
		case "/v1/messages":
			anthropic++
			if got := h.hdr.Get("X-Api-Key"); got != "sk-sim-tenant-b" || h.hdr.Get("Authorization") != "" || body.Model != "claude" {
				t.Errorf("stream b sent x-api-key %q, Authorization %q, model %q", got, h.hdr.Get("Authorization"), body.Model)
			}
			if p := h.hdr.Get("X-Sluice-Priority"); p != "background" {
				t.Errorf("stream b's key is background, but it sent X-Sluice-Priority %q", p)
			}
			if n := mock.EstimateTokens(len(body.Messages[0].Content)); n != 50 {
				t.Errorf("stream b's prompt is %d tokens, want 50", n)
			}
		default:
			t.Errorf("request to %s", h.path)
		}
	}
	if openai != 2*anthropic || anthropic != 10 {
		t.Errorf("%d OpenAI and %d Anthropic requests; want each of 10 a twice (retried 429) and 10 b", openai, anthropic)
	}
	a, b := row.Stream("a"), row.Stream("b")
	if a == nil || b == nil || len(row.Streams) != 2 {
		t.Fatalf("streams %v", row.Streams)
	}
	if a.Counts[report.RateLimited] != 10 || b.Counts[report.OK] != 10 || b.Degraded != 10 || row.Degraded != 10 || a.Degraded != 0 {
		t.Errorf("a %v, b %v (degraded %d), row degraded %d", a.Counts, b.Counts, b.Degraded, row.Degraded)
	}
	var out bytes.Buffer
	report.WriteTable(&out, []*report.Row{row})
	for _, want := range []string{"rateLimited", "degraded", "keys, by stream:"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

// A stream's key must come with its plaintext.
func TestStreamKeyNeedsPlaintext(t *testing.T) {
	f := loadScenario(t, "keys.yaml", func(s *scenario.Scenario) { delete(s.Keys, "tenant-b") })
	_, err := Run(t.Context(), f, Options{Target: "http://127.0.0.1:1"})
	var ce *ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "scenario.keys has no plaintext for it; add scenario.keys.tenant-b") {
		t.Errorf("error %v", err)
	}
}

// Through the real gateway: tenant a's key has a budget of 60 requests a
// minute (10 at once) and sends 100 in a second; b's has none. a's excess is refused
// 429 at its key, and b is answered in full.
func TestKeyBudgetsAgainstTheGateway(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	m := mock.New(mock.Config{Seed: 3, TTFT: 20 * ms, TPOT: ms})
	base, stop, err := m.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	// The gateway runs the scenario file's own config, pointed at the
	// mock, with a budget on tenant a's key.
	raw, err := os.ReadFile("testdata/keys.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte(strings.ReplaceAll(string(raw), "http://127.0.0.1:1", base)), "keys.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Keys[0].Limits.RPM = 60
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(cfg, gateway.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	srv := httptest.NewServer(g.Handler())
	defer srv.Close()

	f := loadScenario(t, "keys.yaml", func(s *scenario.Scenario) {
		s.Clients.Rate = []scenario.RateStep{{RPS: 100}}
		s.Clients.Streams[0].Rate = []scenario.RateStep{{RPS: 20}}
	})
	start := time.Now()
	row := mustRun(t, f, Options{Target: srv.URL})
	var out bytes.Buffer
	report.WriteTable(&out, []*report.Row{row})
	t.Logf("took %v\n%s", time.Since(start), out.String())
	a, b := row.Stream("a"), row.Stream("b")
	// Its burst (10 s of 60 a minute: 10), and one more a second.
	burst := int(cfg.Keys[0].Limits.RequestBurst())
	if a.Counts[report.OK] < burst || a.Counts[report.OK] > burst+2 || a.Counts[report.RateLimited] < 30 {
		t.Errorf("a: %v; want about %d answered (its burst) and the rest rate limited", a.Counts, burst)
	}
	if b.Counts[report.OK] != b.Counts.Total() || b.Counts.Total() < 15 {
		t.Errorf("b: %v; want every request answered", b.Counts)
	}
}
