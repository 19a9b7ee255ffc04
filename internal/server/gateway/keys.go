package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/quota"
	"github.com/sluice-gw/sluice/internal/core/spend"
	"github.com/sluice-gw/sluice/internal/policy"
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
	k := &virtualKey{index: index, name: kc.Name, tenant: kc.TenantName(), priority: defaultPri, mayDegrade: kc.MayDegrade(), spend: spend}
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

// authenticate finds the client's virtual key. With auth required, a
// request without a known key gets 401 in its API's shape, and false.
//
// The config's keys are looked up first, then the keys made at run time
// (runtimekeys.go); a runtime key that is revoked, disabled, expired, or
// an old secret past its rotation's grace, gets 401 saying which,
// whether or not the gateway requires a key.
func (g *Gateway) authenticate(w http.ResponseWriter, r *http.Request, x *exchange) bool {
	if k := clientKey(r); k != "" && (g.keys != nil || g.rt != nil) {
		sum := sha256.Sum256([]byte(k))
		if x.key = g.keys[sum]; x.key == nil {
			var reason, msg string
			if x.key, reason, msg = g.lookupRuntime(sum); reason != "" {
				x.fail(w, protocol.Unauthorized, outcomeClientError, reason, msg, 0)
				return false
			}
		}
	}
	if x.key != nil || !g.requireKey() {
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
func (g *Gateway) mayUse(w http.ResponseWriter, x *exchange, model string) bool {
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
