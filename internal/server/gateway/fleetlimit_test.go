package gateway_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/server/gateway"
	"github.com/sluice-gw/sluice/internal/server/redistest"
)

// fleetLimit is the provider's max_in_flight the replicas share.
const fleetLimit = 10

// A shared concurrency limit holds while the fleet changes: the
// provider's calls in flight, as the provider itself counts them, never
// pass its max_in_flight of 10, whether the replicas start together
// with traffic before /readyz says 200, start one after another behind
// /readyz and replace each other (a rolling deploy), or join replicas
// that are saturated. Before, the provider saw 18 with three replicas
// started together (each served before it had heard the fleet, with the
// whole limit), 16 in a rolling start, 15 when a second replica joined
// a lone one and 13 when a third joined a pair: a replica that joined
// took its share at once, while the others still ran the calls their
// larger share had let in.
//
// Each case saturates the limit (1.2 s calls arriving at 10 a second,
// open loop, through a least-request balancer: 12 calls' worth of
// demand for 10 slots, a burst of 30 at the start) and runs until
// every replica it started has served calls of its own, so a replica
// that never takes its share fails the case too.
func TestFleetLimitHoldsThroughChanges(t *testing.T) {
	own := redistest.Own(t)
	t.Setenv(adminTokenEnv, "test-admin-token")
	for _, c := range []struct {
		name string
		run  func(t *testing.T, lf *limitFleet)
	}{
		{"started together, traffic before ready", func(t *testing.T, lf *limitFleet) {
			lf.startTogether(t, 3, false)
			lf.burst(3 * fleetLimit)
			lf.waitServed(t, 0, 1, 2)
		}},
		{"rolling start and replacement behind readiness", func(t *testing.T, lf *limitFleet) {
			for i := range 3 {
				lf.start(t, true)
				lf.waitReady(t, i)
			}
			lf.waitServed(t, 0, 1, 2)
			// A rolling deploy replaces a replica: the new one joins and
			// is ready, then the old one leaves the rotation and drains.
			lf.start(t, true)
			lf.waitReady(t, 3)
			lf.stop(t, 0)
			lf.waitServed(t, 1, 2, 3)
		}},
		{"second joins a loaded one, third joins a pair", func(t *testing.T, lf *limitFleet) {
			lf.start(t, false)
			lf.waitSaturated(t)
			lf.start(t, false)
			lf.waitServed(t, 0, 1)
			lf.waitSaturated(t)
			lf.start(t, false)
			lf.waitServed(t, 0, 1, 2)
			// Settled, each holds an equal part, and says so.
			for i := range 3 {
				waitWithin(t, 10*time.Second, 50*time.Millisecond, fmt.Sprintf("replica %d to hold a third of the limits", i), func() bool {
					v := lf.reps[i].metric(t, "sluice_fleet_limit_share")
					return v > 0.333 && v < 0.334
				})
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			lf := newLimitFleet(t, own.Addr())
			lf.load(t, 10)
			c.run(t, lf)
			peak := lf.finish(t)
			t.Logf("peak %d calls in flight at the provider (limit %d); answers %v\n%s", peak, fleetLimit, lf.codes(), strings.Join(lf.events, "\n"))
			if peak > fleetLimit {
				t.Errorf("the provider saw %d calls in flight, its max_in_flight is %d", peak, fleetLimit)
			}
		})
	}
}

// limitFleet is replicas of one fleet on a Redis of the test's own, in
// front of a mock that counts the calls in flight, and the clients
// sending to them through a load balancer that checks /readyz or not.
type limitFleet struct {
	addr, prefix string
	mock         *mock.Server
	base         string

	mu   sync.Mutex
	reps []*limitReplica
	// next is the balancer's round-robin position.
	next int

	t0       time.Time
	events   []string
	stopLoad chan struct{}
	wg       sync.WaitGroup
	peakSeen atomic.Int64
	codesMu  sync.Mutex
	byCode   map[int]int
}

// limitReplica is one replica and what the balancer knows of it.
type limitReplica struct {
	*lossHost
	// gated: the balancer sends it requests only once /readyz said 200
	// (ready); out: it left the rotation.
	gated, ready, out   bool
	served, outstanding atomic.Int64
	// shut: the test shut it down itself.
	shut atomic.Bool
}

func newLimitFleet(t *testing.T, addr string) *limitFleet {
	t.Helper()
	srv := mock.New(mock.Config{TTFT: 1200 * time.Millisecond, OutputTokens: mock.TokenRange{Min: 4, Max: 4}})
	base, stop, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return &limitFleet{addr: addr, prefix: fmt.Sprintf("sluice-limit-%d:", time.Now().UnixNano()), mock: srv, base: base,
		stopLoad: make(chan struct{}), byCode: map[int]int{}, t0: time.Now()}
}

// logf notes an event of the run, with its time, for the test's log.
func (lf *limitFleet) logf(format string, args ...any) {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	lf.events = append(lf.events, fmt.Sprintf("%5.2fs ", time.Since(lf.t0).Seconds())+fmt.Sprintf(format, args...))
}

// config is replica i's: the provider's max_in_flight is the fleet's
// limit, and requests wait for a slot long enough to see a join out
// (2 s), not so long that a queue outlives the test by much.
func (lf *limitFleet) config(t *testing.T, i int) *config.Config {
	return lossConfig(t, lf.addr, lf.base, i, func(c *config.Config) {
		c.Fleet.Prefix = lf.prefix
		c.Fleet.Timeout = config.Duration(time.Second) // a busy 2-core machine stalls a round trip for hundreds of ms
		for p := range c.Providers {
			c.Providers[p].MaxInFlight = fleetLimit
		}
		c.Admission.Queue.MaxWait = config.Duration(2 * time.Second)
	})
}

// start starts a replica; gated: the balancer waits for its /readyz.
func (lf *limitFleet) start(t *testing.T, gated bool) {
	t.Helper()
	lf.mu.Lock()
	i := len(lf.reps)
	lf.mu.Unlock()
	cfg := lf.config(t, i)
	raw := &bytes.Buffer{}
	logs := &syncWriter{w: raw}
	h, err := gateway.NewHost(cfg, gateway.Options{Logger: gateway.NewLogger(logs, cfg.Log)})
	if err != nil {
		t.Fatal(err)
	}
	lf.serve(t, h, raw, logs, gated)
}

// startTogether builds n replicas at once, each heartbeating into the
// store as it starts, as processes started together do, and then serves
// them; gated as for start.
func (lf *limitFleet) startTogether(t *testing.T, n int, gated bool) {
	t.Helper()
	cfgs := make([]*config.Config, n)
	for i := range n {
		cfgs[i] = lf.config(t, i)
	}
	hosts := make([]*gateway.Host, n)
	bufs := make([]*syncWriter, n)
	raw := make([]*bytes.Buffer, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		raw[i] = &bytes.Buffer{}
		bufs[i] = &syncWriter{w: raw[i]}
		wg.Add(1)
		go func() {
			defer wg.Done()
			hosts[i], errs[i] = gateway.NewHost(cfgs[i], gateway.Options{Logger: gateway.NewLogger(bufs[i], cfgs[i].Log)})
		}()
	}
	wg.Wait()
	for i, h := range hosts {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		lf.serve(t, h, raw[i], bufs[i], gated)
	}
}

// serve serves host h as the next replica.
func (lf *limitFleet) serve(t *testing.T, h *gateway.Host, raw *bytes.Buffer, logs *syncWriter, gated bool) {
	t.Helper()
	client, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	admin, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &hostStack{h: h, url: "http://" + client.Addr().String(), admin: "http://" + admin.Addr().String(), served: make(chan error, 1)}
	go func() { hs.served <- h.Serve(client, admin) }()
	r := &limitReplica{lossHost: &lossHost{hostStack: hs, logs: logs, buf: raw}, gated: gated}
	t.Cleanup(func() {
		if r.shut.Load() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		h.Shutdown(ctx, 0)
	})
	lf.mu.Lock()
	lf.reps = append(lf.reps, r)
	lf.mu.Unlock()
	lf.logf("replica %d serving", len(lf.reps)-1)
}

// stop takes replica i out of the rotation and shuts it down, letting
// what it holds finish, as a rolling deploy does.
func (lf *limitFleet) stop(t *testing.T, i int) {
	t.Helper()
	lf.mu.Lock()
	r := lf.reps[i]
	r.out = true
	lf.mu.Unlock()
	r.shut.Store(true)
	lf.logf("replica %d leaving", i)
	defer lf.logf("replica %d drained", i)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.h.Shutdown(ctx, 0); err != nil {
		t.Fatalf("replica %d did not drain: %v", i, err)
	}
}

// pick is the balancer: of the replicas in the rotation (a gated one
// once it is ready), the one with the fewest requests outstanding, the
// next in round-robin order among equals, as a least-request balancer
// does; nil if none. A replica that joins gets every request until it
// has as many as the others: the hardest case for a shared limit.
func (lf *limitFleet) pick() *limitReplica {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	var best *limitReplica
	n := len(lf.reps)
	for k := range n {
		r := lf.reps[(lf.next+k)%n]
		if r.out || (r.gated && !r.ready) {
			continue
		}
		if best == nil || r.outstanding.Load() < best.outstanding.Load() {
			best = r
		}
	}
	lf.next++
	if best != nil {
		best.outstanding.Add(1)
	}
	return best
}

// burst sends n requests at once, through the balancer, as clients that
// were waiting for the fleet to start do.
func (lf *limitFleet) burst(n int) {
	for range n {
		lf.wg.Add(1)
		go lf.send()
	}
}

// load sends rate requests a second, open loop (each arrival in a
// goroutine of its own, whatever the earlier ones are doing, as many
// independent clients do), until finish; bounded in count and time.
func (lf *limitFleet) load(t *testing.T, rate int) {
	deadline := time.Now().Add(60 * time.Second)
	lf.wg.Add(1)
	go func() {
		defer lf.wg.Done()
		tick := time.NewTicker(time.Second / time.Duration(rate))
		defer tick.Stop()
		for n := 0; n < 60*rate && time.Now().Before(deadline); n++ {
			select {
			case <-lf.stopLoad:
				return
			case <-tick.C:
			}
			lf.wg.Add(1)
			go lf.send()
		}
	}()
	// The balancer's health checks.
	lf.wg.Add(1)
	go func() {
		defer lf.wg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-lf.stopLoad:
				return
			case <-tick.C:
			}
			lf.mu.Lock()
			reps := append([]*limitReplica(nil), lf.reps...)
			lf.mu.Unlock()
			for _, r := range reps {
				if !r.gated || r.out {
					continue
				}
				resp, err := http.Get(r.admin + "/readyz")
				if err != nil {
					continue
				}
				resp.Body.Close()
				lf.mu.Lock()
				was := r.ready
				r.ready = resp.StatusCode == 200
				lf.mu.Unlock()
				if r.ready && !was {
					lf.logf("a replica ready")
				}
			}
		}
	}()
}

// send sends one request through the balancer and counts its answer.
func (lf *limitFleet) send() {
	defer lf.wg.Done()
	lf.peakSeen.Store(max(lf.peakSeen.Load(), lf.mock.Stats().PeakInFlight))
	r := lf.pick()
	if r == nil {
		return
	}
	defer r.outstanding.Add(-1)
	resp, err := limitClient.Post(r.url+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"mock-gpt","messages":[{"role":"user","content":"hi"}]}`))
	code := 0
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		code = resp.StatusCode
	}
	if code == 200 {
		r.served.Add(1)
	}
	lf.codesMu.Lock()
	lf.byCode[code]++
	lf.codesMu.Unlock()
}

var limitClient = &http.Client{Timeout: 20 * time.Second}

// finish stops the clients and returns the provider's peak in flight.
func (lf *limitFleet) finish(t *testing.T) int64 {
	close(lf.stopLoad)
	lf.wg.Wait()
	return max(lf.peakSeen.Load(), lf.mock.Stats().PeakInFlight)
}

func (lf *limitFleet) codes() map[int]int {
	lf.codesMu.Lock()
	defer lf.codesMu.Unlock()
	out := map[int]int{}
	for k, v := range lf.byCode {
		out[k] = v
	}
	return out
}

// waitReady waits for the balancer to see replica i ready.
func (lf *limitFleet) waitReady(t *testing.T, i int) {
	t.Helper()
	waitWithin(t, 15*time.Second, 20*time.Millisecond, fmt.Sprintf("replica %d ready", i), func() bool {
		lf.mu.Lock()
		defer lf.mu.Unlock()
		return lf.reps[i].ready
	})
}

// waitServed waits until each of the replicas named has answered
// another call from now, the provider's limit never passed meanwhile.
func (lf *limitFleet) waitServed(t *testing.T, which ...int) {
	t.Helper()
	from := make([]int64, len(which))
	for j, i := range which {
		from[j] = lf.reps[i].served.Load()
	}
	waitWithin(t, 20*time.Second, 20*time.Millisecond, fmt.Sprintf("replicas %v each to answer a call", which), func() bool {
		if p := lf.mock.Stats().PeakInFlight; p > fleetLimit {
			t.Fatalf("the provider saw %d calls in flight, its max_in_flight is %d", p, fleetLimit)
		}
		for j, i := range which {
			if lf.reps[i].served.Load() < from[j]+1 {
				return false
			}
		}
		return true
	})
	lf.logf("replicas %v served", which)
}

// waitSaturated waits until the provider holds the whole limit's calls.
func (lf *limitFleet) waitSaturated(t *testing.T) {
	t.Helper()
	waitWithin(t, 15*time.Second, 10*time.Millisecond, "the provider to hold the limit's calls", func() bool {
		return lf.mock.Stats().InFlight >= fleetLimit
	})
	lf.logf("saturated")

}

// A reload keeps the replica's place in the fleet: the new
// configuration does not join again (no 503 on /readyz, no request
// waiting a heartbeat interval for a part), it holds the same part of
// the limits, and the replaced configuration's Close leaves the claim
// the new one took over.
func TestFleetReloadKeepsTheClaim(t *testing.T) {
	c, prefix := redistest.Client(t)
	t.Setenv(adminTokenEnv, "test-admin-token")
	base, stop, err := mock.New(mock.Config{}).Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	cfg := lossConfig(t, redistest.Addr(t), base, 0, func(c *config.Config) { c.Fleet.Prefix = prefix })
	r := lossReplica(t, cfg)
	waitWithin(t, 10*time.Second, 20*time.Millisecond, "the replica to hold the whole of the limits", func() bool {
		code, _ := r.readyz(t)
		return code == 200 && r.metric(t, "sluice_fleet_limit_share") == 1
	})
	// field is the instance that last asked for the replica's claim.
	field := func() string {
		v := c.HGet(context.Background(), prefix+"claims", cfg.Fleet.ID).Val()
		if i := strings.LastIndexByte(v, ':'); i >= 0 {
			return v[i+1:]
		}
		return v
	}
	before := field()
	if err := r.h.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	if code, body := r.readyz(t); code != 200 {
		t.Errorf("/readyz after the reload: %d %q, want 200 (the replica had joined)", code, body)
	}
	if v := r.metric(t, "sluice_fleet_limit_share"); v != 1 {
		t.Errorf("after the reload the replica holds %v of the limits, want all of them", v)
	}
	start := time.Now()
	resp, err := http.Post(r.url+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"mock-gpt","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if took := time.Since(start); resp.StatusCode != 200 || took > 500*time.Millisecond {
		t.Errorf("a request right after the reload: %d in %v, want 200 at once", resp.StatusCode, took)
	}
	after := field()
	if after == "" || after == before {
		t.Fatalf("the claim after the reload was asked by %q (before by %q): want the new configuration", after, before)
	}
	// The replaced configuration closes once its last request ended;
	// for a heartbeat interval and more, the claim stays the new one's.
	for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); {
		if v := field(); v == "" {
			t.Fatal("the replaced configuration's Close dropped the claim the new one holds")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
