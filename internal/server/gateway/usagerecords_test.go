package gateway_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/server/gateway"
	"github.com/sluice-gw/sluice/internal/server/redistest"
	"github.com/sluice-gw/sluice/internal/server/usage"
)

// Every request the provider answered with a 2xx is in the usage
// records, with what account charged: an answer in full (the provider's
// counts, its cache reads apart, and the cost), a stream the provider
// cut (what was relayed) and one the client left (the same), each
// under its key, team, model and upstream model.
func TestUsageRecordsAnsweredCutAndCancelled(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case !strings.Contains(string(body), `"stream":true`):
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"c","object":"chat.completion","created":1,"model":"up","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":2000,"completion_tokens":50,"total_tokens":2050,"prompt_tokens_details":{"cached_tokens":1536}}}`)
		case strings.Contains(string(body), "cut"):
			send := sse(w)
			openAIWords(send, 20)
			panic(http.ErrAbortHandler)
		default:
			send := sse(w)
			openAIWords(send, 5)
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}
	}))
	defer up.Close()
	rec := usage.NewRecorder(usage.Options{})
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		for i := range c.Providers {
			c.Providers[i].BaseURL = up.URL + "/v1"
			c.Providers[i].Continuation = "none"
		}
		c.Keys = []config.Key{
			{Name: "answered", Tenant: "search", SHA256: config.KeyHash("sk-answered")},
			{Name: "cut", Tenant: "search", SHA256: config.KeyHash("sk-cut")},
			{Name: "gone", SHA256: config.KeyHash("sk-gone")},
		}
		c.Prices = map[string]config.Price{"mock-gpt-4o": {Input: 2.5, CachedInput: 1.25, Output: 10}}
	}, func(o *gateway.Options) { o.Usage = rec })

	if status, _, body := s.do("/v1/chat/completions", `{"model":"mock-gpt","messages":[{"role":"user","content":"hi"}]}`, bearer("sk-answered")); status != 200 {
		t.Fatalf("answered: %d %s", status, body)
	}
	if status := readAll(t, s, "/v1/chat/completions", `{"model":"mock-gpt","stream":true,"messages":[{"role":"user","content":"cut"}]}`, bearer("sk-cut")); status != 200 {
		t.Fatalf("cut: %d", status)
	}
	resp, err := s.post(context.Background(), "/v1/chat/completions", `{"model":"mock-gpt","stream":true,"messages":[{"role":"user","content":"hi"}]}`, bearer("sk-gone"))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	for seen := 0; seen < 5 && sc.Scan(); {
		if strings.Contains(sc.Text(), `"content"`) {
			seen++
		}
	}
	resp.Body.Close() // the client leaves
	waitWithin(t, 15*time.Second, 5*time.Millisecond, "three requests' log lines", func() bool { return strings.Count(s.logText(), "msg=request ") >= 3 })

	if err := rec.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := map[string]usage.Record{}
	rec.Store().Read(context.Background(), usage.Day(time.Now()), func(r usage.Record) error { got[r.Key] = r; return nil })
	a := got["answered"]
	if a.Row != (usage.Row{Key: "answered", Team: "search", Model: "mock-gpt", Upstream: "mock-gpt-4o"}) ||
		a.Counts != (usage.Counts{Requests: 1, Calls: 1, Input: 464, CachedInput: 1536, Output: 50, Cost: 464*5/2 + 1536*5/4 + 500}) {
		t.Errorf("answered: %+v", a)
	}
	if c := got["cut"]; c.Team != "search" || c.Requests != 1 || c.Output != 20 || c.Cost < 200 {
		t.Errorf("cut by the provider after 20 deltas: %+v, want 1 request, 20 output tokens and their cost", c)
	}
	if g := got["gone"]; g.Team != "gone" || g.Requests != 1 || g.Output != 5 || g.Cost < 50 {
		t.Errorf("left by the client after 5 deltas: %+v, want 1 request, 5 output tokens, the team its name", g)
	}
	if len(got) != 3 {
		t.Errorf("records: %+v", got)
	}
}

// The export is on the admin API: GET /admin/usage.
func TestUsageExportOnAdmin(t *testing.T) {
	rec := usage.NewRecorder(usage.Options{})
	s := newStack(t, mock.Config{}, nil, func(o *gateway.Options) { o.Usage = rec })
	if status, _, body := s.do("/v1/chat/completions", chatBody, nil); status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	waitWithin(t, 15*time.Second, 5*time.Millisecond, "the request's log line", func() bool { return strings.Contains(s.logText(), "msg=request ") })
	out := httpGetAdmin(t, s, "/admin/usage?format=csv&group=model")
	if !strings.HasPrefix(out, "day,model,upstream_model,requests,") || !strings.Contains(out, ",mock-gpt,") {
		t.Errorf("GET /admin/usage:\n%s", out)
	}
}

// A host with state.dir keeps the records in a file per day there,
// flushed within about a second, and serves them on its admin listener.
func TestHostUsageInStateDir(t *testing.T) {
	dir := t.TempDir()
	hs := newHostStack(t, mock.Config{}, func(c *config.Config) { c.State.Dir = dir })
	resp, err := http.Post(hs.url+"/v1/chat/completions", "application/json", strings.NewReader(chatBody))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	path := filepath.Join(dir, "usage", "usage-"+usage.Day(time.Now())+".jsonl")
	waitWithin(t, 15*time.Second, 10*time.Millisecond, "the day's usage file", func() bool {
		b, _ := os.ReadFile(path)
		return strings.Contains(string(b), `"model":"mock-gpt"`) && strings.Contains(string(b), `"requests":1`)
	})
	r, err := http.Get(hs.admin + "/admin/usage?format=csv&group=day")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != 200 || !strings.Contains(string(b), usage.Day(time.Now())+",1,") {
		t.Errorf("GET /admin/usage: %d\n%s", r.StatusCode, b)
	}
	r, err = http.Get(hs.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(r.Body)
	r.Body.Close()
	for _, m := range []string{"sluice_usage_pending_rows ", "sluice_usage_dropped_total 0", "sluice_usage_flush_errors_total "} {
		if !strings.Contains(string(b), m) {
			t.Errorf("/metrics has no %q", m)
		}
	}
}

// With store: set, two replicas' records add up in one Redis hash per
// day, under fleet.prefix.
func TestUsageRecordsSharedInTheStore(t *testing.T) {
	addr := redistest.Addr(t)
	cfg := config.Default("http://127.0.0.1:1/v1")
	cfg.Store = "redis://" + addr + "/0"
	cfg.Fleet.Prefix = fmt.Sprintf("sluicetest:usage:%d:", time.Now().UnixNano())
	var recs [2]*usage.Recorder
	for i := range recs {
		r, err := gateway.NewUsageRecorder(cfg, gateway.NewLogger(io.Discard, cfg.Log))
		if err != nil {
			t.Fatal(err)
		}
		recs[i] = r
	}
	rs, ok := recs[0].Store().(*usage.RedisStore)
	if !ok {
		t.Fatalf("store: %s, want redis", recs[0].Store().Where())
	}
	day := usage.Day(time.Now())
	t.Cleanup(func() {
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		defer rdb.Close()
		iter := rdb.Scan(context.Background(), 0, cfg.Fleet.Prefix+"*", 100).Iterator()
		for iter.Next(context.Background()) {
			rdb.Del(context.Background(), iter.Val())
		}
	})
	if !strings.HasPrefix(rs.DayKey(day), cfg.Fleet.Prefix+"usage:") {
		t.Errorf("day key %s, want it under fleet.prefix %s", rs.DayKey(day), cfg.Fleet.Prefix)
	}
	row := usage.Row{Key: "k", Team: "t", Model: "m", Upstream: "u"}
	for i, r := range recs {
		r.Add(time.Now(), row, usage.Counts{Requests: 1, Output: int64(10 * (i + 1)), Cost: 7})
		if err := r.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	var got usage.Counts
	recs[1].Store().Read(context.Background(), day, func(r usage.Record) error { got.Add(r.Counts); return nil })
	if got != (usage.Counts{Requests: 2, Output: 30, Cost: 14}) {
		t.Errorf("the fleet's day: %+v", got)
	}
}

// Without store: or state.dir, the records live in memory, and the log
// says so at start.
func TestUsageInMemoryIsLogged(t *testing.T) {
	cfg := config.Default("http://127.0.0.1:1/v1")
	var logs strings.Builder
	r, err := gateway.NewUsageRecorder(cfg, gateway.NewLogger(&logs, cfg.Log))
	if err != nil {
		t.Fatal(err)
	}
	if r.Store().Where() != "memory" || !strings.Contains(logs.String(), "usage records are kept in memory only") {
		t.Errorf("store %s, log %q", r.Store().Where(), logs.String())
	}
}

// The dashboard's data carries the day's top spenders from the usage
// records.
func TestDashboardTopSpenders(t *testing.T) {
	hs := newHostStack(t, mock.Config{}, func(c *config.Config) {
		c.Keys = []config.Key{{Name: "search", Tenant: "core", SHA256: config.KeyHash("sk-search")}}
		c.Prices = map[string]config.Price{"mock-gpt-4o": {Input: 1, Output: 1}}
	})
	req, _ := http.NewRequest(http.MethodPost, hs.url+"/v1/chat/completions", strings.NewReader(chatBody))
	req.Header.Set("Authorization", "Bearer sk-search")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	u := hs.h.Gateway().Usage()
	waitWithin(t, 15*time.Second, 10*time.Millisecond, "the request in the usage records", func() bool {
		u.RefreshTop(context.Background(), time.Now())
		return len(u.Top()) == 1
	})
	r, err := http.Get(hs.admin + "/dashboard/data.json")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if !strings.Contains(string(b), `"spenders":[{"key":"search","team":"core","requests":1,"cost_micros":`) {
		t.Errorf("data.json has no spender search:\n%.600s", b)
	}
}
