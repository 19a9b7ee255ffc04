package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/core/quota"
	"github.com/sluice-gw/sluice/internal/server/fleetstore"
	"github.com/sluice-gw/sluice/internal/server/keystore"
	"github.com/sluice-gw/sluice/internal/server/metrics"
)

// Keys made at run time (package keystore) authenticate after the
// config's: a client's key is looked up by its SHA-256 in the config's
// table, then in this gateway's table of the store's records. That table
// is rebuilt from the store's latest snapshot on the first request that
// finds the snapshot newer than the table, so a change the store has
// seen is in force from the next request.
//
// A runtime key is a virtualKey like a config key: the same model list,
// priority, degrade flag, tenant and metrics labels (its name). Its
// budgets are the engine's own, numbered after the config's keys
// (lifecycle.Engine.SetKey): each name keeps its number for the life of
// the configuration, so a budget survives the key being disabled and
// enabled, and starts full when its limits change. In a fleet, a key's
// budget lives in the store under its name (budgetName), as a config
// key's does.

// runtimeKeys is one gateway's view of the key store.
type runtimeKeys struct {
	store keystore.Store
	// first is the number of the first runtime key (len(keys:)+1).
	first int
	table atomic.Pointer[rtTable]
	mu    sync.Mutex // serialises rebuilds; guards below
	// index numbers each name seen; tenants numbers each tenant, the
	// config's first, as policy.FromConfig does.
	index   map[string]int
	tenants map[string]int
	// decided is auth.required's default once the store was read:
	// 0 not yet, 1 required, 2 open (requireKey).
	decided atomic.Int32
}

// rtTable is the records of one snapshot, by secret's hash.
type rtTable struct {
	version uint64
	loaded  bool
	byHash  map[[sha256.Size]byte]rtEntry
	// keys are the live keys (not revoked), by number, for the metrics.
	keys map[int]*virtualKey
}

// rtEntry is one secret of a runtime key: its current one, or its old
// one during a rotation's grace (old).
type rtEntry struct {
	key *virtualKey
	rec *keystore.Record
	old bool
}

func newRuntimeKeys(store keystore.Store, cfg *config.Config) *runtimeKeys {
	rt := &runtimeKeys{store: store, first: len(cfg.Keys) + 1, index: map[string]int{}, tenants: map[string]int{}}
	for _, k := range cfg.Keys {
		if _, ok := rt.tenants[k.TenantName()]; !ok {
			rt.tenants[k.TenantName()] = len(rt.tenants) + 1
		}
	}
	rt.table.Store(&rtTable{})
	return rt
}

// rtCurrent is the table of the store's latest snapshot, rebuilt first if
// the table is older.
func (kr *keyring) rtCurrent() *rtTable {
	rt := kr.rt
	snap := rt.store.Snapshot()
	t := rt.table.Load()
	if t.loaded == snap.Loaded && t.version == snap.Version {
		return t
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	snap = rt.store.Snapshot()
	if t = rt.table.Load(); t.loaded == snap.Loaded && t.version == snap.Version {
		return t
	}
	t = &rtTable{version: snap.Version, loaded: snap.Loaded, byHash: map[[sha256.Size]byte]rtEntry{}, keys: map[int]*virtualKey{}}
	for name, rec := range snap.Records {
		if kr.configKeyNamed(name) {
			continue // the config's key of that name wins
		}
		n, ok := rt.index[name]
		if !ok {
			n = rt.first + len(rt.index)
			rt.index[name] = n
		}
		tn, ok := rt.tenants[rec.Key.TenantName()]
		if !ok {
			tn = len(rt.tenants) + 1
			rt.tenants[rec.Key.TenantName()] = tn
		}
		k := kr.runtimeKey(n, &rec.Key)
		if rec.Revoked {
			kr.runner.SetKey(n, quota.Limits{}, tn)
		} else {
			kr.runner.SetKey(n, k.limits, tn)
			t.keys[n] = k
		}
		for _, h := range []struct {
			hex string
			old bool
		}{{rec.Key.SHA256, false}, {rec.OldSHA256, true}} {
			var sum [sha256.Size]byte
			if n, err := hex.Decode(sum[:], []byte(h.hex)); err != nil || n != sha256.Size {
				continue
			}
			if _, taken := kr.byHash[sum]; taken {
				continue // a config key's secret: the config's
			}
			t.byHash[sum] = rtEntry{key: k, rec: rec, old: h.old}
		}
	}
	rt.table.Store(t)
	return t
}

// configKeyNamed reports whether keys: has a key of that name.
func (kr *keyring) configKeyNamed(name string) bool {
	for _, n := range kr.names {
		if n == name {
			return true
		}
	}
	return false
}

// runtimeKey builds the virtual key of a record, numbered n. The API
// validated the record; a class this configuration does not know (a
// record written by another version) is the default class.
func (kr *keyring) runtimeKey(n int, kc *config.Key) *virtualKey {
	k, err := newVirtualKey(n, kc, kr.defaultPri, kr.spendOf(kc))
	if err != nil {
		c := *kc
		c.Priority = ""
		k, _ = newVirtualKey(n, &c, kr.defaultPri, kr.spendOf(&c))
	}
	return k
}

// lookupRuntime finds a runtime key by its secret's hash. A key that
// matches but may not be used now comes back nil with the reason and
// the message its 401 gives.
func (kr *keyring) lookupRuntime(sum [sha256.Size]byte) (k *virtualKey, reason, msg string) {
	if kr.rt == nil {
		return nil, "", ""
	}
	e, ok := kr.rtCurrent().byHash[sum]
	if !ok {
		return nil, "", ""
	}
	now := kr.now()
	r := e.rec
	switch {
	case r.Revoked:
		return nil, "revoked_key", fmt.Sprintf("key %s was revoked; ask for a new key", r.Key.Name)
	case r.Disabled:
		return nil, "disabled_key", fmt.Sprintf("key %s is disabled; ask its owner to enable it", r.Key.Name)
	case r.ExpiresAt != nil && !now.Before(*r.ExpiresAt):
		return nil, "expired_key", fmt.Sprintf("key %s expired at %s; ask for a new key", r.Key.Name, r.ExpiresAt.UTC().Format(time.RFC3339))
	case e.old && !now.Before(r.OldUntil):
		return nil, "rotated_key", fmt.Sprintf("key %s was rotated and this secret's grace ended at %s; use the new secret", r.Key.Name, r.OldUntil.UTC().Format(time.RFC3339))
	}
	return e.key, "", ""
}

// requireKey reports whether a request needs a known key. With
// auth.required set, or keys in the config, or no key store, that is
// the config's answer (config.AuthRequired). Otherwise the default is
// decided once per configuration, at the store's first successful read:
// required if the store holds any key (a revoked one too), else open.
// So a gateway that was open stays open when a key is first made at run
// time (the admin API's answer warns) until its next restart or reload,
// and one whose store cannot be read yet refuses requests without a key
// until it can, rather than open up while its keys are unknown.
func (kr *keyring) requireKey() bool {
	if kr.rt == nil || kr.authFixed {
		return kr.authRequired
	}
	switch kr.rt.decided.Load() {
	case 1:
		return true
	case 2:
		return false
	}
	snap := kr.rt.store.Snapshot()
	if !snap.Loaded {
		return true
	}
	if snap.HasAny() {
		kr.rt.decided.CompareAndSwap(0, 1)
	} else {
		kr.rt.decided.CompareAndSwap(0, 2)
	}
	return kr.rt.decided.Load() == 1
}

// name is key n's name: a config key's, or a runtime key's.
func (kr *keyring) name(n int) string {
	if n >= 1 && n <= len(kr.names) {
		return kr.names[n-1]
	}
	return kr.runtimeKeyName(n)
}

// runtimeKeyName is the name of runtime key n, for the metrics.
func (kr *keyring) runtimeKeyName(n int) string {
	if kr.rt != nil {
		if k := kr.rtCurrent().keys[n]; k != nil {
			return k.name
		}
		kr.rt.mu.Lock()
		defer kr.rt.mu.Unlock()
		for name, i := range kr.rt.index {
			if i == n {
				return name
			}
		}
	}
	return "-"
}

// runtimeKeyList is the live runtime keys, for the shared budgets'
// metrics.
func (kr *keyring) runtimeKeyList() []*virtualKey {
	if kr.rt == nil {
		return nil
	}
	t := kr.rtCurrent()
	out := make([]*virtualKey, 0, len(t.keys))
	for _, k := range t.keys {
		out = append(out, k)
	}
	return out
}

// openKeyStore opens where keys made at run time live: Redis when the
// config names a store, else state.dir/keys.json, else nowhere (nil).
// A Redis store that finds Redis lost its data writes back the keys this
// replica holds (keystore.Loss), logged and counted in
// sluice_fleet_store_losses_total{seen_by="keys"}.
func openKeyStore(cfg *config.Config, log *slog.Logger, m *metrics.Metrics) (keystore.Store, func(), error) {
	switch {
	case cfg.Store != "":
		rdb, err := fleetstore.NewClientURL(cfg.Store)
		if err != nil {
			return nil, nil, fmt.Errorf("store: not a Redis URL: %w", err)
		}
		// The first read waits at most a second: a Redis that does not
		// answer must not hold the gateway's start for long.
		s := keystore.OpenRedis(rdb, keystore.RedisOptions{Prefix: cfg.Fleet.Prefix, Wait: time.Second,
			OnLoss: func(l keystore.Loss) { keysLost(log, m, l) }})
		return s, func() { s.Close(); rdb.Close() }, nil
	case cfg.State.Dir != "":
		s, err := keystore.OpenFile(cfg.State.Dir)
		if err != nil {
			return nil, nil, err
		}
		return s, func() {}, nil
	}
	return nil, func() {}, nil
}

// keysLost says that the run-time keys' store found Redis had lost its
// data, and what it wrote back.
func keysLost(log *slog.Logger, m *metrics.Metrics, l keystore.Loss) {
	if m != nil {
		m.FleetStoreLosses.WithLabelValues("keys").Inc()
	}
	why := "the fleet's epoch changed"
	if l.Backwards {
		why = "the keys' version went backwards"
	}
	log.Warn("keys made at run time: the shared store lost them ("+why+"); this replica wrote back those it held, and key changes wait a second for the other replicas to do the same",
		"held", l.Held, "written_back", l.Wrote, "epoch_was", l.Was, "epoch", l.Is)
}

// env is what the admin key API needs of the configuration serving
// now.
func (kr *keyring) env() keystore.Env {
	return keystore.Env{ConfigKeys: kr.cfg, Models: kr.models, Open: !kr.requireKey()}
}
