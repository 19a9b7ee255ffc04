package gateway_test

import (
	"context"
	"io"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/server/gateway"
	"github.com/sluice-gw/sluice/internal/server/spendstore"
)

// spendConfig gives key k (sk-k) the spend limits s, at prices where a
// token of output costs a cent (10,000 $ per million), so a few tokens
// spend a small limit.
func spendConfig(t *testing.T, s config.SpendLimits) func(*config.Config) {
	return func(c *config.Config) {
		c.Keys = []config.Key{{Name: "k", SHA256: config.KeyHash("sk-k"), Spend: &s}}
		c.State.Dir = t.TempDir()
		c.Prices = map[string]config.Price{}
		for _, m := range c.Models {
			for _, tg := range m.Targets {
				c.Prices[tg.Model] = config.Price{Input: 1, Output: 10000}
			}
		}
	}
}

func dollars(d float64) *float64 { return &d }

func memoryStore(o *gateway.Options) { o.SpendStore = spendstore.NewMemory() }

// A key past its daily limit is refused in its client's dialect: 429,
// insufficient_quota / spend_limit_exceeded (OpenAI) or rate_limit_error
// (Anthropic), a message naming the limit, spent against it and the
// reset, Retry-After until the reset and x-should-retry: false.
func TestSpendRefusal(t *testing.T) {
	for _, c := range []struct {
		name, path, body, typ string
		hdr                   map[string]string
	}{
		{"openai", "/v1/chat/completions", `{"model":"mock-gpt","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, "insufficient_quota", bearer("sk-k")},
		{"anthropic", "/v1/messages", `{"model":"mock-claude","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, "rate_limit_error",
			map[string]string{"X-Api-Key": "sk-k", "anthropic-version": "2023-06-01"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newStack(t, mock.Config{}, spendConfig(t, config.SpendLimits{Daily: dollars(0.01)}), memoryStore)
			// Under the limit, the first request is served whatever its
			// maximum; its five tokens cost 5 cents, past the limit.
			if status, _, b := s.do(c.path, c.body, c.hdr); status != 200 {
				t.Fatalf("first request: %d %s", status, b)
			}
			status, h, b := s.do(c.path, c.body, c.hdr)
			if status != 429 || errorType(t, b) != c.typ {
				t.Fatalf("second request: %d %s", status, b)
			}
			if h.Get("X-Should-Retry") != "false" {
				t.Errorf("x-should-retry %q", h.Get("X-Should-Retry"))
			}
			now := time.Now().UTC()
			midnight := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
			ra, _ := strconv.Atoi(h.Get("Retry-After"))
			if want := midnight.Sub(now).Seconds(); float64(ra) < want-5 || float64(ra) > want+5 {
				t.Errorf("Retry-After %d, want about %.0f (seconds to midnight UTC)", ra, want)
			}
			msg := string(b)
			for _, want := range []string{`key \"k\"'s daily spend limit`, "of $0.01 spent", "resets at " + midnight.Format(time.RFC3339)} {
				if !strings.Contains(msg, want) {
					t.Errorf("message %s lacks %q", msg, want)
				}
			}
			if c.name == "openai" && !strings.Contains(msg, `"code":"spend_limit_exceeded"`) {
				t.Errorf("no spend_limit_exceeded code: %s", msg)
			}
			if v := seriesValue(t, s, `sluice_spend_refusals_total{name="k",scope="key",window="daily"}`); v != 1 {
				t.Errorf("refusals metric %v", v)
			}
		})
	}
}

// Past the soft share of a limit, answers say so; the metrics show
// spend and limit.
func TestSpendSoftWarningAndMetrics(t *testing.T) {
	s := newStack(t, mock.Config{}, spendConfig(t, config.SpendLimits{Daily: dollars(1), Soft: 0.5}), memoryStore)
	body := `{"model":"mock-gpt","max_tokens":30,"messages":[{"role":"user","content":"hi"}]}`
	hdr := bearer("sk-k")
	hdr["X-Mock-Output-Tokens"] = "30"
	status, h, b := s.do("/v1/chat/completions", body, hdr)
	if status != 200 || h.Get("X-Sluice-Spend-Warning") != "" {
		t.Fatalf("first (30 %% of the limit reserved): %d %q %s", status, h.Get("X-Sluice-Spend-Warning"), b)
	}
	status, h, _ = s.do("/v1/chat/completions", body, hdr)
	w := h.Get("X-Sluice-Spend-Warning")
	if status != 200 || !strings.HasPrefix(w, `scope=key; name="k"; window=daily; spent=0.6`) {
		t.Fatalf("second (60 %%): %d, warning %q", status, w)
	}
	spent := seriesValue(t, s, `sluice_spend_dollars{name="k",scope="key",window="daily"}`)
	if spent < 0.6 || spent > 0.61 {
		t.Fatalf("sluice_spend_dollars %v, want 0.60 and the input's cost", spent)
	}
	if v := seriesValue(t, s, `sluice_spend_limit_dollars{name="k",scope="key",window="daily"}`); v != 1 {
		t.Fatalf("sluice_spend_limit_dollars %v", v)
	}
}

// Without a store, spend lives in state.dir's journal: a host reloaded,
// and a host started afresh on the same directory, each refuse a key
// whose limit is spent.
func TestSpendFileSurvivesReloadAndRestart(t *testing.T) {
	base, stop, err := mock.New(mock.Config{}).Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	cfg := config.Default(base)
	spendConfig(t, config.SpendLimits{Daily: dollars(0.01)})(cfg)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	body := `{"model":"mock-gpt","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`
	start := func() (*gateway.Host, *stack) {
		h, err := gateway.NewHost(cfg, gateway.Options{Logger: gateway.NewLogger(io.Discard, cfg.Log)})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return h, &stack{t: t, url: srv.URL, gw: h.Gateway()}
	}
	h, s := start()
	if status, _, b := s.do("/v1/chat/completions", body, bearer("sk-k")); status != 200 {
		t.Fatalf("first: %d %s", status, b)
	}
	if status, _, _ := s.do("/v1/chat/completions", body, bearer("sk-k")); status != 429 {
		t.Fatalf("second: %d, want 429", status)
	}
	if err := h.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	if status, _, _ := s.do("/v1/chat/completions", body, bearer("sk-k")); status != 429 {
		t.Fatalf("after a reload: %d, want 429", status)
	}
	if err := h.Shutdown(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	h2, s2 := start()
	defer h2.Shutdown(context.Background(), 0)
	if status, _, b := s2.do("/v1/chat/completions", body, bearer("sk-k")); status != 429 || !strings.Contains(string(b), "of $0.01 spent") {
		t.Fatalf("after a restart: %d %s, want 429", status, b)
	}
}

// A hedge reserves its own maximum before it is sent, and is not sent
// when the key's spend limit cannot take it; the request is served by
// its first call. With room, the same hedge goes out, and the call that
// lost the race is billed its input.
func TestSpendHedgeReservesItsOwn(t *testing.T) {
	body := `{"model":"mock-gpt","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
	for _, c := range []struct {
		limit  float64
		hedges float64
	}{{0.05, 0}, {10, 1}} {
		s := newStack(t, mock.Config{}, func(cfg *config.Config) {
			spendConfig(t, config.SpendLimits{Daily: dollars(c.limit)})(cfg)
			cfg.Hedging = config.Budget{Budget: 1, Burst: 10}
			for i := range cfg.Models {
				if cfg.Models[i].Name == "mock-gpt" {
					cfg.Models[i].HedgeAfter = config.HedgeDelay{Fixed: config.Duration(30 * time.Millisecond)}
				}
			}
		}, memoryStore)
		hdr := bearer("sk-k")
		hdr["X-Mock-Latency"] = "150ms"
		hdr["X-Mock-Output-Tokens"] = "4"
		if status, _, b := s.do("/v1/chat/completions", body, hdr); status != 200 {
			t.Fatalf("limit $%v: %d %s", c.limit, status, b)
		}
		fired := max(seriesValue(t, s, `sluice_hedges_total{model="mock-gpt",result="fired"}`), 0)
		refused := max(seriesValue(t, s, `sluice_spend_refusals_total{name="k",scope="key",window="daily"}`), 0)
		if fired != c.hedges || refused != 1-c.hedges {
			t.Errorf("limit $%v: %v hedges fired, %v refused for spend; want %v fired", c.limit, fired, refused, c.hedges)
		}
		// The answer: 4 tokens at a cent and its input; a losing hedge
		// adds its input (a few micro-dollars) once it is settled.
		var spent float64
		waitFor(t, "the spend to settle", func() bool {
			spent = seriesValue(t, s, `sluice_spend_dollars{name="k",scope="key",window="daily"}`)
			return spent < 0.0401+0.0001*c.hedges && spent >= 0.04
		})
		t.Logf("limit $%v: hedges fired %v, spend $%.6f", c.limit, fired, spent)
	}
}
