package gateway

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	"github.com/sluice-gw/sluice/internal/policy"
	"github.com/sluice-gw/sluice/internal/server/metrics"
	"github.com/sluice-gw/sluice/internal/server/usage"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
	"github.com/sluice-gw/sluice/internal/wire/translate"
)

// The parts New wires, built from the configuration.

// newShell is a gateway with its server settings and its collaborators,
// Options' or the defaults, before its providers, models and engine.
func newShell(cfg *config.Config, opts Options) (*Gateway, error) {
	sv := cfg.Server.WithDefaults()
	g := &Gateway{
		log:       opts.Logger,
		transport: opts.Transport,
		now:       opts.Now,
		metrics:   opts.Metrics,
		providers: make(map[string]*provider),
		intake: intake{maxBody: cfg.MaxBodyBytes.Int64(), share: cfg.BodyBytesPerClient(), proxies: sv.Proxies(),
			timeout: sv.BodyReadTimeout.D(), bodies: opts.bodies},
		bodyLimits:   protocol.Limits{MaxMessages: sv.MaxMessages, MaxDepth: sv.MaxJSONDepth},
		maxHeaders:   sv.MaxHeaders,
		writeTimeout: sv.WriteTimeout.D(),
		streamIdle:   sv.StreamIdleTimeout.D(),
		stall:        policy.Stall(cfg),
		tell:         newResponseHeaders(cfg.ResponseHeaders),
		items:        opts.items,
	}
	if g.intake.bodies == nil {
		g.intake.bodies = &byteBudget{limit: sv.MaxBodyBytesInFlight.Int64()}
	}
	if g.items == nil {
		g.items = newItemStore(time.Now)
	}
	if g.metrics == nil {
		g.metrics = metrics.New()
	}
	if g.log == nil {
		g.log = NewLogger(io.Discard, cfg.Log)
	}
	if g.transport == nil {
		g.transport = NewTransport()
	}
	if g.now == nil {
		g.now = time.Now
	}
	g.tracing = newTracing(opts.TracerProvider, g.providers, g.now)
	g.usage = &usageBook{rec: opts.Usage, now: g.now}
	if g.usage.rec == nil {
		g.usage.rec = usage.NewRecorder(usage.Options{})
	}
	pri, ok := admission.ParsePriority(cfg.Admission.DefaultPriority)
	if !ok {
		return nil, fmt.Errorf("admission.default_priority: unknown class %q", cfg.Admission.DefaultPriority)
	}
	g.defaultPri = pri
	return g, nil
}

// addProviders builds the config's providers into byName and byScope,
// in scope order, and returns their names by scope.
func addProviders(cfg *config.Config, base http.RoundTripper, sign SignerFunc, byName map[string]*provider, byScope *[]*provider) ([]string, error) {
	names := make([]string, len(cfg.Providers))
	for i := range cfg.Providers {
		pc := &cfg.Providers[i]
		p, err := newProvider(i, pc, base, sign)
		if err != nil {
			return nil, err
		}
		byName[pc.Name] = p
		*byScope = append(*byScope, p)
		names[i] = pc.Name
	}
	return names, nil
}

// newProvider is the i-th provider of the config, pc, whose calls go
// through base unless it is a native one (native.go).
func newProvider(i int, pc *config.Provider, base http.RoundTripper, sign SignerFunc) (*provider, error) {
	d, ok := protocol.ParseDialect(pc.Kind)
	if pc.Native() {
		d, ok = protocol.Anthropic, true // the hub (native.go)
	}
	if !ok {
		return nil, fmt.Errorf("providers[%d].kind: unknown kind %q", i, pc.Kind)
	}
	p := &provider{
		name:    pc.Name,
		dialect: d,
		baseURL: strings.TrimSuffix(pc.BaseURL, "/"),
		key:     pc.APIKey(),
		keyEnv:  pc.APIKeyEnv,
		timeout: pc.Timeout.D(),
		scope:   i,
		forward: forwardList(d, pc.ForwardHeaders),
		headers: http.Header{},
	}
	if pc.Kind == config.KindAzure {
		p.azureVersion = pc.APIVersion
	}
	var err error
	if p.unsupported, err = translate.ParseUnsupported(pc.OnUnsupported); err != nil {
		return nil, fmt.Errorf("providers[%d]: %w", i, err)
	}
	if p.key != "" {
		p.keyHeader = []string{p.keyHeaderValue(p.key)}
	}
	p.responses.Store(pc.ServesResponses())
	// The provider's static secrets: its key, and what the operator's
	// headers carry (all but the public ones). A signer's are the
	// request's (credentials).
	secrets := []string{p.key}
	for k, v := range pc.Headers {
		p.headers.Set(k, v)
		secrets = append(secrets, headerSecrets(k, v)...)
	}
	p.scrub = newKeyScrub(secrets...)
	for _, r := range pc.Replicas {
		p.replicas = append(p.replicas, replicaEndpoint{name: r.Name, baseURL: strings.TrimSuffix(r.BaseURL, "/"), metricsURL: r.MetricsURL})
	}
	if b := pc.Breaker; b != nil {
		p.probeModel = b.ProbeModel
	}
	if pc.Native() {
		if err := setUpNative(p, i, pc, base, sign); err != nil {
			return nil, err
		}
	}
	if p.rt == nil {
		p.rt = base
	}
	p.adapters = adaptersFor(p)
	return p, nil
}

// newModels builds the config's models on their routes (policy's), and
// lists their names in order.
func newModels(cfg *config.Config, routes map[string]lifecycle.Route, byScope []*provider) (map[string]*model, []string, error) {
	models := make(map[string]*model, len(cfg.Models))
	var names []string
	for _, mc := range cfg.Models {
		m := &model{name: mc.Name, route: routes[mc.Name], onInvalid: onInvalidOf(mc.Validation), verdictEvent: mc.Validation.StreamEvent}
		m.caps = m.route.Continue
		var err error
		if m.unsupported, err = translate.ParseUnsupported(mc.OnUnsupported); err != nil {
			return nil, nil, fmt.Errorf("model %s: %w", mc.Name, err)
		}
		for j, s := range m.route.Targets {
			p := byScope[s]
			t := target{provider: p, model: m.route.Models[j]}
			t.said.provider, t.said.model = []string{p.name}, []string{t.model}
			m.targets = append(m.targets, t)
			if p.probeModel == "" {
				p.probeModel = m.route.Models[j] // the first target that names it
			}
		}
		models[mc.Name] = m
		names = append(names, mc.Name)
	}
	sort.Strings(names)
	return models, names, nil
}

// transitions is what a breaker's change of state does: it is logged and
// counted, under the replica's name for a pooled replica's own breaker,
// and a provider's is announced to the fleet (a fleet shares provider
// breakers only).
func transitions(log *slog.Logger, m *metrics.Metrics, f *fleet, byScope []*provider, names []string) func(lifecycle.Transition) {
	return func(t lifecycle.Transition) {
		if t.Replica > 0 {
			breakerTransition(log, m, byScope[t.Scope].replicas[t.Replica-1].name, t)
			return
		}
		breakerTransition(log, m, names[t.Scope], t)
		f.announce(names[t.Scope], t)
	}
}

// sourcesOf are what the metrics read from gateway g when scraped.
func sourcesOf(g *Gateway, scopeNames []string) metrics.Sources {
	return metrics.Sources{
		Admission: g.runner,
		Scopes:    scopeNames,
		Breakers:  g.runner.BreakerStats,
		Refused: func() metrics.Refusals {
			s := g.runner.SecondStats()
			return metrics.Refusals{HedgeBudget: s.NoBudget, HedgeNoTarget: s.NoTarget, RetryBudget: s.RetryNoBudget}
		},
		BodyBytes: func() (int64, int64, int64) {
			return g.intake.bodies.used.Load(), g.intake.bodies.limit, g.intake.bodies.reading.Load()
		},
		Quotas: g.quotas,
		Spend:  g.spend.spendMetrics,
	}
}

// quotas names the engine's budgets for the metrics.
func (g *Gateway) quotas() []metrics.Quota {
	stats := g.runner.BudgetStats()
	out := make([]metrics.Quota, 0, len(stats))
	if g.fleet != nil {
		out = append(out, g.sharedQuotas()...)
	}
	for _, s := range stats {
		name := "large_context"
		switch s.Owner {
		case "key":
			name = g.keys.name(s.Index)
		case "provider":
			name = g.byScope[s.Index].name
		}
		out = append(out, metrics.Quota{Owner: s.Owner, Name: name, Dimension: s.Dimension.String(),
			Limit: s.Limit, Remaining: s.Remaining, Reserved: s.Reserved})
	}
	return out
}
