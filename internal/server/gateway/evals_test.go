package gateway_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
)

// The fallback evals, end to end against two mock providers: the
// primary answers the eval's question wrongly, the backup (of the other
// kind) rightly. The evals degrade the primary, serve logs it once,
// /admin/evals says why (without the provider's key, which the wrong
// answer echoes), clients are served by the backup, and the eval calls
// are never counted as client requests.
func TestEvalsDegradeAWrongPrimary(t *testing.T) {
	const secret = "sk-evaltest-0123456789abcdef"
	t.Setenv("SLUICE_EVAL_TEST_KEY", secret)
	script := []mock.Answer{{Match: "17 * 23", Reply: "391", Wrong: "400 " + secret}}
	zero := 0.0
	backup := mock.New(mock.Config{TTFT: time.Millisecond, OutputTokens: mock.TokenRange{Min: 2}, Answers: script})
	burl, stop, err := backup.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	s := newStack(t, mock.Config{TTFT: time.Millisecond, OutputTokens: mock.TokenRange{Min: 2}, Answers: script, Quality: &zero}, func(c *config.Config) {
		c.Log.Format = "json"
		c.Providers[0].APIKeyEnv = "SLUICE_EVAL_TEST_KEY"
		c.Providers = append(c.Providers, config.Provider{Name: "backup", Kind: "anthropic", BaseURL: burl + "/v1", Timeout: config.Duration(10 * time.Second)})
		c.Models[0].Targets = append(c.Models[0].Targets, config.Target{Provider: "backup", Model: "backup-model"})
		c.Models[0].Evals = &config.Evals{Interval: config.Duration(time.Second), Cases: []config.EvalCase{
			{Name: "arithmetic", Prompt: "What is 17 * 23? Answer with the number only.", Number: ptr(391.0)},
			{Name: "format", Prompt: "What is 17 * 23? Digits only.", Regex: `^\d+$`},
		}}
		c.Evals.MaxCallsPerMinute = 600
	})
	waitWithin(t, 10*time.Second, 10*time.Millisecond, "the primary to be degraded", func() bool {
		return strings.Contains(s.logText(), `"state":"degraded"`)
	})

	// Clients are served by the backup while the primary is degraded.
	status, _, body := s.do("/v1/chat/completions", `{"model":"mock-gpt","messages":[{"role":"user","content":"hello"}]}`, nil)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	admin := httptest.NewServer(s.gw.AdminHandler())
	defer admin.Close()
	if n := metricValue(t, admin.URL, `sluice_failovers_total{model="mock-gpt",provider="backup"}`); n != 1 {
		t.Errorf("failovers to the backup %v, want the request routed past the degraded primary", n)
	}
	var raw []byte
	waitWithin(t, 10*time.Second, 10*time.Millisecond, "both targets to have run", func() bool {
		resp, err := http.Get(admin.URL + "/admin/evals")
		if err != nil {
			t.Fatal(err)
		}
		raw, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("/admin/evals: %d %s", resp.StatusCode, raw)
		}
		return strings.Count(string(raw), `"last_run": "`) == 2
	})
	if strings.Contains(string(raw), secret) || strings.Contains(s.logText(), secret) {
		t.Fatalf("the provider's key leaked:\n%s", raw)
	}
	var out struct {
		Models []struct {
			Model   string
			Targets []struct {
				Provider     string
				Model        string
				PassRate     *float64 `json:"pass_rate"`
				Degraded     bool
				LastRun      *time.Time                            `json:"last_run"`
				LastFailures []struct{ Case, Kind, Reason string } `json:"last_failures"`
			}
		}
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Models) != 1 || out.Models[0].Model != "mock-gpt" || len(out.Models[0].Targets) != 2 {
		t.Fatalf("/admin/evals:\n%s", raw)
	}
	p, b := out.Models[0].Targets[0], out.Models[0].Targets[1]
	if !p.Degraded || p.PassRate == nil || *p.PassRate != 0 || p.LastRun == nil || len(p.LastFailures) == 0 {
		t.Errorf("primary: %+v", p)
	}
	reasons := ""
	for _, f := range p.LastFailures {
		reasons += f.Case + ": " + f.Reason + "\n"
	}
	if !strings.Contains(reasons, "arithmetic: want 391, got 400") || !strings.Contains(reasons, "does not match") {
		t.Errorf("failure reasons:\n%s", reasons)
	}
	if b.Degraded || b.PassRate == nil || *b.PassRate != 1 || b.Provider != "backup" || b.Model != "backup-model" {
		t.Errorf("backup: %+v", b)
	}

	// Eval calls are counted as evals, never as client requests.
	labels := `{model="mock-gpt",provider="mock-openai",upstream_model="mock-gpt-4o"`
	if n := metricValue(t, admin.URL, `sluice_eval_calls_total{model="mock-gpt",provider="mock-openai",result="fail",upstream_model="mock-gpt-4o"}`); n < 2 {
		t.Errorf("failed eval calls counted %v", n)
	}
	if n := metricValue(t, admin.URL, `sluice_eval_degraded`+labels+`}`); n != 1 {
		t.Errorf("sluice_eval_degraded %v", n)
	}
	if n := metricValue(t, admin.URL, `sluice_eval_pass_rate`+labels+`}`); n != 0 {
		t.Errorf("sluice_eval_pass_rate %v", n)
	}
	if n := metricSum(t, admin.URL, "sluice_requests_total{"); n != 1 {
		t.Errorf("%v client requests counted; only the client's one may be", n)
	}
	if n := strings.Count(s.logText(), `"msg":"eval"`); n != 1 {
		t.Errorf("%d eval transitions logged, want the one", n)
	}
}

// With no evals declared nothing runs: /admin/evals lists no model.
func TestNoEvalsRunNothing(t *testing.T) {
	s := newStack(t, mock.Config{TTFT: time.Millisecond}, nil)
	admin := httptest.NewServer(s.gw.AdminHandler())
	defer admin.Close()
	resp, err := http.Get(admin.URL + "/admin/evals")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.TrimSpace(string(raw)) != "{\n  \"models\": []\n}" {
		t.Errorf("/admin/evals: %s", raw)
	}
	if st := s.mock.Stats(); st.Completed != 0 {
		t.Errorf("the provider got %d calls with no evals declared", st.Completed)
	}
}

func ptr[T any](v T) *T { return &v }

// metricSum sums the samples of /metrics whose line starts with prefix.
func metricSum(t *testing.T, adminURL, prefix string) float64 {
	t.Helper()
	resp, err := http.Get(adminURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	sum := 0.0
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			f, err := strconv.ParseFloat(rest[strings.LastIndexByte(rest, ' ')+1:], 64)
			if err != nil {
				t.Fatalf("metric line %q", line)
			}
			sum += f
		}
	}
	return sum
}

// metricValue is one series' value (0 when absent).
func metricValue(t *testing.T, adminURL, series string) float64 {
	return metricSum(t, adminURL, series+" ")
}
