package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"time"
)

// Key is a virtual key: what a client sends in place of a provider's key
// (Authorization: Bearer on OpenAI routes, x-api-key on Anthropic's), and
// what it may do. The key itself is never in the file, only its SHA-256;
// `sluice keys new` makes a key and prints both.
type Key struct {
	// Name labels the key in logs and metrics.
	Name string `yaml:"name"`
	// Tenant groups keys in metrics (default: the key's name).
	Tenant string `yaml:"tenant"`
	// SHA256 is the key's SHA-256, in hex.
	SHA256 string `yaml:"sha256"`
	// Priority is the class of the key's requests: critical, interactive
	// or background (default: admission.default_priority). The
	// X-Sluice-Priority header can lower it, never raise it.
	Priority string `yaml:"priority"`
	// Models lists the client-facing models the key may use (default:
	// every model).
	Models []string `yaml:"models"`
	// Limits are the key's per-minute budgets.
	Limits Limits `yaml:"limits"`
	// Degrade (default true): the key's background requests may be
	// degraded under pressure instead of refused (models[].degrade).
	Degrade *bool `yaml:"degrade"`
	// Spend limits what the key may spend, in dollars (spend.go,
	// docs/SPEND.md); its team's limits (teams:, by tenant) apply too.
	Spend *SpendLimits `yaml:"spend"`
	// Cache is the key's say over the response cache: whether its
	// requests are cached, and whether its clients may steer the cache
	// with Cache-Control (cache.go, docs/CACHE.md).
	Cache *KeyCache `yaml:"cache"`
}

// MayDegrade reports whether the key's requests may be degraded.
func (k *Key) MayDegrade() bool { return k.Degrade == nil || *k.Degrade }

// TenantName is the key's tenant, or its name.
func (k *Key) TenantName() string {
	if k.Tenant != "" {
		return k.Tenant
	}
	return k.Name
}

// Limits are per-minute budgets in the three dimensions providers meter:
// requests, input tokens and output tokens. Zero means no limit. Each is
// enforced exactly (GCRA, package quota): a sustained load gets its limit
// per minute. At once, a client may send Burst's worth of its requests
// (default 10 s: a sixth of a minute's, at least one), and a minute's
// worth of tokens, so that any single request within the minute's token
// allowance can pass.
type Limits struct {
	RPM   int64    `yaml:"rpm"`   // requests per minute
	ITPM  int64    `yaml:"itpm"`  // input tokens per minute
	OTPM  int64    `yaml:"otpm"`  // output tokens per minute
	Burst Duration `yaml:"burst"` // the requests a client may send at once, as time at its rate
	// TokenBurst is the tokens a client may take at once, as time at
	// its rate; zero is a minute's worth, the rule above. It is not
	// read from a file: Scaled sets it to a scaled minute, so that a
	// time-scaled replay, whose per-minute rates are divided by the
	// scale, still lets through a scenario minute's tokens at once.
	TokenBurst Duration `yaml:"-"`
}

// DefaultBurst is Limits.Burst's default: a tenant that floods after an
// idle spell gets ten seconds of its rate at once, not a whole minute's,
// so that the flood's first seconds do not take the capacity others
// share (as providers do, who enforce a minute's limit over shorter
// periods too).
const DefaultBurst = 10 * time.Second

// RequestBurst is how many requests the limits let through at once.
func (l Limits) RequestBurst() int64 {
	if l.RPM <= 0 {
		return 0
	}
	b := l.Burst.D()
	if b <= 0 {
		b = DefaultBurst
	}
	return max(1, l.RPM*int64(b)/int64(time.Minute))
}

// TokenBurstOf is how many tokens of a limit of perMinute the limits
// let through at once: zero, for the default of a minute's worth, unless
// TokenBurst says otherwise.
func (l Limits) TokenBurstOf(perMinute int64) int64 {
	if perMinute <= 0 || l.TokenBurst <= 0 {
		return 0
	}
	return max(1, int64(math.Round(float64(perMinute)*float64(l.TokenBurst)/float64(time.Minute))))
}

// Any reports whether any limit is set.
func (l Limits) Any() bool { return l.RPM > 0 || l.ITPM > 0 || l.OTPM > 0 }

// Auth says whether clients must send a virtual key.
type Auth struct {
	// Required (default: true when keys are defined, or when the key
	// store holds keys made at run time as this configuration starts; see
	// docs/KEYS.md): a request without a known key gets 401.
	Required *bool `yaml:"required"`
}

// AuthRequired reports whether requests need a known key.
func (c *Config) AuthRequired() bool {
	if c.Auth.Required != nil {
		return *c.Auth.Required
	}
	return len(c.Keys) > 0
}

// Lanes keep kinds of work apart (seed 003): large-context requests draw
// on their own capacity and token budget, so a burst of huge prompts
// cannot block chats; batch (background) requests wait long and use only
// what interactive work leaves.
type Lanes struct {
	LargeContext LargeLane `yaml:"large_context"`
	Batch        BatchLane `yaml:"batch"`
}

// LargeLane is the lane for requests of at least MinInputTokens.
type LargeLane struct {
	// MinInputTokens: requests with at least this many input tokens
	// join the lane (0: no lane).
	MinInputTokens int64 `yaml:"min_input_tokens"`
	// MaxInFlight is the lane's share of capacity: at most this many of
	// its requests in flight at once (default: a quarter of
	// admission.max_in_flight, or of the providers' max_in_flight summed
	// when every provider declares one and that is less).
	MaxInFlight int `yaml:"max_in_flight"`
	// MaxWait is how long the lane's requests may wait for a slot
	// (default: their class's, admission.queue.max_wait or
	// lanes.batch.max_wait): a report can wait longer than a chat.
	MaxWait Duration `yaml:"max_wait"`
	// Limits are the lane's own budgets, across all keys.
	Limits Limits `yaml:"limits"`
}

// BatchLane is the background class, waiting long for leftover capacity.
type BatchLane struct {
	// MaxWait is how long background requests may wait for a slot
	// (default: admission.queue.max_wait; a batch lane is typically
	// minutes).
	MaxWait Duration `yaml:"max_wait"`
	// Headroom is how many of the global slots background requests leave
	// free for interactive and critical ones (default 0).
	Headroom int `yaml:"headroom"`
}

// Degrade says how a model's background requests are served under
// pressure instead of refused (seed 003: "degrade to a smaller model,
// shorten context").
type Degrade struct {
	// To is a smaller model (a client-facing model in this file) to
	// serve the request with.
	To string `yaml:"to"`
	// MaxTokens caps the request's max_tokens (0: no cap).
	MaxTokens int64 `yaml:"max_tokens"`
	// TrimTo, opt-in, drops the oldest non-system messages until the
	// request's input fits this many tokens (0: never).
	TrimTo int64 `yaml:"trim_to"`
	// QueueAge: pressure is the oldest waiter having waited this long
	// (default 1s)...
	QueueAge Duration `yaml:"queue_age"`
	// BudgetBelow: ...or the key's budget having less than this share
	// left in any dimension (default 0.1).
	BudgetBelow float64 `yaml:"budget_below"`
}

// Price is what a model costs, in dollars per million tokens.
type Price struct {
	Input  float64 `yaml:"input"`
	Output float64 `yaml:"output"`
	// CachedInput is the price of input the provider served from its
	// prompt cache (OpenAI's cached input, Anthropic's cache reads);
	// zero or absent prices it as input.
	CachedInput float64 `yaml:"cached_input"`
}

// Degrade defaults.
const (
	DefaultDegradeQueueAge    = time.Second
	DefaultDegradeBudgetBelow = 0.1
)

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

func (c *Config) validateKeys(v *checker) {
	names, hashes := map[string]int{}, map[string]int{}
	for i, k := range c.Keys {
		at := func(f string) string { return fmt.Sprintf("keys[%d].%s", i, f) }
		switch j, dup := names[k.Name]; {
		case k.Name == "":
			v.add(at("name"), "missing; give each key a unique name, e.g. team-search")
		case !providerName.MatchString(k.Name):
			v.add(at("name"), "%s may only contain letters, digits, '.', '_' and '-'", short(k.Name))
		case dup:
			v.add(at("name"), "%s is already the name of keys[%d]; give each key a unique name", short(k.Name), j)
		default:
			names[k.Name] = i
		}
		// The hash is not secret, but a key pasted here by mistake would
		// be: it is never echoed.
		switch j, dup := hashes[k.SHA256]; {
		case k.SHA256 == "":
			v.add(at("sha256"), "missing; write the key's SHA-256 in hex (sluice keys new makes a key and prints it)")
		case !sha256Hex.MatchString(k.SHA256):
			v.add(at("sha256"), "must be 64 lower-case hex digits, the SHA-256 of the key, never the key itself; sluice keys new prints both")
		case dup:
			v.add(at("sha256"), "is the same as keys[%d]'s: two names for one key", j)
		default:
			hashes[k.SHA256] = i
		}
		if k.Priority != "" {
			v.oneOf(at("priority"), k.Priority, PriorityCritical, PriorityInteractive, PriorityBackground)
		}
		for j, m := range k.Models {
			if _, ok := c.Model(m); !ok {
				v.add(at(fmt.Sprintf("models[%d]", j)), "%s is not a configured model; known models: %s", short(m), c.modelNames())
			}
		}
		validateLimits(v, at("limits"), k.Limits)
	}
	// Keys made at run time need a durable store and the admin API's
	// token; with both, auth.required may stand before any key exists.
	if c.Auth.Required != nil && *c.Auth.Required && len(c.Keys) == 0 && !(c.Durable() && c.Admin.TokenEnv != "") {
		v.add("auth.required", "is true but no keys are defined, so nobody could get in; add keys:, or remove auth.required (or, to make keys at run time through the admin API, set admin.token_env and store: or state.dir:)")
	}
	if c.Admission.CriticalKeysEnv != "" && len(c.Keys) > 0 {
		v.add("admission.critical_keys_env", "is the old way to name critical keys; with keys: defined, give the critical ones priority: critical and remove it")
	}
}

func validateLimits(v *checker, at string, l Limits) {
	for _, f := range []struct {
		name string
		n    int64
	}{{"rpm", l.RPM}, {"itpm", l.ITPM}, {"otpm", l.OTPM}} {
		if f.n < 0 {
			v.add(at+"."+f.name, "%d is negative; write 0 (or leave it out) for no limit", f.n)
		}
	}
	if l.Burst < 0 || l.Burst.D() > time.Hour {
		v.add(at+".burst", "must be between 0 (the default, %s) and 1h; write e.g. 10s or 60s", DefaultBurst)
	}
}

func (c *Config) validateLanes(v *checker) {
	l := c.Lanes.LargeContext
	if l.MinInputTokens < 0 {
		v.add("lanes.large_context.min_input_tokens", "%d is negative; write e.g. 16000, or leave it out for no large-context lane", l.MinInputTokens)
	}
	if l.MaxInFlight < 0 {
		v.add("lanes.large_context.max_in_flight", "%d is negative; write a positive share of admission.max_in_flight", l.MaxInFlight)
	}
	if l.MaxWait < 0 {
		v.add("lanes.large_context.max_wait", "is negative; write e.g. 30s")
	}
	validateLimits(v, "lanes.large_context.limits", l.Limits)
	if (l.MaxInFlight > 0 || l.Limits.Any()) && l.MinInputTokens == 0 {
		v.add("lanes.large_context.min_input_tokens", "missing: the lane has limits but no threshold, so no request would join it; write e.g. 16000")
	}
	b := c.Lanes.Batch
	if b.MaxWait < 0 {
		v.add("lanes.batch.max_wait", "is negative; write e.g. 5m")
	}
	if b.Headroom < 0 || (b.Headroom >= c.Admission.MaxInFlight && c.Admission.MaxInFlight > 0) {
		v.add("lanes.batch.headroom", "%d must be at least 0 and less than admission.max_in_flight (%d), or background work could never run", b.Headroom, c.Admission.MaxInFlight)
	}
}

func (c *Config) validateDegrade(v *checker, i int, m *Model) {
	if m.DefaultMaxTokens < 0 {
		v.add(fmt.Sprintf("models[%d].default_max_tokens", i), "%d is negative; write e.g. 8192, or leave it out for 4096", m.DefaultMaxTokens)
	}
	d := m.Degrade
	if d == nil {
		return
	}
	at := func(f string) string { return fmt.Sprintf("models[%d].degrade.%s", i, f) }
	if d.To == "" && d.MaxTokens == 0 && d.TrimTo == 0 {
		v.add(fmt.Sprintf("models[%d].degrade", i), "says nothing to do; set to (a smaller model), max_tokens, or trim_to")
	}
	if d.To != "" {
		switch to, ok := c.Model(d.To); {
		case !ok:
			v.add(at("to"), "%s is not a configured model; known models: %s", short(d.To), c.modelNames())
		case d.To == m.Name:
			v.add(at("to"), "names the model itself; name a smaller one")
		case len(to.Targets) > 0 && len(m.Targets) > 0 && c.kindOf(to.Targets[0].Provider) != c.kindOf(m.Targets[0].Provider):
			v.add(at("to"), "%s is served by another API than %s, so the request's body would not fit it; name a model of the same kind", short(d.To), short(m.Name))
		}
	}
	if d.MaxTokens < 0 || d.TrimTo < 0 || d.QueueAge < 0 {
		v.add(fmt.Sprintf("models[%d].degrade", i), "max_tokens, trim_to and queue_age must not be negative")
	}
	if d.BudgetBelow < 0 || d.BudgetBelow > 1 {
		v.add(at("budget_below"), "%g must be a share between 0 and 1, e.g. 0.1", d.BudgetBelow)
	}
}

// kindOf is the API a provider speaks: azure speaks OpenAI's.
func (c *Config) kindOf(provider string) string {
	if p, ok := c.Provider(provider); ok {
		if p.Kind == KindAzure {
			return KindOpenAI
		}
		if p.Native() {
			return KindAnthropic // the hub (native.go)
		}
		return p.Kind
	}
	return ""
}

func (c *Config) modelNames() string {
	names := make([]string, 0, len(c.Models))
	for _, m := range c.Models {
		names = append(names, m.Name)
	}
	slices.Sort(names)
	return orList(names)
}

// KeyHash returns the SHA-256 of a client's key, in the form keys[].sha256
// holds.
func KeyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

func (c *Config) validateStore(v *checker) {
	if c.Store != "" {
		u, err := url.Parse(c.Store)
		switch {
		case err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "":
			// The URL may carry a password: it is never echoed.
			v.add("store", "must be a Redis URL such as redis://127.0.0.1:6379/0 (or rediss:// for TLS), or left out to keep state in this process")
		case u.Port() == "":
			v.add("store", "names no port; write e.g. redis://%s:6379/0", u.Hostname())
		}
	}
	if c.Fleet.Timeout < 0 {
		v.add("fleet.timeout", "is negative; write e.g. 50ms")
	}
}
