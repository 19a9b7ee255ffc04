package policy

import (
	"fmt"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/breaker"
	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	"github.com/sluice-gw/sluice/internal/core/limit"
	"github.com/sluice-gw/sluice/internal/core/pool"
	"github.com/sluice-gw/sluice/internal/core/quota"
)

// FromConfig builds the engine configuration a gateway config describes:
// one scope per provider, in config order, each with its fixed or
// adaptive limit. The gateway and the simulator both build their engines
// here, so they cannot disagree about what a config means.
//
// A time-scaled config (config.Config.Scaled, sluice serve --time-scale)
// has its own times scaled already; FromConfig passes its TimeScale on to
// the engine, the breakers and the limits, which scale the defaults and
// internal clocks that live in code by it.
func FromConfig(cfg *config.Config) (lifecycle.Config, error) {
	scopes := make([]lifecycle.ScopeConfig, len(cfg.Providers))
	for i := range cfg.Providers {
		sc, err := scopeConfig(&cfg.Providers[i], cfg.TimeScale)
		if err != nil {
			return lifecycle.Config{}, fmt.Errorf("providers[%d]: %w", i, err)
		}
		scopes[i] = sc
	}
	routes := make(map[string]lifecycle.Route, len(cfg.Models))
	for i := range cfg.Models {
		r, err := route(cfg, &cfg.Models[i], scopes)
		if err != nil {
			return lifecycle.Config{}, fmt.Errorf("models[%d]: %w", i, err)
		}
		routes[cfg.Models[i].Name] = r
	}
	a := cfg.Admission
	ac := admission.Config{
		Global:   admission.Fixed(a.MaxInFlight),
		MaxDepth: a.Queue.MaxDepth,
		MaxWait:  a.Queue.MaxWait.D(),
		Reserved: a.Priorities.Critical.Reserved,
		MaxQueued: [3]int{
			admission.Interactive: a.Priorities.Interactive.MaxQueued,
			admission.Background:  a.Priorities.Background.MaxQueued,
		},
	}
	ac.FailFast = a.FailsFast()
	ac.MaxWaitFor[admission.Background] = cfg.Lanes.Batch.MaxWait.D()
	ac.Headroom[admission.Background] = cfg.Lanes.Batch.Headroom
	large := cfg.Lanes.LargeContext
	if large.MinInputTokens > 0 {
		ac.Lanes = []admission.Limiter{admission.Fixed(large.MaxInFlight)}
		ac.LaneMaxWait = []time.Duration{large.MaxWait.D()}
	}
	b := lifecycle.Budgets{LargeMinInput: large.MinInputTokens, Large: Limits(large.Limits)}
	var tenants []int
	ids := map[string]int{}
	for _, k := range cfg.Keys {
		b.Keys = append(b.Keys, Limits(k.Limits))
		id, ok := ids[k.TenantName()]
		if !ok {
			id = len(ids) + 1
			ids[k.TenantName()] = id
		}
		tenants = append(tenants, id)
	}
	for _, p := range cfg.Providers {
		b.Scopes = append(b.Scopes, Limits(p.Limits))
		m := make(map[string]quota.Limits, len(p.ModelLimits))
		for name, l := range p.ModelLimits {
			m[name] = Limits(l)
		}
		b.Models = append(b.Models, m)
	}
	return lifecycle.Config{Scopes: scopes, Routes: routes, Hedge: lifecycle.HedgeConfig{Budget: cfg.Hedging.Budget, Burst: cfg.Hedging.Burst},
		Retry: lifecycle.RetryConfig{Budget: cfg.Retries.Budget, Burst: cfg.Retries.Burst, WaitMax: cfg.Retries.WaitMax.D()}, Admission: ac,
		FirstToken: lifecycle.FirstTokenConfig{Ceiling: cfg.FirstToken.Ceiling.D(), Floor: cfg.FirstToken.Floor.D(), Factor: cfg.FirstToken.Factor}, Budgets: b, KeyTenants: tenants,
		TimeScale: cfg.TimeScale, HoldBudget: a.Queue.HoldBudget.D()}, nil
}

// Limits converts a config's per-minute limits to a budget's: requests
// with their burst (config.Limits.RequestBurst), tokens with a minute's
// allowance (a scaled minute's, config.Limits.TokenBurstOf, in a
// time-scaled config).
func Limits(l config.Limits) quota.Limits {
	return quota.Limits{
		quota.Requests:     {PerMinute: l.RPM, Burst: l.RequestBurst()},
		quota.InputTokens:  {PerMinute: l.ITPM, Burst: l.TokenBurstOf(l.ITPM)},
		quota.OutputTokens: {PerMinute: l.OTPM, Burst: l.TokenBurstOf(l.OTPM)},
	}
}

// route resolves a model's targets to scopes and reads its timeout,
// hedging and what each target can do to continue a broken stream.
func route(cfg *config.Config, m *config.Model, scopes []lifecycle.ScopeConfig) (lifecycle.Route, error) {
	r := lifecycle.Route{Name: m.Name, Timeout: cfg.Timeout(m), HedgeAfter: m.HedgeAfter.Fixed.D(), HedgeAtP95: m.HedgeAfter.P95}
	for j, t := range m.Targets {
		s := -1
		for i := range cfg.Providers {
			if cfg.Providers[i].Name == t.Provider {
				s = i
			}
		}
		if s < 0 {
			return r, fmt.Errorf("targets[%d].provider: unknown provider %q", j, t.Provider)
		}
		r.Targets = append(r.Targets, s)
		r.Models = append(r.Models, t.Model)
		r.Continue = append(r.Continue, continueCaps(cfg.Providers[s], t))
		// A call on a target before the last may be rescued onto the next.
		r.Races = r.Races || (scopes[s].Rescue && j < len(m.Targets)-1)
	}
	r.Races = r.Races || r.HedgeAfter > 0 || r.HedgeAtP95
	// The first-token deadline races a silent call with the next target.
	r.FirstTokenCeiling = m.FirstTokenCeiling.D()
	if m.FirstTokenOff {
		r.FirstTokenCeiling = -1
	}
	ftOn := r.FirstTokenCeiling > 0 || (r.FirstTokenCeiling == 0 && cfg.FirstToken.Ceiling > 0)
	r.Races = r.Races || (ftOn && cfg.Hedging.Budget > 0 && len(m.Targets) > 1)
	r.DefaultOutput = m.DefaultMaxTokens
	r.InvalidFails = m.Validation.CountInBreaker
	r.ContextFallback, r.ContextWindow = m.ContextFallback, m.ContextWindow
	if d := m.Degrade; d != nil {
		r.Degrade = &lifecycle.Degradation{To: d.To, MaxTokens: d.MaxTokens, TrimTo: d.TrimTo,
			QueueAge: d.QueueAge.D(), BudgetBelow: d.BudgetBelow}
	}
	return r, nil
}

// scopeConfig builds a provider's scope: its fixed or adaptive limit, the
// latency signal and the slow threshold; timeScale is the config's
// (zero: 1), for the breaker's and the limit's defaults.
func scopeConfig(pc *config.Provider, timeScale float64) (lifecycle.ScopeConfig, error) {
	l := pc.Limit
	sig, ok := lifecycle.ParseSignal(l.Signal)
	if !ok {
		return lifecycle.ScopeConfig{}, fmt.Errorf("limit.signal: unknown signal %q", l.Signal)
	}
	sc := lifecycle.ScopeConfig{Name: pc.Name, Fixed: pc.MaxInFlight, Signal: sig, SlowThreshold: l.SlowThreshold.D()}
	if pc.Pooled() {
		p, err := newPool(pc, timeScale)
		if err != nil {
			return sc, err
		}
		sc.Pool, sc.Fixed = p, pc.Capacity()
	} else if bc := pc.Breaker; bc != nil {
		b, err := breaker.New(breakerConfig(bc, bc.Probe == config.ProbeSynthetic, timeScale))
		if err != nil {
			return sc, err
		}
		sc.Breaker = b
		sc.Rescue = bc.Rescues()
		sc.SyntheticProbes = bc.Probe == config.ProbeSynthetic
	}
	if l.Algorithm == "" || l.Algorithm == "fixed" {
		return sc, nil
	}
	p := limit.Params{
		Initial:           l.Initial,
		Min:               l.Min,
		Max:               l.Max,
		Backoff:           l.Backoff,
		Window:            l.Window.D(),
		Cooldown:          l.Cooldown.D(),
		LatencyThreshold:  l.LatencyThreshold.D(),
		QueueAgeThreshold: l.QueueAgeThreshold.D(),
		Tolerance:         l.Tolerance,
		Smoothing:         l.Smoothing,
		LongWindow:        l.LongWindow,
		QueueSize:         l.QueueSize,
		TimeScale:         timeScale,
	}
	// max_in_flight, when set, caps an adaptive limit that names no max.
	if p.Max == 0 && pc.MaxInFlight > 0 {
		p.Max = pc.MaxInFlight
	}
	alg, err := limit.New(l.Algorithm, p)
	if err != nil {
		return sc, fmt.Errorf("limit: %w", err)
	}
	sc.Limit = alg
	return sc, nil
}

// breakerConfig is a provider's breaker settings as the breaker takes
// them; steady: its probes are synthetic (breaker.Config.Steady).
func breakerConfig(bc *config.Breaker, steady bool, timeScale float64) breaker.Config {
	c := breaker.Config{
		Window:        bc.Window.D(),
		MinCalls:      bc.MinCalls,
		ErrorRate:     bc.ErrorRate,
		SlowRate:      bc.SlowRate,
		SlowThreshold: bc.SlowThreshold.D(),
		OpenFor:       bc.OpenFor.D(),
		OpenForMax:    bc.OpenForMax.D(),
		Probes:        bc.Probes,
		ProbeTimeout:  bc.ProbeTimeout.D(),
		ProbeInterval: bc.ProbeInterval.D(),
		StepHold:      bc.StepHold.D(),
		Steps:         bc.Steps,
		Steady:        steady,
		TimeScale:     timeScale,
	}
	c.ConsecutiveErrors = bc.ConsecutiveErrors
	return c
}

// newPool builds a pooled provider's replica pool: each replica with its
// limit and a breaker of its own from the provider's breaker settings.
// A replica's breaker probes with the pool's own calls: a synthetic
// probe would need a route to one replica, and a pool has others to
// carry its traffic meanwhile.
func newPool(pc *config.Provider, timeScale float64) (*pool.Pool, error) {
	bal, ok := pool.ParseBalance(pc.Pool.Balance)
	if !ok {
		return nil, fmt.Errorf("pool.balance: unknown balance %q", pc.Pool.Balance)
	}
	if timeScale <= 0 {
		timeScale = 1
	}
	cfg := pool.Config{Balance: bal, MaxWaiting: pc.Pool.MaxWaiting, StaleAfter: pc.Pool.StaleAfter.D(),
		Decay: time.Duration(float64(pool.DefaultDecay) * timeScale)}
	for i, r := range pc.Replicas {
		rc := pool.Replica{Limit: pc.ReplicaLimit(i), Metrics: r.MetricsURL != ""}
		if bc := pc.Breaker; bc != nil {
			b, err := breaker.New(breakerConfig(bc, false, timeScale))
			if err != nil {
				return nil, fmt.Errorf("replicas[%d]: %w", i, err)
			}
			rc.Breaker = b
		}
		cfg.Replicas = append(cfg.Replicas, rc)
	}
	return pool.New(cfg), nil
}
