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
	"github.com/sluice-gw/sluice/internal/server/redistest"
)

// The spend limit of a fleet: three gateways (each a Host, as sluice
// serve runs one) on one Redis, one key with a daily limit of $1.50, at
// a cent per output token. The load mixes plain requests, streams the
// provider cuts halfway, n = 2 requests and hedged requests, from six
// clients at once. After six answers, the fleet is disrupted, once per
// subtest:
//
//   - flush: the test's keys are deleted from Redis, at one instant (a
//     FLUSH of the test's prefix: Redis restarted without persistence,
//     as far as this fleet can tell);
//   - redis-restart: the fleet's Redis (one of the test's own) is
//     killed and started again, empty, under load;
//   - outage: the fleet's Redis (one of the test's own) is killed and
//     stays down while every replica decides alone, until the replicas
//     have refused six requests on their shares, and is then started
//     again, empty;
//   - restart: one replica is replaced by a new gateway on the same
//     store (a restart);
//   - reload: every replica's configuration is reloaded.
//
// A hedged request (its first call slow enough that the hedge always
// fires) goes first, so hedges are in the mix whatever the machine's
// speed. What must hold: no refusal says less than the limit is spent
// (spend is never refused under the limit), and spend passes the limit
// by at most one request's reserved maximum (n = 2 answers of
// max_tokens 10: $0.20, plus its input), plus what continuations of cut
// streams add in input beyond their reservation (under a tenth of a
// cent here), both in Redis and in what the replicas charged for
// answers (kept in each process, so a flush of Redis does not reset
// it); while a replica decides alone (the outage; or a spend call that
// timed out on a loaded machine, which sluice_fleet_store_errors_total
// {op="spend"} shows), by at most one maximum per replica, three. Then a
// replica restarted on the store, and a reloaded one, are each refused
// at once.
func TestSpendFleet(t *testing.T) {
	for _, disrupt := range []string{"flush", "redis-restart", "outage", "restart", "reload"} {
		t.Run(disrupt, func(t *testing.T) { spendFleet(t, disrupt) })
	}
}

// fleetReplica is one replica of the spend fleet: a host and its server.
type fleetReplica struct {
	h   *gateway.Host
	srv *httptest.Server
}

func (r *fleetReplica) stack(t *testing.T) *stack {
	return &stack{t: t, url: r.srv.URL, gw: r.h.Gateway()}
}

func (r *fleetReplica) close() {
	r.h.Shutdown(context.Background(), 0)
	r.srv.Close()
}

func spendFleet(t *testing.T, disrupt string) {
	addr := redistest.Addr(t)
	var own *redistest.Server
	if disrupt == "redis-restart" || disrupt == "outage" {
		own = redistest.Own(t)
		addr = own.Addr()
	}
	prefix := fmt.Sprintf("sluicetest:spend:%d:", rand.Uint64())
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	flushPrefix := func() int { return redistest.FlushCount(rdb, prefix) }
	t.Cleanup(func() { flushPrefix(); rdb.Close() })
	base, stopMock, err := mock.New(mock.Config{}).Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopMock)

	const limit = 1.50
	configFor := func(i int) *config.Config {
		c := config.Default(base)
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
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		return c
	}
	start := func(i int) *fleetReplica {
		cfg := configFor(i)
		h, err := gateway.NewHost(cfg, gateway.Options{Logger: gateway.NewLogger(io.Discard, cfg.Log)})
		if err != nil {
			t.Fatal(err)
		}
		return &fleetReplica{h: h, srv: httptest.NewServer(h)}
	}
	var slots [3]atomic.Pointer[fleetReplica]
	for i := range slots {
		slots[i].Store(start(i))
	}
	t.Cleanup(func() {
		for i := range slots {
			slots[i].Load().close()
		}
	})
	costMetric := `sluice_cost_total{key="k",model="mock-gpt",provider="mock-openai",upstream_model="mock-gpt-4o"}`
	var retiredCost float64 // what replaced replicas charged

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
	var disrupted atomic.Bool
	what := ""
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
	disruptNow := func() {
		switch disrupt {
		case "flush":
			what = fmt.Sprintf("Redis flushed (%d keys deleted)", flushPrefix())
		case "redis-restart":
			began := time.Now()
			own.Kill()
			own.Start()
			what = fmt.Sprintf("Redis killed and restarted empty (down %v)", time.Since(began).Round(time.Millisecond))
		case "outage":
			began := time.Now()
			own.Kill()
			before := refused.Load()
			for refused.Load() < before+6 && time.Since(began) < 10*time.Second {
				time.Sleep(5 * time.Millisecond)
			}
			own.Start()
			what = fmt.Sprintf("Redis killed for %v under load (%d refused meanwhile), restarted empty", time.Since(began).Round(time.Millisecond), refused.Load()-before)
		case "restart":
			old := slots[1].Load()
			slots[1].Store(start(1))
			old.close() // after its requests, which settle first
			mu.Lock()
			retiredCost += max(seriesValue(t, old.stack(t), costMetric), 0)
			mu.Unlock()
			what = "replica 1 restarted"
		case "reload":
			for i := range slots {
				if err := slots[i].Load().h.Reload(configFor(i)); err != nil {
					t.Error(err)
				}
			}
			what = "every replica reloaded"
		}
	}
	// A hedge goes first: its first call answers after 300 ms, the hedge
	// after 20 ms is sent whatever the load, and the limit has room.
	warm := bearer("sk-k")
	warm["X-Mock-Output-Tokens"], warm["X-Mock-Latency"] = "8", "300ms"
	if resp, err := slots[0].Load().stack(t).post(context.Background(), "/v1/chat/completions", kinds[3].body, warm); err != nil {
		t.Fatal(err)
	} else {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("the first hedged request: %d", resp.StatusCode)
		}
		served.Add(1)
	}
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; refused.Load() < 12 && sent.Load() < 200; i++ {
				n := sent.Add(1)
				if served.Load() >= 6 && disrupted.CompareAndSwap(false, true) {
					disruptNow()
				}
				post(slots[(w+i)%3].Load().stack(t), int(n)%len(kinds))
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
	// After Redis came back empty, the counter holds what the replicas
	// re-seed at their next sync (every 500 ms): wait past one.
	var spent float64
	last := -1.0
	poll := 100 * time.Millisecond
	if own != nil {
		poll = 600 * time.Millisecond
	}
	waitWithin(t, 10*time.Second, poll, "the spend to settle", func() bool {
		spent = seriesValue(t, slots[0].Load().stack(t), spentMetric)
		stable := spent == last
		last = spent
		return stable
	})
	maxReserve := 2*10*0.01 + 0.0001 // n = 2 answers of 10 tokens at a cent, and the input
	slack := 0.001                   // continuations' input beyond their reservation
	answered, hedges, alone := retiredCost, 0.0, 0.0
	for i := range slots {
		s := slots[i].Load().stack(t)
		hedges += max(seriesValue(t, s, `sluice_hedges_total{model="mock-gpt",result="fired"}`), 0)
		answered += max(seriesValue(t, s, costMetric), 0)
		alone += max(seriesValue(t, s, `sluice_fleet_store_errors_total{kind="error",op="spend"}`), 0)
	}
	// Spend decided alone (the outage, or a call past its timeout) may
	// pass the limit by one maximum per replica.
	bound, boundWhat := maxReserve, "one request's maximum"
	if alone > 0 {
		bound, boundWhat = float64(len(slots))*maxReserve, fmt.Sprintf("a maximum per replica (%d spend calls decided alone)", int(alone))
	}
	t.Logf("%s: limit $%.2f: %d requests, %d served (%v), %d refused; %.0f hedges fired; %s after 6 served; spend in Redis $%.4f (every call billed, sluice_cost_total: $%.4f); over the limit by $%.4f, bound $%.4f (%s)",
		disrupt, limit, sent.Load(), served.Load(), byKind, refused.Load(), hedges, what, spent, answered, spent-limit, bound+slack, boundWhat)
	if !disrupted.Load() {
		t.Fatal("the load ended before the disruption")
	}
	if disrupt == "outage" && alone == 0 {
		t.Fatal("no replica decided alone during the outage; the test measures nothing")
	}
	for what, v := range map[string]float64{"spend in Redis": spent, "the answers' cost": answered} {
		if v > limit+bound+slack {
			t.Errorf("%s, $%.4f, passed the limit $%.2f by more than %s ($%.4f)", what, v, limit, boundWhat, bound)
		}
	}
	if refused.Load() == 0 || (hedges == 0 && disrupt != "restart") {
		t.Fatalf("nothing was refused (%d), or no hedge fired (%.0f)", refused.Load(), hedges)
	}
	// Spend until refused, one at a time, so the store holds the whole
	// limit spent with nothing in flight.
	for i := 0; post(slots[0].Load().stack(t), 0) == 200; i++ {
		if i > 20 {
			t.Fatal("never refused")
		}
	}
	spent = seriesValue(t, slots[0].Load().stack(t), spentMetric)
	// A replica restarted: a new gateway on the same store; and one
	// reloaded.
	restarted := start(3)
	defer restarted.close()
	if status := post(restarted.stack(t), 0); status != 429 {
		t.Errorf("a restarted replica served a request at $%.4f of $%.2f: a fresh allowance", spent, limit)
	}
	if err := restarted.h.Reload(configFor(3)); err != nil {
		t.Fatal(err)
	}
	if status := post(restarted.stack(t), 0); status != 429 {
		t.Errorf("a reloaded replica served a request at $%.4f of $%.2f: a fresh allowance", spent, limit)
	}
}
