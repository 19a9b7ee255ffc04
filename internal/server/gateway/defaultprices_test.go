package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/server/dashboard"
	"github.com/sluice-gw/sluice/internal/server/gateway"
)

// `sluice serve` with no config shows what requests cost: the embedded
// default prices its fake models (illustratively), so a chat through
// each API adds to sluice_cost_total, and today's top spenders, which
// the dashboard shows, spent more than nothing.
func TestDefaultConfigCostsItsFakeModels(t *testing.T) {
	base, stop, err := mock.New(mock.Config{}).Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	cfg := config.Default(base)
	for _, m := range []string{"mock-gpt-4o", "mock-claude-sonnet"} {
		if p := cfg.Prices[m]; p.Input <= 0 || p.Output <= 0 {
			t.Errorf("the embedded default prices %s at %+v; want input and output above 0", m, p)
		}
	}
	log := gateway.NewLogger(io.Discard, cfg.Log)
	u, err := gateway.NewUsageRecorder(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	h, err := gateway.NewHost(cfg, gateway.Options{Logger: log, Usage: u})
	if err != nil {
		t.Fatal(err)
	}
	client, _ := net.Listen("tcp", "127.0.0.1:0")
	admin, _ := net.Listen("tcp", "127.0.0.1:0")
	served := make(chan error, 1)
	go func() { served <- h.Serve(client, admin) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		h.Shutdown(ctx, 0)
	})
	url, adminURL := "http://"+client.Addr().String(), "http://"+admin.Addr().String()
	for _, c := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"mock-gpt","messages":[{"role":"user","content":"hello"}]}`},
		{"/v1/messages", `{"model":"mock-claude","max_tokens":64,"messages":[{"role":"user","content":"hello"}]}`},
	} {
		resp, err := http.Post(url+c.path, "application/json", strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", c.path, resp.StatusCode, b)
		}
	}
	get := func(path string) string {
		resp, err := http.Get(adminURL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	cost := func(model string) float64 {
		sum := 0.0
		for _, l := range strings.Split(get("/metrics"), "\n") {
			if strings.HasPrefix(l, "sluice_cost_total{") && strings.Contains(l, `model="`+model+`"`) {
				f, _ := strconv.ParseFloat(l[strings.LastIndexByte(l, ' ')+1:], 64)
				sum += f
			}
		}
		return sum
	}
	waitWithin(t, 10*time.Second, 10*time.Millisecond, "sluice_cost_total for mock-gpt and mock-claude", func() bool {
		return cost("mock-gpt") > 0 && cost("mock-claude") > 0
	})
	if err := u.RefreshTop(context.Background(), time.Now()); err != nil {
		t.Fatal(err)
	}
	var snap dashboard.Snapshot
	if err := json.Unmarshal([]byte(get("/dashboard/data.json")), &snap); err != nil {
		t.Fatal(err)
	}
	if len(snap.Spenders) == 0 || snap.Spenders[0].CostMicros <= 0 {
		t.Errorf("the dashboard's top spenders with the default config: %+v; want a cost above 0", snap.Spenders)
	}
	t.Logf("cost: mock-gpt $%.6f, mock-claude $%.6f; spenders %+v", cost("mock-gpt"), cost("mock-claude"), snap.Spenders)
}
