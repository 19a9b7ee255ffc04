package gateway_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/server/gateway"
)

// The spend limit of a fleet: three gateways on one Redis, one key with
// a daily limit of $1.50, at a cent per output token. The load mixes
// plain requests, streams the provider cuts halfway, n = 2 requests and
// hedged requests, from six clients at once. Halfway through, the
// test's keys are deleted from Redis (FLUSH of the test's prefix: Redis
// restarted without persistence, as far as this fleet can tell).
//
// What must hold: no refusal says less than the limit is spent (spend
// never refused under the limit), and the spend Redis ends with is at
// most the limit plus one request's reserved maximum (n = 2 answers of
// max_tokens 10: $0.20, plus its input), plus what continuations of cut
// streams add in input beyond their reservation (under a tenth of a
// cent here). Then a replica restarted on the same store, and a reload
// of a host on it, are each refused at once: no fresh allowance.
func TestSpendFleet(t *testing.T) {
	addr := testRedis(t)
	prefix := fmt.Sprintf("sluicetest:spend:%d:", rand.Uint64())
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	flushPrefix := func() int {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		n := 0
		iter := rdb.Scan(ctx, 0, prefix+"*", 100).Iterator()
		for iter.Next(ctx) {
			rdb.Del(ctx, iter.Val())
			n++
		}
		return n
	}
	t.Cleanup(func() { flushPrefix(); rdb.Close() })

	const limit = 1.50
	mutate := func(i int) func(*config.Config) {
		return func(c *config.Config) {
			spendConfig(t, config.SpendLimits{Daily: dollars(limit)})(c)
			c.State.Dir = ""
			c.Store = "redis://" + addr + "/0"
			c.Fleet.Prefix = prefix
			c.Fleet.ID = fmt.Sprintf("replica-%d", i)
			c.Fleet.Timeout = config.Duration(200 * time.Millisecond)
			c.Hedging = config.Budget{Budget: 1, Burst: 100}
			// A quarter of the calls are streams cut on purpose, which a
			// default breaker rightly takes for a failing provider.
			for j := range c.Providers {
				if c.Providers[j].Breaker == nil {
					c.Providers[j].Breaker = &config.Breaker{}
				}
				c.Providers[j].Breaker.ErrorRate, c.Providers[j].Breaker.ConsecutiveErrors = 0.95, 1000
			}
			for j := range c.Models {
				if c.Models[j].Name == "mock-gpt" {
					c.Models[j].HedgeAfter = config.HedgeDelay{Fixed: config.Duration(20 * time.Millisecond)}
				}
			}
		}
	}
	var replicas []*stack
	for i := range 3 {
		replicas = append(replicas, newStack(t, mock.Config{}, mutate(i)))
	}
	kinds := []struct {
		name, body string
		hdr        map[string]string
	}{
		{"plain", `{"model":"mock-gpt","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`, nil},
		{"cut stream", `{"model":"mock-gpt","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, map[string]string{"X-Mock-Fail": "truncate"}},
		{"n=2", `{"model":"mock-gpt","max_tokens":10,"n":2,"messages":[{"role":"user","content":"hi"}]}`, nil},
		{"hedged", `{"model":"mock-gpt","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`, map[string]string{"X-Mock-Latency": "80ms"}},
	}
	spentRe := regexp.MustCompile(`\$([0-9.]+) of \$1\.50 spent`)
	var served, refused, sent atomic.Int64
	var mu sync.Mutex
	var byKind = map[string]int{}
	var underRefusals []string
	var flushed atomic.Bool
	var flushedKeys int
	post := func(s *stack, k int) int {
		hdr := bearer("sk-k")
		hdr["X-Mock-Output-Tokens"] = "8"
		for h, v := range kinds[k].hdr {
			hdr[h] = v
		}
		resp, err := s.post(context.Background(), "/v1/chat/completions", kinds[k].body, hdr)
		if err != nil {
			t.Errorf("%s: %v", kinds[k].name, err)
			return 0
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch resp.StatusCode {
		case 200:
			served.Add(1)
			mu.Lock()
			byKind[kinds[k].name]++
			mu.Unlock()
		case 429:
			refused.Add(1)
			m := spentRe.FindSubmatch(b)
			if m == nil || resp.Header.Get("X-Should-Retry") != "false" {
				t.Errorf("refusal without the spend or x-should-retry: %s", b)
				break
			}
			if v, _ := strconv.ParseFloat(string(m[1]), 64); v < limit {
				mu.Lock()
				underRefusals = append(underRefusals, string(m[1]))
				mu.Unlock()
			}
		default:
			t.Errorf("%s: status %d: %s", kinds[k].name, resp.StatusCode, b)
		}
		return resp.StatusCode
	}
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; refused.Load() < 12 && sent.Load() < 200; i++ {
				n := sent.Add(1)
				if served.Load() >= 6 && flushed.CompareAndSwap(false, true) {
					mu.Lock()
					flushedKeys = flushPrefix()
					mu.Unlock()
				}
				post(replicas[(w+i)%3], int(n)%len(kinds))
			}
		}()
	}
	wg.Wait()
	if len(underRefusals) > 0 {
		t.Errorf("refused while under the limit, with spent at $%s", strings.Join(underRefusals, ", $"))
	}
	spentMetric := `sluice_spend_dollars{name="k",scope="key",window="daily"}`
	// A race's loser settles after its request has answered: wait for
	// the figure to stop moving.
	var spent float64
	last := -1.0
	waitWithin(t, 10*time.Second, 100*time.Millisecond, "the spend to settle", func() bool {
		spent = seriesValue(t, replicas[0], spentMetric)
		stable := spent == last
		last = spent
		return stable
	})
	maxReserve := 2*10*0.01 + 0.0001 // n = 2 answers of 10 tokens at a cent, and the input
	slack := 0.001                   // continuations' input beyond their reservation
	var answered, hedges float64
	for _, r := range replicas {
		hedges += max(seriesValue(t, r, `sluice_hedges_total{model="mock-gpt",result="fired"}`), 0)
		answered += max(seriesValue(t, r, `sluice_cost_total{key="k",model="mock-gpt",provider="mock-openai",upstream_model="mock-gpt-4o"}`), 0)
	}
	t.Logf("limit $%.2f: %d requests, %d served (%v), %d refused; %.0f hedges fired; Redis flushed after %d served (%d keys deleted); spend in Redis $%.4f (answered calls alone, sluice_cost_total: $%.4f); over the limit by $%.4f, bound $%.4f",
		limit, sent.Load(), served.Load(), byKind, refused.Load(), hedges, 6, flushedKeys, spent, answered, spent-limit, maxReserve+slack)
	if !flushed.Load() {
		t.Fatal("the load ended before Redis was flushed")
	}
	// Redis's figure restarted at the flush; what the replicas charged
	// for answers (sluice_cost_total, kept in each process) did not, so
	// a fresh allowance after the flush shows there.
	for what, v := range map[string]float64{"spend in Redis": spent, "the answers' cost": answered} {
		if v > limit+maxReserve+slack {
			t.Errorf("%s, $%.4f, passed the limit $%.2f by more than one request's maximum ($%.4f)", what, v, limit, maxReserve)
		}
	}
	if refused.Load() == 0 || hedges == 0 {
		t.Fatalf("nothing was refused (%d), or no hedge fired (%.0f)", refused.Load(), hedges)
	}
	// Spend until refused, one at a time, so the store holds the whole
	// limit spent with nothing in flight.
	for i := 0; post(replicas[0], 0) == 200; i++ {
		if i > 20 {
			t.Fatal("never refused")
		}
	}
	spent = seriesValue(t, replicas[0], spentMetric)

	// A replica restarted: a new gateway on the same store.
	restarted := newStack(t, mock.Config{}, mutate(0))
	if status := post(restarted, 0); status != 429 {
		t.Errorf("a restarted replica served a request at $%.4f of $%.2f: a fresh allowance", spent, limit)
	}
	// A reload: a host on the store, its configuration reloaded.
	base, stop, err := mock.New(mock.Config{}).Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	cfg := config.Default(base)
	mutate(3)(cfg)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	h, err := gateway.NewHost(cfg, gateway.Options{Logger: gateway.NewLogger(io.Discard, cfg.Log)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer h.Shutdown(context.Background(), 0)
	if err := h.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	hs := &stack{t: t, url: srv.URL, gw: h.Gateway()}
	if status := post(hs, 0); status != 429 {
		t.Errorf("a reloaded host served a request at $%.4f of $%.2f: a fresh allowance", spent, limit)
	}
	t.Logf("after the limit was reached ($%.4f): a restarted replica and a reloaded host were each refused", spent)
}
