package chaos

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/procs"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// reload sends the gateway SIGHUP and waits until it has taken the file
// it was given.
func (r *run) reload() error {
	before, err := scrape(r.gw.admin)
	if err != nil {
		return err
	}
	r.gw.Signal(syscall.SIGHUP)
	var now map[string]float64
	if !waitUntil(5*time.Second, func() bool {
		now, err = scrape(r.gw.admin)
		return err == nil && now["sluice_config_reloads_total"] > before["sluice_config_reloads_total"]
	}) {
		return fmt.Errorf("the gateway did not reload on SIGHUP:\n%s", r.gw.Output())
	}
	if strings.Contains(r.gw.Output(), "configuration refused") {
		return fmt.Errorf("the gateway refused the configuration:\n%s", r.gw.Output())
	}
	return nil
}

// every calls f(0), f(1), ... every d until the returned stop is called;
// stop returns how many calls were made.
func (r *run) every(d time.Duration, f func(n int)) (stop func() int) {
	done := make(chan struct{})
	var n atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				f(int(n.Add(1) - 1))
			}
		}
	})
	return func() int {
		close(done)
		wg.Wait()
		return int(n.Load())
	}
}

// at runs f after d, in the background; wait blocks until it has run.
func at(d time.Duration, f func()) (wait func()) {
	done := make(chan struct{})
	go func() {
		time.Sleep(d)
		f()
		close(done)
	}()
	return func() { <-done }
}

func playSlowloris(r *run) error {
	_, _, err := r.pair([]string{"--ttft", "10ms", "--tpot", "2ms"}, "read_header_timeout: 1s, body_read_timeout: 1s", "")
	if err != nil {
		return err
	}
	n := 200
	if r.short {
		n = 50
	}
	var slow sync.WaitGroup
	var closedBy [2]atomic.Int64 // [0]: 408 answered, [1]: closed without one
	var lasted atomic.Int64      // the longest a slow client was kept, in ms
	for i := range n {
		slow.Go(func() {
			d, answered := slowClient(r.gw.listen, i%2 == 0, r.span+5*time.Second)
			if answered {
				closedBy[0].Add(1)
			} else {
				closedBy[1].Add(1)
			}
			for {
				old := lasted.Load()
				if d.Milliseconds() <= old || lasted.CompareAndSwap(old, d.Milliseconds()) {
					break
				}
			}
		})
	}
	r.newClient(16).closedLoop(16, r.span, mixed("chat", 16))
	slow.Wait()
	r.note("%d slow clients: %d answered 408, %d disconnected; the longest kept %d ms", n, closedBy[0].Load(), closedBy[1].Load(), lasted.Load())
	if ms := lasted.Load(); ms > 3000 {
		r.fail("a slow client was kept %d ms, past its 1s timeout", ms)
	}
	if r.tally.count(vOK) != r.tally.sent.Load() {
		r.fail("%d of %d normal requests beside the slow clients did not succeed", r.tally.sent.Load()-r.tally.count(vOK), r.tally.sent.Load())
	}
	return nil
}

// slowClient opens a raw connection and drips a request one byte every
// 200 ms: its headers, or (body) complete headers and then its body. It
// returns how long the gateway kept it, and whether the gateway
// answered (a 408) rather than just closing, giving up at limit.
func slowClient(listen string, body bool, limit time.Duration) (time.Duration, bool) {
	c, err := net.Dial("tcp", listen)
	if err != nil {
		return 0, false
	}
	defer c.Close()
	start := time.Now()
	payload := `{"model":"chat","messages":[{"role":"user","content":"hi"}]}`
	head := "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " + fmt.Sprint(len(payload)) + "\r\n\r\n"
	drip := head + payload
	if body {
		if _, err := c.Write([]byte(head)); err != nil {
			return time.Since(start), false
		}
		drip = payload
	}
	gone := make(chan bool, 1)
	go func() {
		line, err := bufio.NewReader(c).ReadString('\n')
		gone <- err == nil && strings.Contains(line, " 408 ")
	}()
	for i := 0; time.Since(start) < limit; i = (i + 1) % len(drip) {
		select {
		case answered := <-gone:
			return time.Since(start), answered
		case <-time.After(200 * time.Millisecond):
		}
		if _, err := c.Write([]byte{drip[i]}); err != nil {
			return time.Since(start), <-gone
		}
	}
	return time.Since(start), false
}

func playManyConnections(r *run) error {
	limit, err := procs.RaiseFileLimit(1 << 17)
	if err != nil {
		return err
	}
	n := r.connections
	// Each connection takes a descriptor in the client, the relay's two
	// sides, the gateway's two sides and the mock: the harness holds
	// three of them, the gateway two.
	if most := int(limit-2000) / 3; n > most {
		r.note("%d connections asked; the open-file limit of %d allows %d", n, limit, most)
		n = most
	}
	server := fmt.Sprintf("max_connections: %d", 2*n)
	extra := fmt.Sprintf("admission: {max_in_flight: %d, queue: {max_depth: %d}}\n", 2*n, n)
	// A token a second: the fault is the number of connections held
	// open, not the bytes through them, which two shared cores could
	// not carry for ten thousand streams at a provider's usual pace.
	longer := func(cfg string) string { return strings.ReplaceAll(cfg, "timeout: 30s", "timeout: 120s") }
	_, _, err = r.pair([]string{"--ttft", "10ms", "--tpot", "1s"}, server, extra, longer)
	if err != nil {
		return err
	}
	// Every client holds a stream open about as long as the fault runs,
	// so all of them are in flight together once the ramp is done.
	tokens := max(2, int(r.span/time.Second)+1)
	r.newClient(n).closedLoop(n, r.span, func(i int, rng *rand.Rand) call {
		return call{dialect: dialectOf(rng.IntN(2)), stream: true, model: "chat", tokens: tokens}
	})
	r.note("%d clients, each holding a stream of about %d s open; at most %d in flight at the gateway at once", n, tokens-1, r.samp.peakInFlight())
	return nil
}

func playOverload(r *run) error {
	// One slot-bound provider: 4 at a time, 200 ms a call with its
	// tokens, so about 20 calls a second; the load is ten times that.
	// (The capacity is small so that ten times it is an overload of the
	// gateway's policy, not of the two cores the run shares.)
	solo := "  - {name: solo, targets: [{provider: primary, model: m}]}\n"
	p, err := r.startUpstream("--ttft", "180ms", "--tpot", "2ms")
	if err != nil {
		return err
	}
	s, err := r.startUpstream()
	if err != nil {
		return err
	}
	cfg := strings.Replace(gatewayConfig(p, s, "", ""), "models:\n", "models:\n"+solo, 1)
	cfg = strings.Replace(cfg, "timeout: 30s,", "timeout: 30s, max_in_flight: 4,", 1)
	if r.gw, err = r.startGateway(cfg); err != nil {
		return err
	}
	if err := r.begin(); err != nil {
		return err
	}
	r.newClient(256).openLoop(200, r.overload, func(i int, rng *rand.Rand) call {
		return call{dialect: dialectOf(rng.IntN(2)), stream: rng.IntN(2) == 0, model: "solo", tokens: 10}
	})
	r.note("%d answered, %d refused in the dialect's shape with Retry-After, over %v", r.tally.count(vOK), r.tally.count(vError), r.overload)
	if r.tally.count(vError) == 0 {
		r.fail("nothing was refused: the load was not an overload")
	}
	return nil
}

// alternate is a second configuration for SIGHUP to switch to: the same
// providers, and one model more.
func alternate(cfg string) string {
	return strings.Replace(cfg, "models:\n", "models:\n  - {name: extra, targets: [{provider: primary, model: m}]}\n", 1)
}

func playSIGHUP(r *run) error {
	p, s, err := r.pair([]string{"--ttft", "10ms", "--tpot", "5ms"}, "", "")
	if err != nil {
		return err
	}
	configs := []string{alternate(gatewayConfig(p, s, "", "")), gatewayConfig(p, s, "", "")}
	stop := r.every(250*time.Millisecond, func(n int) {
		r.gw.write(configs[n%2])
		r.gw.Signal(syscall.SIGHUP)
	})
	r.newClient(32).closedLoop(32, r.span, mixed("chat", 40))
	sent := stop()
	m, err := scrape(r.gw.admin)
	if err != nil {
		return err
	}
	r.note("%d SIGHUPs sent, %g reloads", sent, m["sluice_config_reloads_total"])
	if m["sluice_config_reloads_total"] == 0 || strings.Contains(r.gw.Output(), "configuration refused") {
		r.fail("the reloads did not all take")
	}
	if ok := r.tally.count(vOK); ok != r.tally.sent.Load() {
		r.fail("%d of %d requests did not succeed across reloads", r.tally.sent.Load()-ok, r.tally.sent.Load())
	}
	return nil
}

func playSIGTERM(r *run) error {
	if _, _, err := r.pair([]string{"--ttft", "10ms", "--tpot", "10ms"}, "", ""); err != nil {
		return err
	}
	// The clients stand behind a load balancer that checks /readyz every
	// 100 ms and stops sending once it fails, as drain_delay expects: they
	// go on sending after the signal until the check sees it. Its checks
	// start 50 ms out of step with the signal, so it lands between two.
	var stopped atomic.Bool
	var sentAt time.Time
	var before, after atomic.Int64 // requests sent by the signal, and by the stop
	signalled := at(r.span/2, func() {
		sentAt = time.Now()
		before.Store(r.tally.sent.Load())
		r.gw.Signal(syscall.SIGTERM)
	})
	time.Sleep(50 * time.Millisecond)
	unready := r.every(100*time.Millisecond, func(int) {
		resp, err := http.Get("http://" + r.gw.admin + "/readyz")
		if err == nil {
			resp.Body.Close()
		}
		if (err != nil || resp.StatusCode != http.StatusOK) && !stopped.Load() {
			after.Store(r.tally.sent.Load())
			stopped.Store(true)
		}
	})
	c := r.newClient(32)
	var wg sync.WaitGroup
	for w := range 32 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 3))
			for !stopped.Load() {
				// Streams of 50 ms to a second: some are mid-way at the
				// signal, and others end and are followed by new ones
				// before the balancer notices.
				c.send(context.Background(), call{dialect: dialectOf(rng.IntN(2)), stream: true, model: "chat", tokens: 5 + rng.IntN(100)})
			}
		})
	}
	signalled()
	wg.Wait()
	unready()
	select {
	case <-r.gw.Done():
	case <-time.After(10 * time.Second):
		r.fail("the gateway had not exited 10 s after SIGTERM")
		return nil
	}
	if err := r.gw.Err(); err != nil {
		r.fail("the gateway exited with %v after SIGTERM", err)
	}
	r.note("%d requests sent after the signal (%d by then), before /readyz was seen failing; the gateway exited 0, %v after the signal",
		after.Load()-before.Load(), before.Load(), time.Since(sentAt).Round(10*time.Millisecond))
	if ok := r.tally.count(vOK); ok != r.tally.sent.Load() {
		r.fail("%d of %d requests sent before /readyz failed did not succeed", r.tally.sent.Load()-ok, r.tally.sent.Load())
	}
	return nil
}

func playRedis(r *run) error {
	addr, err := procs.FreeAddr()
	if err != nil {
		return err
	}
	redis, err := r.startRedis(addr)
	if err != nil {
		return err
	}
	const key = "sk-chaos-fleet"
	extra := fmt.Sprintf("store: redis://%s/0\nfleet: {id: chaos-1, timeout: 250ms}\nkeys:\n  - {name: chaos, sha256: %s, limits: {rpm: 600000, itpm: 100000000}}\n", addr, config.KeyHash(key))
	if _, _, err := r.pair([]string{"--ttft", "10ms", "--tpot", "5ms"}, "", extra); err != nil {
		return err
	}
	shared := func() float64 {
		m, _ := scrape(r.gw.admin)
		return m["sluice_fleet_store_shared"]
	}
	killed := at(r.span/3, redis.Kill)
	var restarted error
	back := at(2*r.span/3, func() { _, restarted = redis.Restart(context.Background()) })
	r.newClient(16).closedLoop(16, r.span, func(i int, rng *rand.Rand) call {
		c := mixed("chat", 16)(i, rng)
		c.header = map[string]string{"Authorization": "Bearer " + key}
		if c.dialect == protocol.Anthropic {
			c.header = map[string]string{"X-Api-Key": key}
		}
		return c
	})
	killed()
	back()
	if restarted != nil {
		return restarted
	}
	if !waitUntil(settleWithin, func() bool { return shared() == 1 }) {
		r.fail("the fleet's store was not shared again %v after Redis came back", settleWithin)
	} else {
		r.note("Redis down for a third of the run; the budgets were shared again after its return")
	}
	return nil
}

func playReplicaKilled(r *run) error {
	a, err := r.startUpstream("--ttft", "10ms", "--tpot", "20ms")
	if err != nil {
		return err
	}
	b, err := r.startUpstream("--ttft", "10ms", "--tpot", "20ms")
	if err != nil {
		return err
	}
	cfg := fmt.Sprintf(`listen: ${LISTEN}
admin_listen: ${ADMIN}
log: {level: warn}
providers:
  - name: pool
    kind: openai
    forward_headers: [X-Mock-Output-Tokens]
    replicas: [{base_url: %s}, {base_url: %s}]
models:
  - {name: chat, targets: [{provider: pool, model: m}]}
`, a.url(), b.url())
	if r.gw, err = r.startGateway(cfg); err != nil {
		return err
	}
	if err := r.begin(); err != nil {
		return err
	}
	var inFlight int64
	killed := at(r.span/2, func() {
		st, _ := a.mock.stats()
		inFlight = st.InFlight
		a.mock.Kill()
		// The relay goes with it: a dead replica's port refuses
		// connections, where a relay left listening would accept them
		// and drop them, which looks like a call lost mid-request.
		a.relay.close()
	})
	r.newClient(16).closedLoop(16, r.span, func(i int, rng *rand.Rand) call {
		return call{dialect: dialectOf(rng.IntN(2)), stream: true, model: "chat", tokens: 20 + rng.IntN(40)}
	})
	killed()
	r.note("the replica was killed with %d calls in flight on it", inFlight)
	if inFlight == 0 {
		r.fail("the replica had no call in flight when it was killed")
	}
	return nil
}
