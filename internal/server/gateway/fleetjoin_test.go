package gateway

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/server/fleetstore"
	"github.com/sluice-gw/sluice/internal/server/metrics"
	"github.com/sluice-gw/sluice/internal/server/redistest"
)

// A probe-lease call that fails while the store is thought up is not a
// licence to probe: another replica may hold the lease and be probing.
// It is logged and counted. Before, any error probed, silently, and a
// replica without the lease probed beside its holder.
func TestFleetLeaseErrorDoesNotProbe(t *testing.T) {
	rdb := fleetstore.NewClient(redistest.Silent(t))
	defer rdb.Close()
	var logs bytes.Buffer
	f := &fleet{rdb: rdb, id: "me", timeout: 5 * time.Millisecond, probeLease: time.Second,
		leases: fleetstore.NewLeases(rdb, fleetstore.Options{Prefix: "sluicetest:lease-error:"}),
		log:    slog.New(slog.NewTextHandler(&logs, nil)), errs: metrics.NewFleetStoreErrors()}
	f.reachable.Store(true)
	g := &Gateway{fleet: f}
	p := &provider{name: "llm"}
	if g.fleet.mayProbe(context.Background(), p) {
		t.Fatal("a replica whose lease call timed out, with the store thought up, probes")
	}
	if n := testutil.ToFloat64(f.errs.WithLabelValues("lease", "error")); n != 1 {
		t.Errorf("sluice_fleet_store_errors_total{op=lease,kind=error} = %v, want 1", n)
	}
	if !strings.Contains(logs.String(), "probe lease call failed; skipping this probe round") {
		t.Errorf("the lease error is not logged:\n%s", logs.String())
	}
	// With the store known down, the replica judges alone and probes,
	// so that a fleet without its store never leaves a provider
	// unprobed.
	f.reachable.Store(false)
	if !g.fleet.mayProbe(context.Background(), p) {
		t.Error("a replica deciding alone (store down) does not probe")
	}
}

// A probe lease whose key holds another type is that lease's failure
// alone: Redis answers, so every replica probes, as with the store
// down, rather than nobody ever probing.
func TestFleetLeaseWrongTypeProbesAlone(t *testing.T) {
	rdb := fleetstore.NewClient(redistest.Addr(t))
	defer rdb.Close()
	prefix := "sluicetest:lease-wrongtype:" + time.Now().Format("150405.000000") + ":"
	leases := fleetstore.NewLeases(rdb, fleetstore.Options{Prefix: prefix})
	ctx := context.Background()
	key := leases.Key("probe:llm")
	if err := rdb.HSet(ctx, key, "a", "b").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Del(context.Background(), key) })
	var logs bytes.Buffer
	f := &fleet{rdb: rdb, id: "me", timeout: 50 * time.Millisecond, probeLease: time.Second, leases: leases,
		log: slog.New(slog.NewTextHandler(&logs, nil)), errs: metrics.NewFleetStoreErrors()}
	f.reachable.Store(true)
	g := &Gateway{fleet: f}
	if !g.fleet.mayProbe(ctx, &provider{name: "llm"}) {
		t.Error("a wrong-typed lease key leaves the provider unprobed")
	}
	if n := testutil.ToFloat64(f.errs.WithLabelValues("lease", "wrongtype")); n != 1 {
		t.Errorf("sluice_fleet_store_errors_total{op=lease,kind=wrongtype} = %v, want 1\n%s", n, logs.String())
	}
}

// A store that cannot be reached at start is said at once, whatever is
// configured (here: no keys, so no budget call would ever say it), and
// shown in sluice_fleet_store_shared; the replica is ready, deciding
// alone. Before, nothing said so.
func TestFleetUnreachableStoreLoggedAtStart(t *testing.T) {
	var logs bytes.Buffer
	cfg := &config.Config{Store: "redis://:secret@" + redistest.Silent(t) + "/0"}
	cfg.Fleet.ID = "lonely"
	cfg.Fleet.Timeout = config.Duration(5 * time.Millisecond)
	f, err := newFleet(cfg, slog.New(slog.NewTextHandler(&logs, nil)), metrics.New())
	if err != nil {
		t.Fatal(err)
	}
	defer f.close()
	out := logs.String()
	if !strings.Contains(out, "shared store unreachable at start") {
		t.Errorf("nothing said the store is unreachable:\n%s", out)
	}
	if strings.Contains(out, "secret") {
		t.Errorf("the log shows the store's password:\n%s", out)
	}
	if f.reachable.Load() || !f.ready() {
		t.Errorf("reachable %v, ready %v: want unreachable (sluice_fleet_store_shared 0) and ready, deciding alone", f.reachable.Load(), f.ready())
	}
}
