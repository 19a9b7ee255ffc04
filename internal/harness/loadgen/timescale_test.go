package loadgen

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/server/gateway"
	"github.com/sluice-gw/sluice/internal/sim/report"
	"github.com/sluice-gw/sluice/internal/sim/scenario"
)

// metricsAt serves Prometheus text with the given sluice_time_scale, or
// none when scale is 0.
func metricsAt(t *testing.T, scale float64) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if scale != 0 {
			fmt.Fprintf(w, "# TYPE sluice_time_scale gauge\nsluice_time_scale %g\n", scale)
		}
		fmt.Fprint(w, "# TYPE sluice_retries_total counter\nsluice_retries_total{model=\"m\",provider=\"p\"} 0\n")
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// startMock serves a sluice mock at time scale scale.
func startMock(t *testing.T, scale float64) string {
	t.Helper()
	url, stop, err := mock.New(mock.Config{Seed: 1}.Scaled(scale)).Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return url
}

// wantRefused runs and requires a ConfigError that mentions each of
// mentions, before any request reached gw.
func wantRefused(t *testing.T, gw *fakeGateway, err error, mentions ...string) {
	t.Helper()
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want a ConfigError", err)
	}
	for _, m := range mentions {
		if !strings.Contains(err.Error(), m) {
			t.Errorf("error %q does not mention %q", err, m)
		}
	}
	if gw != nil && len(gw.seen()) != 0 {
		t.Errorf("%d requests sent before the refusal", len(gw.seen()))
	}
}

// A time-scaled load refuses a gateway whose sluice_time_scale differs,
// and names the flag that fixes it; an equal one runs without a word.
func TestTimeScaleAgainstTheGatewaysMetrics(t *testing.T) {
	gw := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) { answerOK(w) })
	f := loadScenario(t, "basic.yaml", one)

	_, err := Run(context.Background(), f, Options{Target: gw.url, Metrics: metricsAt(t, 1), TimeScale: 0.25})
	wantRefused(t, gw, err, "gateway runs at time scale 1", "this load at 0.25", "sluice serve --time-scale 0.25", "--time-scale 1")

	// The other way round: a real-time load against a compressed gateway.
	_, err = Run(context.Background(), f, Options{Target: gw.url, Metrics: metricsAt(t, 0.1)})
	wantRefused(t, gw, err, "gateway runs at time scale 0.1", "this load at 1")

	var notes strings.Builder
	mustRun(t, f, Options{Target: gw.url, Metrics: metricsAt(t, 0.25), TimeScale: 0.25, Notes: &notes})
	if notes.Len() != 0 {
		t.Errorf("notes %q for a gateway at the same scale", notes.String())
	}
}

// A gateway that reports no time scale, or no --metrics at all, cannot
// be checked: a time-scaled run says so, a real-time one says nothing.
func TestTimeScaleUncheckedIsANote(t *testing.T) {
	gw := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) { answerOK(w) })
	f := loadScenario(t, "basic.yaml", one)
	for _, c := range []struct {
		name    string
		opts    Options
		mention string
	}{
		{"no gauge", Options{Metrics: metricsAt(t, 0), TimeScale: 0.5}, "reports no sluice_time_scale"},
		{"no --metrics", Options{TimeScale: 0.5}, "without --metrics"},
		{"real time, no gauge", Options{Metrics: metricsAt(t, 0)}, ""},
		{"real time, no --metrics", Options{}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var notes strings.Builder
			c.opts.Target, c.opts.Notes = gw.url, &notes
			mustRun(t, f, c.opts)
			if got := notes.String(); (c.mention == "") != (got == "") || !strings.Contains(got, c.mention) {
				t.Errorf("notes %q, want one mentioning %q", got, c.mention)
			}
		})
	}
}

// With a sluice mock as the target, or behind the gateway at an address
// the scenario's config gives, its /stats tells its time scale.
func TestTimeScaleAgainstAMock(t *testing.T) {
	t.Run("the target", func(t *testing.T) {
		f := loadScenario(t, "basic.yaml", one)
		_, err := Run(context.Background(), f, Options{Target: startMock(t, 1), TimeScale: 0.1})
		wantRefused(t, nil, err, "fake provider at http://127.0.0.1:", "runs at time scale 1", "sluice mock --time-scale 0.1")

		var notes strings.Builder
		row := mustRun(t, f, Options{Target: startMock(t, 0.1), TimeScale: 0.1, Notes: &notes})
		if notes.Len() != 0 || row.Counts.Total() != 1 {
			t.Errorf("against a mock at the same scale: notes %q, counts %v", notes.String(), row.Counts)
		}
	})
	t.Run("behind the gateway", func(t *testing.T) {
		gw := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) { answerOK(w) })
		f := loadScenario(t, "basic.yaml", one)
		f.Gateway.Providers[1].BaseURL = startMock(t, 1) + "/v1"
		_, err := Run(context.Background(), f, Options{Target: gw.url, Metrics: metricsAt(t, 0.5), TimeScale: 0.5})
		wantRefused(t, gw, err, "(providers[1] up-anthropic) runs at time scale 1", "sluice mock --time-scale 0.5")

		f.Gateway.Providers[1].BaseURL = startMock(t, 0.5) + "/v1"
		mustRun(t, f, Options{Target: gw.url, Metrics: metricsAt(t, 0.5), TimeScale: 0.5})
	})
}

// The real gateway exports its configuration's factor, so the whole
// chain (config.Scaled, the gauge, the scrape) refuses a mismatch.
func TestTimeScaleAgainstTheRealGateway(t *testing.T) {
	base := startMock(t, 0.25)
	cfg, err := config.Default(base).Scaled(0.25)
	if err != nil {
		t.Fatal(err)
	}
	h, err := gateway.NewHost(cfg, gateway.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Gateway().Close()
	api, admin := httptest.NewServer(h), httptest.NewServer(h.AdminHandler())
	defer api.Close()
	defer admin.Close()
	f := loadScenario(t, "basic.yaml", func(s *scenario.Scenario) {
		one(s)
		s.Clients.Model = "mock-gpt" // a model of the default config
	})
	f.Gateway.Models[0].Name = "mock-gpt"

	_, err = Run(context.Background(), f, Options{Target: api.URL, Metrics: admin.URL + "/metrics"})
	wantRefused(t, nil, err, "gateway runs at time scale 0.25", "this load at 1")

	row := mustRun(t, f, Options{Target: api.URL, Metrics: admin.URL + "/metrics", TimeScale: 0.25})
	if row.Counts[report.OK] != 1 {
		t.Errorf("counts %v, want the one request answered", row.Counts)
	}
}

// sluice load exits 2 on a mismatch, saying what to pass.
func TestCLITimeScaleMismatchExits2(t *testing.T) {
	gw := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) { answerOK(w) })
	code, out, errs := runCLI(t, "testdata/basic.yaml", "--target", gw.url, "--metrics", metricsAt(t, 1), "--time-scale", "0.25", "--quiet")
	if code != 2 || !strings.Contains(errs, "sluice serve --time-scale 0.25") || strings.Contains(out, "policy") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 2, no report, and the flag to pass", code, out, errs)
	}
}
