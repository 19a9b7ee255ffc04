package gateway_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/server/redistest"
)

// lossHost is one replica of a fleet on a Redis of the test's own: a
// Host serving its client and admin listeners, with the admin token
// set and its log kept.
type lossHost struct {
	*hostStack
	logs *syncWriter
	buf  *bytes.Buffer
}

func (l *lossHost) logText() string {
	l.logs.mu.Lock()
	defer l.logs.mu.Unlock()
	return l.buf.String()
}

// readyz is the replica's /readyz status and body.
func (l *lossHost) readyz(t *testing.T) (int, string) {
	t.Helper()
	resp, err := http.Get(l.admin + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// metric is one series' value on the replica's /metrics (-1: absent).
func (l *lossHost) metric(t *testing.T, series string) float64 {
	t.Helper()
	req, _ := http.NewRequest("GET", l.admin+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer test-admin-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			var f float64
			fmt.Sscan(v, &f)
			return f
		}
	}
	return -1
}

// lossFleet starts n replicas on the Redis at addr, each configured by
// mutate too.
func lossFleet(t *testing.T, addr string, n int, mutate func(*config.Config)) []*lossHost {
	t.Helper()
	t.Setenv(adminTokenEnv, "test-admin-token")
	base, stop, err := mock.New(mock.Config{}).Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	var out []*lossHost
	for i := range n {
		out = append(out, lossReplicaAt(t, base, addr, i, mutate))
	}
	return out
}

// lossReplicaAt starts replica i of a fleet on the Redis at addr, in
// front of the provider at base, configured by mutate too: as
// lossFleet starts each, or again after the test stopped it.
func lossReplicaAt(t *testing.T, base, addr string, i int, mutate func(*config.Config)) *lossHost {
	t.Helper()
	r := lossReplica(t, lossConfig(t, addr, base, i, mutate))
	r.mockURL = base
	return r
}

// lossConfig is replica i's config on the Redis at addr, in front of
// the mock at base, adjusted by mutate. Its admin token is read from
// adminTokenEnv, which the test sets to "test-admin-token".
func lossConfig(t *testing.T, addr, base string, i int, mutate func(*config.Config)) *config.Config {
	t.Helper()
	cfg := hostConfig(base, func(c *config.Config) {
		c.Admin.TokenEnv = adminTokenEnv
		c.Store = "redis://" + addr + "/0"
		c.Fleet.Prefix = "sluice:"
		c.Fleet.ID = fmt.Sprintf("replica-%d", i)
		c.Fleet.Timeout = config.Duration(200 * time.Millisecond)
		if mutate != nil {
			mutate(c)
		}
	})
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// lossReplica serves a replica built from cfg, keeping its log.
func lossReplica(t *testing.T, cfg *config.Config) *lossHost {
	t.Helper()
	buf := &bytes.Buffer{}
	sw := &syncWriter{w: buf}
	return &lossHost{hostStack: serveHost(t, cfg, sw), logs: sw, buf: buf}
}

// Run-time keys stay manageable when Redis restarts empty (no
// persistence) under three replicas: each finds the loss (the fleet's
// epoch is gone), writes back the keys it holds, and says so (log,
// sluice_fleet_store_losses_total, /readyz). A key made before the
// restart is revoked from any replica and refused by all three within a
// second; a key revoked before stays refused; a key made after the
// restart is served by every replica at once. Before, revoke answered
// 404 "no key" (a leaked key could not be revoked without restarting
// every replica), and a key made after the restart got 401 everywhere,
// its maker included, until the version counter passed its old value.
func TestFleetRuntimeKeysSurviveAnEmptyRestart(t *testing.T) {
	own := redistest.Own(t)
	fleet := lossFleet(t, own.Addr(), 3, nil)
	kept := fleet[0].create(t, `{"name":"kept"}`)
	doomed := fleet[1].create(t, `{"name":"doomed"}`)
	gone := fleet[2].create(t, `{"name":"gone"}`)
	if code, out := fleet[0].adminCall(t, "POST", "/admin/keys/gone/revoke", ""); code != 200 {
		t.Fatalf("revoke gone: %d %v", code, out)
	}
	for i := range 6 { // the version counter well past what a fresh Redis reaches below
		name := fmt.Sprintf("spare-%d", i)
		fleet[i%3].create(t, `{"name":"`+name+`"}`)
	}
	for _, r := range fleet {
		waitStatus(t, r.hostStack, kept, 200)
		waitStatus(t, r.hostStack, doomed, 200)
		waitStatus(t, r.hostStack, gone, 401)
	}

	own.Kill()
	own.Start()
	restarted := time.Now()
	// A leaked key made before the restart is revoked, from a replica
	// that did not make it.
	if code, out := fleet[2].adminCall(t, "POST", "/admin/keys/doomed/revoke", ""); code != 200 {
		t.Fatalf("revoking a key made before Redis restarted empty: %d %v", code, out)
	}
	answered := time.Since(restarted)
	for i, r := range fleet {
		if d := waitStatus(t, r.hostStack, doomed, 401); d > time.Second {
			t.Errorf("replica %d served the revoked key for %v after the revocation's answer, want at most 1 s", i, d)
		}
	}
	fresh := fleet[0].create(t, `{"name":"fresh"}`)
	for i, r := range fleet {
		if d := waitStatus(t, r.hostStack, fresh, 200); d > time.Second {
			t.Errorf("replica %d refused the key made after the restart for %v, want it served at once (within 1 s)", i, d)
		}
		if code := r.models(t, kept); code != 200 {
			t.Errorf("replica %d: the key kept through the restart: %d", i, code)
		}
		if code := r.models(t, gone); code != 401 {
			t.Errorf("replica %d: the key revoked before the restart: %d, want 401", i, code)
		}
	}
	t.Logf("Redis restarted empty: the revocation answered %v after the restart (it waits a second for the fleet to write back its keys)", answered.Round(time.Millisecond))
	// Each replica says so: log, metric, /readyz (the heartbeat, once a
	// second, finds the epoch changed).
	for i, r := range fleet {
		waitWithin(t, 5*time.Second, 20*time.Millisecond, fmt.Sprintf("replica %d to say the store lost its data", i), func() bool {
			code, body := r.readyz(t)
			return code == 200 && strings.Contains(body, "shared store: lost its data")
		})
		if n := r.metric(t, `sluice_fleet_store_losses_total{seen_by="heartbeat"}`); n != 1 {
			t.Errorf("replica %d: sluice_fleet_store_losses_total{seen_by=heartbeat} = %v, want 1", i, n)
		}
		if n := r.metric(t, `sluice_fleet_store_losses_total{seen_by="keys"}`); n != 1 {
			t.Errorf("replica %d: sluice_fleet_store_losses_total{seen_by=keys} = %v, want 1", i, n)
		}
		if logs := r.logText(); !strings.Contains(logs, "shared store lost its data") || !strings.Contains(logs, "keys made at run time: the shared store lost them") {
			t.Errorf("replica %d's log does not say the store lost its data:\n%s", i, logs)
		}
	}
	// The list agrees: nine live keys (doomed revoked, gone revoked).
	code, out := fleet[1].adminCall(t, "GET", "/admin/keys", "")
	if keys, _ := out["keys"].([]any); code != 200 || len(keys) != 8 {
		t.Errorf("GET /admin/keys after the restart: %d, %d keys, want 8 (kept, fresh, six spares): %v", code, len(keys), out)
	}
}

// An outage that only the heartbeat sees (no key, no budget, no spend:
// nothing else calls the store) is counted: every replica's
// sluice_fleet_store_errors_total{op="heartbeat"} moves, as the shipped
// alert (SluiceFleetStoreFailing) needs. Before, a 2 s Redis kill was
// logged ("deciding alone") on every replica and counted on none.
func TestFleetOutageOnlyTheHeartbeatSeesIsCounted(t *testing.T) {
	own := redistest.Own(t)
	fleet := lossFleet(t, own.Addr(), 2, nil)
	for i, r := range fleet {
		waitWithin(t, 5*time.Second, 20*time.Millisecond, fmt.Sprintf("replica %d to count the fleet", i), func() bool {
			return r.metric(t, "sluice_fleet_replicas") == 2
		})
	}
	own.Kill()
	for i, r := range fleet {
		waitWithin(t, 5*time.Second, 20*time.Millisecond, fmt.Sprintf("replica %d's heartbeat to miss", i), func() bool {
			return strings.Contains(r.logText(), "shared store unreachable")
		})
	}
	own.Start()
	for i, r := range fleet {
		if n := r.metric(t, `sluice_fleet_store_errors_total{kind="error",op="heartbeat"}`); n < 1 {
			t.Errorf("replica %d decided alone and sluice_fleet_store_errors_total{op=heartbeat} is %v:\n%s", i, n, r.logText())
		}
		waitWithin(t, 5*time.Second, 20*time.Millisecond, fmt.Sprintf("replica %d to share again", i), func() bool {
			return r.metric(t, "sluice_fleet_store_shared") == 1
		})
	}
}
