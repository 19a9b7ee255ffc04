package e2e

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/procs"
)

// disruptConfig is each replica's for TestFleetDisruptionsInRealProcesses.
// A call costs exactly one request's maximum: input is free, and every
// request asks for 4 tokens of an upstream model that answers 4 at
// $12,500 a million, so a request reserves $0.05 and is billed $0.05,
// and a spend figure is a count of answers. The calls' own latency comes
// from the client's X-Mock-Latency. fleet.timeout is 125 ms (the default
// is 50 ms) so that a store call on the busy test machine seldom sends a
// replica alone in calm weather; a spend call's timeout is four times
// it, 500 ms. The provider tight, on a mock of its own whose calls take
// a second, has a max_in_flight the replicas share (disruptTight), for
// the checks that the fleet never passes it; the key usage is the usage
// export's check's own.
const disruptConfig = `
listen: ${LISTEN}
admin_listen: ${ADMIN}
admin: {token_env: SLUICE_DISRUPT_ADMIN_TOKEN}
auth: {required: true}
server: {drain_delay: 500ms}
store: redis://${REDIS}/0
fleet: {id: ${ID}, timeout: 125ms}
providers:
  - {name: up, kind: openai, base_url: http://${MOCK}/v1, max_in_flight: 200, forward_headers: [X-Mock-Latency]}
  - {name: tight, kind: openai, base_url: http://${TIGHT}/v1, max_in_flight: ${TIGHTLIMIT}}
models:
  - {name: chat, targets: [{provider: up, model: m}]}
  - {name: tight, targets: [{provider: tight, model: m}]}
prices:
  m: {input: 0, output: 12500}
keys:
  - {name: plain, sha256: ${PLAIN}}
  - {name: spend-killed, sha256: ${KILLED}, spend: {daily: 6}}
  - {name: spend-paused, sha256: ${PAUSED}, spend: {daily: 6}}
  - {name: usage, sha256: ${USAGE}}
`

// disruptToken is the replicas' admin token, made afresh each run.
var disruptToken = rand.Text()

const (
	disruptTokenEnv = "SLUICE_DISRUPT_ADMIN_TOKEN"
	// disruptLimit is each spend key's daily limit, and disruptCost
	// what one request reserves and is billed.
	disruptLimit = 6.0
	disruptCost  = 0.05
	// disruptTight is the provider tight's max_in_flight: small, so
	// that paced traffic saturates it, and at least the three replicas.
	disruptTight = 6
)

// disruptKeys are the config's keys' secrets, by name.
var disruptKeys = map[string]string{"plain": "sk-disrupt-plain", "spend-killed": "sk-disrupt-killed", "spend-paused": "sk-disrupt-paused", "usage": "sk-disrupt-usage"}

// disruptFleet is three sluice serve replicas on a Redis of the test's
// own, behind one sluice mock (and the provider tight behind another).
// Each disruption the fleet must survive is
// one method: emptyRestart, redisAway, killReplica with rejoin, and
// drainReplica with rejoin (one step of a rolling deploy); starting the
// fleet (launch, between newDisruptFleet and awaitReady, with traffic
// before readiness if a check wants it) is the start. A check is a subtest that
// drives one of them under traffic (pace) and judges what it saw.
type disruptFleet struct {
	// top is the test that owns the processes: a process restarted in a
	// subtest must outlive it, so its cleanup is registered here.
	top       *testing.T
	bin       string
	redisAddr string
	redis     *procs.Proc
	mock      string
	// tight is the mock behind the provider tight: calls of a second,
	// its peak_in_flight the fleet's calls under a shared limit.
	tight    string
	replicas []*replica
}

// startDisruptFleet starts Redis, the mock and three replicas together,
// and returns once every replica is ready and counts three.
func startDisruptFleet(t *testing.T) *disruptFleet {
	t.Helper()
	f := newDisruptFleet(t)
	f.launch(t)
	f.awaitReady(t)
	return f
}

// newDisruptFleet starts Redis and the mocks, and no replica yet.
func newDisruptFleet(t *testing.T) *disruptFleet {
	t.Helper()
	f := &disruptFleet{top: t, bin: buildSluice(t), redisAddr: freeAddr(t), mock: freeAddr(t), tight: freeAddr(t)}
	f.redis = redisProcess(t, f.redisAddr)
	m := start(t, nil, f.bin, "mock", "--listen", f.mock, "--ttft", "20ms", "--tpot", "0s", "--output-tokens", "4")
	tight := start(t, nil, f.bin, "mock", "--listen", f.tight, "--ttft", "1s", "--tpot", "0s", "--output-tokens", "4")
	await(t, m, 10*time.Second, ready("http://"+f.mock+"/stats"))
	await(t, tight, 10*time.Second, ready("http://"+f.tight+"/stats"))
	return f
}

// awaitReady waits until every replica's /readyz answers 200 and every
// replica counts three live.
func (f *disruptFleet) awaitReady(t *testing.T) {
	t.Helper()
	for _, r := range f.replicas {
		await(t, r.proc, 15*time.Second, ready("http://"+r.admin+"/readyz"))
	}
	f.awaitWhole(t, 10*time.Second)
}

// launch starts the three replicas at once and returns without waiting
// for them: traffic may be sent before they are ready.
func (f *disruptFleet) launch(t *testing.T) {
	t.Helper()
	for i := range 3 {
		r := &replica{listen: freeAddr(t), admin: freeAddr(t)}
		text := strings.NewReplacer("${LISTEN}", r.listen, "${ADMIN}", r.admin, "${REDIS}", f.redisAddr,
			"${ID}", fmt.Sprintf("r%d", i), "${MOCK}", f.mock, "${TIGHT}", f.tight, "${TIGHTLIMIT}", fmt.Sprint(disruptTight),
			"${PLAIN}", config.KeyHash(disruptKeys["plain"]), "${KILLED}", config.KeyHash(disruptKeys["spend-killed"]),
			"${PAUSED}", config.KeyHash(disruptKeys["spend-paused"]), "${USAGE}", config.KeyHash(disruptKeys["usage"])).Replace(disruptConfig)
		path := filepath.Join(t.TempDir(), "sluice.yaml")
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		// A replica still running at the end is killed: the test is over.
		r.proc = runUntilEnd(t, procs.Spec{Name: fmt.Sprintf("sluice serve r%d", i), Path: f.bin, Args: []string{"serve", "--config", path},
			Env: []string{disruptTokenEnv + "=" + disruptToken}, StopSignal: syscall.SIGKILL})
		f.replicas = append(f.replicas, r)
	}
}

// metric sums replica i's series that start with prefix and hold every
// one of labels; -1 when its admin listener does not answer.
func (f *disruptFleet) metric(i int, prefix string, labels ...string) float64 {
	v, err := metricSumAuth(f.replicas[i].admin, disruptToken, prefix, labels...)
	if err != nil {
		return -1
	}
	return v
}

// whole reports whether every replica counts three live and shares the
// store.
func (f *disruptFleet) whole() bool {
	for i := range f.replicas {
		if f.metric(i, "sluice_fleet_replicas") != 3 || f.metric(i, "sluice_fleet_store_shared") != 1 {
			return false
		}
	}
	return true
}

// awaitWhole waits until every replica counts three live and shares the
// store.
func (f *disruptFleet) awaitWhole(t *testing.T, d time.Duration) {
	t.Helper()
	waitUntil(t, d, "every replica to count three live and share the store", f.whole)
}

// emptyRestart kills Redis and starts it again with nothing in it (it
// keeps nothing on disk), as a Redis without persistence restarts. It
// returns when the new Redis accepts connections.
func (f *disruptFleet) emptyRestart(t *testing.T) time.Time {
	t.Helper()
	f.redis.Kill()
	f.restartRedis(t)
	return time.Now()
}

func (f *disruptFleet) restartRedis(t *testing.T) {
	t.Helper()
	back, err := f.redis.Restart(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	f.redis = back
	f.top.Cleanup(func() { back.Stop() })
}

// redisAway takes Redis away for d: "killed" kills it and then starts it
// again empty, "paused" stops it (SIGSTOP: connections stay open and
// nothing answers) and resumes it (SIGCONT) with its data. It returns
// when Redis went and when it answers again.
func (f *disruptFleet) redisAway(t *testing.T, how string, d time.Duration) (down, up time.Time) {
	t.Helper()
	switch how {
	case "killed":
		f.redis.Kill()
		down = time.Now()
		time.Sleep(time.Until(down.Add(d))) // the scripted outage
		f.restartRedis(t)
	case "paused":
		f.redis.Signal(syscall.SIGSTOP)
		down = time.Now()
		time.Sleep(time.Until(down.Add(d))) // the scripted outage
		f.redis.Signal(syscall.SIGCONT)
	default:
		t.Fatalf("redisAway: %q is neither killed nor paused", how)
	}
	return down, time.Now()
}

// killReplica ends replica i with SIGKILL, as a crash or an OOM kill
// does: nothing drains, and its entry in the fleet stays until it ages
// out. It returns once the process is gone.
func (f *disruptFleet) killReplica(i int) time.Time {
	f.replicas[i].proc.Kill()
	return time.Now()
}

// drainReplica stops replica i as a deploy does: SIGTERM, which fails
// its /readyz for the drain delay, then lets its requests finish and
// leaves the fleet. It returns once the process has exited.
func (f *disruptFleet) drainReplica(t *testing.T, i int) {
	t.Helper()
	p := f.replicas[i].proc
	p.Signal(syscall.SIGTERM)
	select {
	case <-p.Done():
	case <-time.After(15 * time.Second):
		t.Fatalf("replica %d still running 15 s after SIGTERM:\n%s", i, p.Tail(2000))
	}
}

// rejoin starts replica i again, on its ports and config, and returns
// how long until it was ready and every replica counted three again.
func (f *disruptFleet) rejoin(t *testing.T, i int) time.Duration {
	t.Helper()
	began := time.Now()
	r := f.replicas[i]
	back, err := r.proc.Restart(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r.proc = back
	f.top.Cleanup(func() { back.Stop() })
	await(t, back, 15*time.Second, ready("http://"+r.admin+"/readyz"))
	f.awaitWhole(t, 10*time.Second)
	return time.Since(began)
}

// readyz is replica i's /readyz status and body (0: no answer).
func (f *disruptFleet) readyz(i int) (int, string) {
	resp, err := http.Get("http://" + f.replicas[i].admin + "/readyz")
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// adminCall calls replica i's admin API with the token.
func (f *disruptFleet) adminCall(t *testing.T, i int, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, "http://"+f.replicas[i].admin+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+disruptToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("%s %s: %d, not JSON: %q", method, path, resp.StatusCode, data)
	}
	return resp.StatusCode, out
}

// createKey makes a key at run time on replica i and returns its secret.
func (f *disruptFleet) createKey(t *testing.T, i int, name string) string {
	t.Helper()
	code, out := f.adminCall(t, i, "POST", "/admin/keys", `{"name":"`+name+`"}`)
	secret, _ := out["secret"].(string)
	if code != http.StatusCreated || secret == "" {
		t.Fatalf("creating key %s on replica %d: %d %v", name, i, code, out)
	}
	return secret
}

// keyStatus is replica i's answer to GET /v1/models with key: the
// cheapest authenticated request (0: no answer).
func (f *disruptFleet) keyStatus(i int, key string) int {
	req, _ := http.NewRequest("GET", "http://"+f.replicas[i].listen+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// untilKeyStatus asks every replica at once, each every 5 ms, until it
// answers want with key, and returns how long each took; one that has
// not after 3 s is given as more than 3 s.
func (f *disruptFleet) untilKeyStatus(key string, want int) []time.Duration {
	took := make([]time.Duration, len(f.replicas))
	var wg sync.WaitGroup
	began := time.Now()
	for i := range f.replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f.keyStatus(i, key) != want {
				if time.Since(began) > 3*time.Second {
					took[i] = time.Since(began)
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
			took[i] = time.Since(began)
		}()
	}
	wg.Wait()
	return took
}

// shot is one request of paced traffic.
type shot struct {
	replica    int
	start, end time.Time
	code       int // 0: no answer (refused, reset or cut)
	err        string
}

func (s shot) took() time.Duration { return s.end.Sub(s.start) }

// pacedTraffic sends chat requests at a steady rate, round robin over the
// replicas in rotation, each in its own goroutine, as an open-loop load
// balancer would: a slow answer delays no other request. It stops after
// a count or a time, whichever comes first, or when told.
type pacedTraffic struct {
	f      *disruptFleet
	key    string
	model  string
	header map[string]string
	client *http.Client

	mu       sync.Mutex
	in       []bool // in rotation
	inflight []int
	next     int
	shots    []shot // in the order they ended

	stopc   chan struct{}
	stopped sync.Once
	loop    chan struct{}
	calls   sync.WaitGroup
}

// pace starts traffic with key at rate a second, at most limit requests
// and within d; header goes on every request. It is stopped when t ends,
// if not before. Its requests ask for the model chat.
func (f *disruptFleet) pace(t *testing.T, key string, rate float64, limit int, d time.Duration, header map[string]string) *pacedTraffic {
	return f.paceModel(t, key, "chat", rate, limit, d, header)
}

// paceModel is pace, its requests asking for model.
func (f *disruptFleet) paceModel(t *testing.T, key, model string, rate float64, limit int, d time.Duration, header map[string]string) *pacedTraffic {
	p := &pacedTraffic{f: f, key: key, model: model, header: header,
		client:   &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}},
		in:       []bool{true, true, true},
		inflight: make([]int, len(f.replicas)),
		stopc:    make(chan struct{}), loop: make(chan struct{})}
	go func() {
		defer close(p.loop)
		tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
		defer tick.Stop()
		deadline := time.After(d)
		for sent := 0; sent < limit; {
			select {
			case <-p.stopc:
				return
			case <-deadline:
				return
			case <-tick.C:
			}
			if i, ok := p.pick(); ok {
				sent++
				p.calls.Add(1)
				go p.send(i)
			}
		}
	}()
	t.Cleanup(func() { p.stop() })
	return p
}

// pick chooses the next replica in rotation and counts a request in
// flight to it.
func (p *pacedTraffic) pick() (int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for range len(p.in) {
		i := p.next % len(p.in)
		p.next++
		if p.in[i] {
			p.inflight[i]++
			return i, true
		}
	}
	return 0, false
}

func (p *pacedTraffic) send(i int) {
	defer p.calls.Done()
	s := shot{replica: i, start: time.Now()}
	body := `{"model":"` + p.model + `","max_tokens":4,"messages":[{"role":"user","content":"hello there, fleet"}]}`
	req, _ := http.NewRequest(http.MethodPost, "http://"+p.f.replicas[i].listen+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+p.key)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range p.header {
		req.Header.Set(k, v)
	}
	resp, err := p.client.Do(req)
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		s.code = resp.StatusCode
	}
	if err != nil {
		s.code, s.err = 0, err.Error()
	}
	s.end = time.Now()
	p.mu.Lock()
	p.inflight[i]--
	p.shots = append(p.shots, s)
	p.mu.Unlock()
}

// out takes replica i out of rotation and returns how many requests it
// holds: those sent to it that have not ended. None is sent to it after.
func (p *pacedTraffic) out(i int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.in[i] = false
	return p.inflight[i]
}

// back puts replica i in rotation again.
func (p *pacedTraffic) back(i int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.in[i] = true
}

// ended is a copy of the requests that have ended, in the order they
// did.
func (p *pacedTraffic) ended() []shot {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]shot(nil), p.shots...)
}

// count is how many ended requests match.
func (p *pacedTraffic) count(match func(shot) bool) int {
	n := 0
	for _, s := range p.ended() {
		if match(s) {
			n++
		}
	}
	return n
}

// stop sends nothing more, waits for every request sent to end, and
// returns them all.
func (p *pacedTraffic) stop() []shot {
	p.stopped.Do(func() { close(p.stopc) })
	<-p.loop
	p.calls.Wait()
	p.client.CloseIdleConnections()
	return p.ended()
}

// usageExport is replica i's usage export of key's requests for
// yesterday and today (UTC), one row a day (format json or csv): the
// status, the requests its rows count (json), its
// X-Sluice-Usage-Incomplete header and its body. A store that cannot
// be read yet answers 503.
func (f *disruptFleet) usageExport(t *testing.T, i int, key, format string) (code int, requests int64, incomplete, body string) {
	t.Helper()
	from := time.Now().UTC().AddDate(0, 0, -1).Format(time.DateOnly)
	req, _ := http.NewRequest("GET", "http://"+f.replicas[i].admin+"/admin/usage?group=day&from="+from+"&key="+key+"&format="+format, nil)
	req.Header.Set("Authorization", "Bearer "+disruptToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	code, incomplete, body = resp.StatusCode, resp.Header.Get("X-Sluice-Usage-Incomplete"), string(b)
	if code != 200 || format != "json" {
		return code, -1, incomplete, body
	}
	var v struct {
		Rows       []struct{ Requests int64 }
		Incomplete []struct{ From, To string }
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("replica %d's usage export is not JSON: %v\n%s", i, err, b)
	}
	for _, row := range v.Rows {
		requests += row.Requests
	}
	if len(v.Incomplete) > 0 && incomplete == "" {
		// The JSON marks what the header does not: say so through the
		// header's value, which every caller judges.
		incomplete = fmt.Sprintf("(JSON only) %v", v.Incomplete)
	}
	return code, requests, incomplete, body
}

// awaitSaturated waits until the provider tight holds as many calls as
// its max_in_flight allows: the load presses on the limit.
func (f *disruptFleet) awaitSaturated(t *testing.T) {
	t.Helper()
	waitUntil(t, 15*time.Second, fmt.Sprintf("the provider tight to hold %d calls", disruptTight), func() bool {
		return mockStats(t, f.tight).InFlight >= disruptTight
	})
}
