package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/quota"
	"github.com/sluice-gw/sluice/internal/core/spend"
	"github.com/sluice-gw/sluice/internal/policy"
	"github.com/sluice-gw/sluice/internal/server/keystore"
	"github.com/sluice-gw/sluice/internal/server/runner"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// virtualKey is a configured key as the gateway matches it: by the
// SHA-256 of what the client sent, so the key itself is never held.
type virtualKey struct {
	index    int // lifecycle.Request.Key: 1-based position in keys:
	name     string
	tenant   string
	priority admission.Priority
	// models the key may use; nil: any.
	models     map[string]bool
	mayDegrade bool
	// limits are the key's per-minute budgets (none: zero).
	limits quota.Limits
	// spend are its spend limits, its team's included (spend.go).
	spend []spend.Limit
	// cache is its say over the response cache (nil: none; cache.go).
	cache *config.KeyCache
}

// keyTable builds the virtual keys from the config.
func keyTable(cfg *config.Config, defaultPri admission.Priority) (map[[sha256.Size]byte]*virtualKey, error) {
	if len(cfg.Keys) == 0 {
		return nil, nil
	}
	keys := make(map[[sha256.Size]byte]*virtualKey, len(cfg.Keys))
	for i := range cfg.Keys {
		kc := &cfg.Keys[i]
		var h [sha256.Size]byte
		if n, err := hex.Decode(h[:], []byte(kc.SHA256)); err != nil || n != sha256.Size {
			return nil, fmt.Errorf("keys[%d].sha256: not a SHA-256 in hex", i)
		}
		k, err := newVirtualKey(i+1, kc, defaultPri, policy.SpendLimits(cfg, kc))
		if err != nil {
			return nil, fmt.Errorf("keys[%d].%w", i, err)
		}
		keys[h] = k
	}
	return keys, nil
}

// newVirtualKey is key kc as the gateway holds it, numbered index: one
// rule for a config key and a key made at run time (runtimekeys.go).
func newVirtualKey(index int, kc *config.Key, defaultPri admission.Priority, spend []spend.Limit) (*virtualKey, error) {
	k := &virtualKey{index: index, name: kc.Name, tenant: kc.TenantName(), priority: defaultPri, mayDegrade: kc.MayDegrade(), spend: spend, cache: kc.Cache}
	if kc.Limits.Any() {
		k.limits = policy.Limits(kc.Limits)
	}
	if kc.Priority != "" {
		p, ok := admission.ParsePriority(kc.Priority)
		if !ok {
			return nil, fmt.Errorf("priority: unknown class %q", kc.Priority)
		}
		k.priority = p
	}
	if len(kc.Models) > 0 {
		k.models = make(map[string]bool, len(kc.Models))
		for _, m := range kc.Models {
			k.models[m] = true
		}
	}
	return k, nil
}

// keyring is who may call the gateway: the config's virtual keys, the
// keys made at run time (runtimekeys.go), the declared critical keys,
// and whether a request needs a key at all.
type keyring struct {
	// byHash are the config's virtual keys by the SHA-256 of the key;
	// names and list are the same keys by index in keys:.
	byHash map[[sha256.Size]byte]*virtualKey
	names  []string
	list   []*virtualKey
	// critical holds the SHA-256 of each declared critical client key;
	// nil when none are declared, and then nobody is critical.
	critical map[[sha256.Size]byte]struct{}
	// authRequired: a request needs a key (config.AuthRequired).
	authRequired bool
	// rt is the keys made at run time, nil without a key store;
	// authFixed: the config alone says whether a key is required
	// (requireKey). cfg are the config's keys, for the admin API.
	rt        *runtimeKeys
	authFixed bool
	cfg       []config.Key
	// spendOf are a key's spend limits, its team's included: a key made
	// at run time joins its team's limits as a file's key does.
	spendOf    func(*config.Key) []spend.Limit
	defaultPri admission.Priority
	// models are the configuration's model names, sorted.
	models []string
	// runner takes the runtime keys' budgets (lifecycle.Engine.SetKey).
	runner *runner.Runner
	now    func() time.Time
}

// newKeyring builds the keyring of cfg over table (keyTable's), with
// the keys made at run time in store when it is not nil.
func newKeyring(cfg *config.Config, table map[[sha256.Size]byte]*virtualKey, defaultPri admission.Priority, store keystore.Store,
	models []string, rn *runner.Runner, now func() time.Time) *keyring {
	k := &keyring{byHash: table, authRequired: cfg.AuthRequired(), cfg: cfg.Keys, defaultPri: defaultPri,
		models: models, runner: rn, now: now,
		spendOf: func(kc *config.Key) []spend.Limit { return policy.SpendLimits(cfg, kc) }}
	for _, kc := range cfg.Keys {
		k.names = append(k.names, kc.Name)
	}
	k.list = make([]*virtualKey, len(cfg.Keys))
	for _, vk := range table {
		k.list[vk.index-1] = vk
	}
	if store != nil {
		k.rt = newRuntimeKeys(store, cfg)
		k.authFixed = cfg.Auth.Required != nil || len(cfg.Keys) > 0
	}
	if keys := cfg.CriticalKeys(); keys != nil {
		k.critical = make(map[[sha256.Size]byte]struct{}, len(keys))
		for _, c := range keys {
			k.critical[sha256.Sum256([]byte(c))] = struct{}{}
		}
	}
	return k
}

// authenticate finds the client's virtual key. With auth required, a
// request without a known key gets 401 in its API's shape, and false.
//
// The config's keys are looked up first, then the keys made at run time
// (runtimekeys.go); a runtime key that is revoked, disabled, expired, or
// an old secret past its rotation's grace, gets 401 saying which,
// whether or not the gateway requires a key.
func (kr *keyring) authenticate(w http.ResponseWriter, r *http.Request, x *exchange) bool {
	if k := clientKey(r); k != "" && (kr.byHash != nil || kr.rt != nil) {
		sum := sha256.Sum256([]byte(k))
		if x.key = kr.byHash[sum]; x.key == nil {
			var reason, msg string
			if x.key, reason, msg = kr.lookupRuntime(sum); reason != "" {
				x.fail(w, protocol.Unauthorized, outcomeClientError, reason, msg, 0)
				return false
			}
		}
	}
	if x.key != nil || !kr.requireKey() {
		return true
	}
	msg := "this gateway needs a key: send it as Authorization: Bearer KEY"
	if x.endpoint.Dialect == protocol.Anthropic {
		msg = "this gateway needs a key: send it as x-api-key: KEY"
	}
	reason := "missing_key"
	if clientKey(r) != "" {
		msg, reason = "the key is not one this gateway knows; check it, or ask for a new one", "unknown_key"
	}
	x.fail(w, protocol.Unauthorized, outcomeClientError, reason, msg, 0)
	return false
}

// mayUse reports whether the request's key may use model, answering 403
// in its API's shape when not.
func (kr *keyring) mayUse(w http.ResponseWriter, x *exchange, model string) bool {
	if x.key == nil || x.key.models == nil || x.key.models[model] {
		return true
	}
	names := make([]string, 0, len(x.key.models))
	for m := range x.key.models {
		names = append(names, m)
	}
	slices.Sort(names)
	x.fail(w, protocol.Forbidden, outcomeClientError, "model_not_allowed",
		fmt.Sprintf("key %s may not use model %q; it may use %s", x.key.name, model, strings.Join(names, ", ")), 0)
	return false
}
