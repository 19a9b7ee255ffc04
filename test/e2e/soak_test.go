package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/procs"
)

// soakConfig is each replica's: an OpenAI-kind primary that browns out
// on a schedule, an Anthropic-kind backup, a breaker and hedging to fail
// over between them, keys with budgets the fleet shares through Redis,
// and a fleet prefix of the run's own so it touches nobody else's keys.
const soakConfig = `
listen: ${LISTEN}
admin_listen: ${ADMIN}
log: {level: warn}
store: redis://${REDIS}/0
fleet: {id: ${ID}, prefix: "${PREFIX}", timeout: 50ms}
providers:
  - name: primary
    kind: openai
    base_url: http://${PRIMARY}/v1
    timeout: 5s
    breaker: {slow_threshold: 1s, window: 2s, min_calls: 10, open_for: 5s, step_hold: 2s}
  - name: backup
    kind: anthropic
    base_url: http://${BACKUP}/v1
    timeout: 5s
models:
  - name: chat
    hedge_after: 1500ms
    targets: [{provider: primary, model: m}, {provider: backup, model: m}]
hedging: {budget: 0.05, burst: 20}
keys:
  - {name: steady, sha256: ${STEADY}, limits: {rpm: 6000}}
  - {name: tight, sha256: ${TIGHT}, limits: {rpm: 300}}
  - {name: tokens, sha256: ${TOKENS}, limits: {itpm: 30000, otpm: 20000}}
  - {name: open, sha256: ${OPEN}}
`

// soakKeys are the clients: a steady key well inside its budget, one at
// about twice its budget (refused often), one that meets its output
// token budget, and one without limits.
var soakKeys = []soakKey{
	{name: "steady", secret: "sk-soak-steady", weight: 5},
	{name: "tight", secret: "sk-soak-tight", weight: 2},
	{name: "tokens", secret: "sk-soak-tokens", weight: 2},
	{name: "open", secret: "sk-soak-open", weight: 1},
}

// soakCycle is the primary's six-minute cycle of trouble, repeated for
// the whole run: slow calls (the slow-call breaker trips, and the fleet
// fails over to the backup), then errors (the error breaker), then
// hangs, resets and truncated streams (the provider timeout, rescues and
// stream ends), with a trickle of 429s throughout.
const soakCycle = 6 * time.Minute

// soakPrimaryScript is sluice mock's script for the primary over span.
func soakPrimaryScript(span time.Duration) string {
	var b strings.Builder
	b.WriteString("seed: 7\nttft: 80ms\ntpot: 4ms\noutput_tokens: 8-48\n")
	b.WriteString("jitter: {kind: lognormal, p50: 10ms, p99: 200ms}\n")
	b.WriteString("brownouts:\n")
	for c := time.Duration(0); c < span; c += soakCycle {
		fmt.Fprintf(&b, "  - {start: %s, end: %s, latency: 3s}\n", c+1*time.Minute, c+2*time.Minute)
	}
	b.WriteString("failures:\n  - {kind: status, status: 429, retry_after: 1s, rate: 0.01}\n")
	for c := time.Duration(0); c < span; c += soakCycle {
		at := func(d time.Duration) time.Duration { return c + d }
		fmt.Fprintf(&b, "  - {kind: status, status: 503, rate: 0.6, start: %s, end: %s}\n", at(3*time.Minute), at(3*time.Minute+40*time.Second))
		fmt.Fprintf(&b, "  - {kind: hang, rate: 0.2, start: %s, end: %s}\n", at(4*time.Minute+30*time.Second), at(5*time.Minute))
		fmt.Fprintf(&b, "  - {kind: reset, after_tokens: 3, rate: 0.1, start: %s, end: %s}\n", at(4*time.Minute+30*time.Second), at(5*time.Minute))
		fmt.Fprintf(&b, "  - {kind: truncate, rate: 0.1, start: %s, end: %s}\n", at(4*time.Minute+30*time.Second), at(5*time.Minute))
	}
	return b.String()
}

// soakSettings are the run's knobs, from the environment.
type soakSettings struct {
	duration, warmUp time.Duration
	rate             float64
	out              string // where the profiles, samples and summary go
	redis            string
}

func soakSettingsFromEnv(t *testing.T) soakSettings {
	t.Helper()
	s := soakSettings{duration: time.Hour, rate: 60, redis: "127.0.0.1:6379"}
	if v := os.Getenv("SLUICE_SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 30*time.Second {
			t.Fatalf("SLUICE_SOAK_DURATION=%q: want a Go duration of at least 30s, e.g. 2m or 1h", v)
		}
		s.duration = d
	}
	if v := os.Getenv("SLUICE_SOAK_RPS"); v != "" {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || r <= 0 || r > 500 {
			t.Fatalf("SLUICE_SOAK_RPS=%q: want requests per second in (0, 500]", v)
		}
		s.rate = r
	}
	if v := os.Getenv("SLUICE_SOAK_REDIS"); v != "" {
		s.redis = v
	}
	// The warm-up fills pools, caches and the runtime's heap before the
	// first profile: a twentieth of the run, between 10 s and 3 min.
	s.warmUp = min(max(s.duration/20, 10*time.Second), 3*time.Minute)
	s.out = os.Getenv("SLUICE_SOAK_OUT")
	if s.out == "" {
		dir, err := os.MkdirTemp("", "sluice-soak-")
		if err != nil {
			t.Fatal(err)
		}
		s.out = dir
	} else if !filepath.IsAbs(s.out) {
		s.out = filepath.Join("..", "..", s.out) // relative to the repository, not test/e2e/
	}
	if err := os.MkdirAll(s.out, 0o755); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSoak runs an hour of mixed traffic through a fleet of three sluice
// serve replicas sharing Redis, in front of a primary that browns out
// every six minutes and an Anthropic-kind backup; it profiles every
// replica's heap and goroutines after the warm-up and at the end, both
// with the fleet idle, samples their metrics every 30 s, and fails if
// goroutines or the heap grew past what an idle replica holds. It is not
// part of the default test run:
//
//	scripts/soak.sh                 # one hour, results in docs/soak/
//	SLUICE_SOAK=1 SLUICE_SOAK_DURATION=2m go test ./e2e -run '^TestSoak$' -v
//
// docs/SOAK.md describes the run and its last results.
func TestSoak(t *testing.T) {
	if os.Getenv("SLUICE_SOAK") == "" {
		t.Skip("an hour of traffic through three replicas; set SLUICE_SOAK=1 (scripts/soak.sh) to run it")
	}
	s := soakSettingsFromEnv(t)
	if c, err := net.DialTimeout("tcp", s.redis, time.Second); err != nil {
		t.Fatalf("the soak's fleet shares the Redis at %s (SLUICE_SOAK_REDIS), which does not answer: %v", s.redis, err)
	} else {
		c.Close()
	}
	prefix := fmt.Sprintf("sluice-soak-%d:", time.Now().UnixNano())
	t.Cleanup(func() { dropRedisPrefix(t, s.redis, prefix) })
	t.Logf("soak: %v (warm-up %v) at %.0f req/s, fleet prefix %q, results in %s", s.duration, s.warmUp, s.rate, prefix, s.out)

	bin := buildSluice(t)
	logs := t.TempDir()
	primary, backup := freeAddr(t), freeAddr(t)
	script := filepath.Join(logs, "primary.yaml")
	if err := os.WriteFile(script, []byte(soakPrimaryScript(s.duration+5*time.Minute)), 0o600); err != nil {
		t.Fatal(err)
	}
	startLogged(t, filepath.Join(logs, "primary.log"), ready("http://"+primary+"/stats"), bin, "mock", "--listen", primary, "--script", script)
	startLogged(t, filepath.Join(logs, "backup.log"), ready("http://"+backup+"/stats"), bin, "mock", "--listen", backup, "--ttft", "100ms", "--tpot", "4ms",
		"--output-tokens", "8-48", "--fail-rate", "0.002", "--fail-status", "529", "--seed", "8")

	fleet := make([]*replica, 3)
	serves := make([]*procs.Proc, 3)
	var targets []string
	for i := range fleet {
		r := &replica{listen: freeAddr(t), admin: freeAddr(t)}
		text := strings.NewReplacer("${LISTEN}", r.listen, "${ADMIN}", r.admin, "${REDIS}", s.redis,
			"${ID}", fmt.Sprintf("soak-%d", i), "${PREFIX}", prefix, "${PRIMARY}", primary, "${BACKUP}", backup,
			"${STEADY}", config.KeyHash("sk-soak-steady"), "${TIGHT}", config.KeyHash("sk-soak-tight"),
			"${TOKENS}", config.KeyHash("sk-soak-tokens"), "${OPEN}", config.KeyHash("sk-soak-open")).Replace(soakConfig)
		path := filepath.Join(logs, fmt.Sprintf("replica-%d.yaml", i))
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		serves[i] = startLogged(t, filepath.Join(logs, fmt.Sprintf("replica-%d.log", i)), nil, bin, "serve", "--config", path)
		fleet[i], targets = r, append(targets, r.listen)
	}
	for i, r := range fleet {
		await(t, serves[i], 10*time.Second, ready("http://"+r.admin+"/readyz"))
	}
	waitUntil(t, 10*time.Second, "every replica to see three live", func() bool {
		for _, r := range fleet {
			if r.metric(t, "sluice_fleet_replicas") != 3 {
				return false
			}
		}
		return true
	})

	samples := newSoakSampler(t, filepath.Join(s.out, "samples.csv"), fleet)
	traffic := newSoakTraffic(targets, soakKeys, s.rate, 1)
	began := time.Now()
	stopSampling := samples.every(30*time.Second, began)

	ctx, cancel := context.WithTimeout(context.Background(), s.warmUp)
	traffic.run(ctx)
	cancel()
	startFig := profileFleet(t, traffic, fleet, s.out, "start")
	samples.mark(began, "start-profile")

	ctx, cancel = context.WithTimeout(context.Background(), s.duration-s.warmUp)
	traffic.run(ctx)
	cancel()
	endFig := profileFleet(t, traffic, fleet, s.out, "end")
	samples.mark(began, "end-profile")
	stopSampling()

	summary := soakSummary(t, s, traffic, fleet, startFig, endFig, time.Since(began))
	if err := os.WriteFile(filepath.Join(s.out, "summary.txt"), []byte(summary), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + summary)
	judgeSoak(t, s, traffic, startFig, endFig)
}

// startLogged runs a process until the test ends, its output to a file
// (an hour of a replica's warnings is no test buffer's business), and
// stops it by its own PID: an interrupt, then a kill after 10 s. It
// returns once check passes (nil: at once).
func startLogged(t *testing.T, logPath string, check procs.Check, name string, args ...string) *procs.Proc {
	t.Helper()
	// Cleanups run last first: this one after the process has stopped.
	t.Cleanup(func() {
		if t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil && len(b) > 0 {
				t.Logf("%s (last 4 kB):\n%s", filepath.Base(logPath), b[max(0, len(b)-4096):])
			}
		}
	})
	return runUntilEnd(t, procs.Spec{Path: name, Args: args, LogFile: logPath, Ready: check, Grace: 10 * time.Second})
}

// dropRedisPrefix deletes the run's keys from the shared Redis: only
// those under its own prefix, found by SCAN, never a flush.
func dropRedisPrefix(t *testing.T, addr, prefix string) {
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n := 0
	iter := rdb.Scan(ctx, 0, prefix+"*", 500).Iterator()
	for iter.Next(ctx) {
		if rdb.Del(ctx, iter.Val()).Err() == nil {
			n++
		}
	}
	if err := iter.Err(); err != nil {
		t.Logf("cleaning Redis keys %s*: %v", prefix, err)
	}
	t.Logf("deleted %d Redis keys under %s (the fleet's keys expire on their own; most are gone by now)", n, prefix)
}
