package gateway

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/breaker"
	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	"github.com/sluice-gw/sluice/internal/core/price"
	"github.com/sluice-gw/sluice/internal/policy"
	"github.com/sluice-gw/sluice/internal/server/keystore"
	"github.com/sluice-gw/sluice/internal/server/metrics"
	"github.com/sluice-gw/sluice/internal/server/runner"
	"github.com/sluice-gw/sluice/internal/server/spendstore"
	"github.com/sluice-gw/sluice/internal/server/usage"
	"github.com/sluice-gw/sluice/internal/wire/native"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
	"github.com/sluice-gw/sluice/internal/wire/translate"
)

// Options are the gateway's collaborators. Every field may be left zero.
type Options struct {
	// Logger receives one line per request. Nil means a text logger on
	// stderr at the config's level.
	Logger *slog.Logger
	// Transport carries upstream calls. Nil means NewTransport().
	Transport http.RoundTripper
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
	// Metrics receives the gateway's measurements. Nil means a fresh
	// registry; a reloaded configuration shares its predecessor's, so
	// counters carry on.
	Metrics *metrics.Metrics
	// TracerProvider, when set, receives a span per request and per
	// upstream call (tracing.go). Nil means no tracing, unless the config
	// turns it on and a Host builds one.
	TracerProvider trace.TracerProvider
	// Usage receives the usage records (usage.go). Nil means records
	// kept in memory and never flushed; a Host makes one from the config
	// (NewUsageRecorder) and shares it with every configuration it
	// serves.
	Usage *usage.Recorder

	// bodies is the request-body budget, shared by a Host's
	// configurations so a reload cannot double it. Nil: the gateway's own.
	bodies *byteBudget
	// idem is the idempotency state a Host's configurations share
	// (flights in progress, stored answers). Nil: the gateway's own.
	idem *idemShared
	// items are the bridged Responses API answers' items a Host's
	// configurations share (responses_items.go). Nil: the gateway's own.
	items *itemStore
	// cache is the response cache's memory store a Host's
	// configurations share (cache.go). Nil: the gateway's own.
	cache *cacheShared
	// keys keeps the keys made at run time, which a Host's
	// configurations share (runtimekeys.go). Nil: none.
	keys keystore.Store
	// spend is the spend store a Host's configurations share, so a
	// reload grants no fresh allowance. Nil: the gateway's own.
	spend *spendShared
	// SpendStore, when set, keeps spend instead of the store the config
	// names (for tests: spendstore.NewMemory()).
	SpendStore spendstore.Store
	// signer, when set, builds native providers' signers in place of
	// signerFor (native.go), for tests.
	signer func(context.Context, *config.Provider) (native.Signer, error)
}

// Gateway serves the client API and the admin API for one configuration.
type Gateway struct {
	log       *slog.Logger
	metrics   *metrics.Metrics
	runner    *runner.Runner
	transport http.RoundTripper
	now       func() time.Time

	providers  map[string]*provider
	byScope    []*provider // by admission scope index
	models     map[string]*model
	modelNames []string
	defaultPri admission.Priority
	// keys are who may call the gateway (keys.go).
	keys *keyring
	// spend is the configuration's spend limits, nil without (spend.go).
	spend *spender
	// fleet is the shared store, when the config names one (fleet.go).
	fleet *fleet
	// counts counts requests' input tokens (budgets.go).
	counts *counting
	// tell is which X-Sluice-* response headers answers carry
	// (responseheaders.go).
	tell responseHeaders
	// tracing makes the request and upstream call spans (tracing.go); nil:
	// tracing off.
	tracing *tracing
	prices  map[string]price.Price // by upstream model (policy.Prices)
	usage   *usageBook             // the usage records (usage.go)
	ready   atomic.Bool

	// evals runs the models' fallback evals (evals.go).
	evals *evaluator

	// idem shares and replays requests with an Idempotency-Key
	// (idempotency.go); nil when idempotency.enabled is false.
	idem *idemState
	// items are bridged Responses API answers' items, for item_reference
	// (responses_items.go).
	items *itemStore
	// cache is the response cache (cache.go).
	cache *cacheState

	// bodyLimits bound a body's shape (server.max_messages,
	// .max_json_depth), checked as it is parsed (inference.go).
	bodyLimits protocol.Limits

	// intake reads request bodies within their bounds (body.go).
	intake intake
	// What a client may send and how long a write may take
	// (config.Server).
	maxHeaders   int
	writeTimeout time.Duration
	streamIdle   time.Duration
	// stall bounds the stall deadline of a stream (relay_continue.go).
	stall lifecycle.StallConfig
	// active counts requests in the handler, so a reload can tell when
	// the configuration it replaced has finished its last one.
	active  atomic.Int64
	handler http.Handler
	// prober sends the breakers' probes (probe.go); scrapers read the
	// pools' replicas' metrics (pool.go) until Close.
	prober   *prober
	scrapers *scrapers
}

type provider struct {
	name string
	// counting is its count_tokens calls in flight (counttokens.go).
	counting atomic.Int32
	dialect  protocol.Dialect
	baseURL  string
	// azureVersion is an azure provider's api-version, "" for any other
	// kind: its calls go to Azure OpenAI's deployment URLs, with its
	// api-key header (callURL, authorize).
	azureVersion string
	// responses: the provider serves the Responses API (config
	// ServesResponses); responsesWarned: its 404 to one was logged.
	responses, responsesWarned atomic.Bool
	key                        string // never logged
	keyEnv                     string // the variable it came from, for the operator's logs
	scrub                      *keyScrub
	timeout                    time.Duration
	scope                      int // admission scope index
	// forward lists the client headers this provider hears; headers are
	// the operator's own, set on every call.
	forward []string
	headers http.Header
	// keyHeader is the key as its header's value (authorize).
	keyHeader []string
	// authWarned: a refusal of the gateway's key was logged, and is not
	// again until a call succeeds.
	authWarned atomic.Bool
	// replicas are a pooled provider's servers, in config order (the
	// engine's pool indexes them); nil for a provider of one base_url.
	replicas []replicaEndpoint
	// probeModel is the upstream model a synthetic breaker probe asks for.
	probeModel string
	// probeCompletionTokens: probes ask for max_completion_tokens (the
	// provider refused max_tokens); probeWarned: a rejected probe was
	// logged, and is not again until one passes.
	probeCompletionTokens, probeWarned atomic.Bool
	// unsupported is the provider's on_unsupported, for the native
	// codecs that translate the hub's requests into its API.
	unsupported translate.Unsupported
	// native is a native API provider's codec (native.go), nil for the
	// others; rt, when set, carries its calls (roundTripper).
	native *nativeProvider
	// rt carries its calls, every one of the gateway's (generations,
	// continuations, probes, evals, counts): a native provider's own
	// transport, or the gateway's.
	rt http.RoundTripper
	// adapters are how a client of each API reaches the provider
	// (adapter.go).
	adapters [2]adapter
}

type model struct {
	name string
	// route is how the engine routes and times the model's requests
	// (policy.FromConfig); targets are its targets as the gateway
	// calls them.
	route   lifecycle.Route
	targets []target
	// onInvalid is validation.on_invalid: what an answer that breaks
	// its request's declared structured output does (validation.go);
	// verdictEvent, validation.stream_event: a stream's verdict is a
	// trailing event as well as trailers.
	onInvalid    string
	verdictEvent bool
	// caps is what each target can do to continue a broken stream, in
	// targets' order: the route's (lifecycle.Route.Continue), which the
	// simulator reads too.
	caps []lifecycle.ContinueCaps
	// unsupported is on_unsupported: what translating its requests to
	// another API does with a parameter that API cannot carry.
	unsupported translate.Unsupported
}

type target struct {
	provider *provider
	model    string
	// said is the provider's and model's names as response header
	// values, made once (responseheaders.go).
	said struct{ provider, model []string }
}

// New builds a gateway from a validated configuration. It only wires:
// the tables come from policy (the engine's routes, limits and budgets)
// and config, the parts from their own constructors (build.go).
func New(cfg *config.Config, opts Options) (*Gateway, error) {
	g, err := newShell(cfg, opts)
	if err != nil {
		return nil, err
	}
	keys, err := keyTable(cfg, g.defaultPri)
	if err != nil {
		return nil, err
	}
	g.counts = newCounting(cfg)
	g.prices = policy.Prices(cfg)
	scopeNames, err := addProviders(cfg, g.transport, opts.signer, g.providers, &g.byScope)
	if err != nil {
		return nil, err
	}
	ec, err := policy.FromConfig(cfg)
	if err != nil {
		return nil, err
	}
	ec.DynamicKeys = opts.keys != nil
	if g.models, g.modelNames, err = newModels(cfg, ec.Routes, g.byScope); err != nil {
		return nil, err
	}
	// Replicas must not jitter their Retry-After (or retry backoff) in
	// step, so each process seeds its own.
	ec.Seed = rand.Uint64()
	if cfg.Store != "" {
		if g.fleet, err = newFleet(cfg, g.log, g.metrics); err != nil {
			return nil, err
		}
		ec.Replicas = g.fleet.members.Live
		ec.Parts = g.fleet.claims.Parts
		ec.Budgets.SharedKeys = true
	}
	g.idem = newIdemState(cfg, opts.idem, g.fleet, g.metrics, g.log, g.now, g.writeTimeout, g.setRateHeaders)
	g.cache = newCacheState(cfg, opts.cache, g.fleet, g.metrics, g.log, g.now, g.usage, g.writeTimeout)
	if g.spend, err = newSpender(cfg, opts.spend, opts.SpendStore, g.log, g.now, g.metrics); err != nil {
		return nil, err
	}
	if g.fleet != nil {
		g.spend.countReplicas(g.fleet.members.Live)
	}
	g.runner = runner.NewRunner(ec, g.now)
	g.keys = newKeyring(cfg, keys, g.defaultPri, opts.keys, g.modelNames, g.runner, g.now)
	g.runner.OnTransition(transitions(g.log, g.metrics, g.fleet, g.byScope, scopeNames))
	g.prober = &prober{byScope: g.byScope, fleet: g.fleet, metrics: g.metrics, log: g.log}
	g.runner.SetProber(g.prober.probe)
	if g.evals, err = startEvals(cfg, g.providers, g.runner, g.metrics, g.log, g.now); err != nil {
		g.runner.Close()
		return nil, err
	}
	// The factor the configuration was time-scaled by (config.Scaled),
	// for sluice load to check its own --time-scale against.
	g.metrics.TimeScale.Set(cfg.TimeFactor())
	g.metrics.SetSources(sourcesOf(g, scopeNames))
	if g.fleet != nil {
		g.metrics.SetFleet(g.fleet.state)
		g.metrics.SetFleetShare(g.fleet.share)
		g.fleet.follow(g.runner, g.providers, g.byScope)
		g.fleet.startClaims(g.runner)
	}
	g.scrapers = startScrapers(cfg, g.byScope, g.runner, g.metrics, g.log)
	g.ready.Store(true)
	g.handler = g.Handler()
	return g, nil
}

// NewTransport returns the upstream transport: generous idle pools, since
// every request to one provider goes to one host, and no transparent
// compression, so streams reach the relay as the provider sent them.
//
// An HTTP/1.1 connection keeps its read and write buffers for its whole
// life, which for a stream is the stream's, so they are smaller than
// net/http's 4 KiB each: the relay reads an answer in 2 KiB pieces
// anyway (relayBufPool), and a larger read (a whole answer) bypasses
// the buffer; a request is written in upstreamWriteBuffer pieces, one
// write(2) for the headers and a body up to about 1.5 KiB. Together they
// save about 5 KiB per stream in flight.
func NewTransport() *http.Transport {
	return &http.Transport{
		ReadBufferSize:        upstreamReadBuffer,
		WriteBufferSize:       upstreamWriteBuffer,
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          4096,
		MaxIdleConnsPerHost:   1024,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
	}
}

// The upstream connections' buffer sizes (NewTransport).
const (
	upstreamReadBuffer  = 2 << 10
	upstreamWriteBuffer = 2 << 10
)

// NewLogger builds the request logger from the log config.
func NewLogger(w io.Writer, c config.Log) *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.Level)); err != nil {
		level = slog.LevelInfo
	}
	o := &slog.HandlerOptions{Level: level}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, o))
	}
	return slog.New(slog.NewTextHandler(w, o))
}

// Metrics exposes the gateway's collectors.
func (g *Gateway) Metrics() *metrics.Metrics { return g.metrics }

// Runner exposes the lifecycle runner, for tests and the admin API.
func (g *Gateway) Runner() *runner.Runner { return g.runner }

// Close stops the gateway's timers.
func (g *Gateway) Close() {
	g.evals.close()
	g.scrapers.stop()
	g.runner.Close()
	if g.fleet != nil {
		g.fleet.close()
	}
	if g.spend != nil && g.spend.own != nil {
		g.spend.own.close()
	}
	if g.cache != nil {
		g.cache.writes.Wait() // each bounded by its timeout
	}
}

// SetReady flips /readyz, e.g. to drain before shutdown.
func (g *Gateway) SetReady(ok bool) { g.ready.Store(ok) }

// breakerTransition logs a breaker's state change once, with the numbers
// that caused it, and counts it.
func breakerTransition(log *slog.Logger, m *metrics.Metrics, provider string, t lifecycle.Transition) {
	level := slog.LevelInfo
	if t.To == breaker.Open {
		level = slog.LevelWarn
	}
	log.LogAttrs(context.Background(), level, "breaker",
		slog.String("provider", provider),
		slog.String("from", t.From.String()),
		slog.String("to", t.To.String()),
		slog.String("reason", string(t.Reason)),
		slog.Float64("weight", t.Weight),
		slog.Int("calls", t.Calls),
		slog.Float64("error_rate", t.ErrorRate),
		slog.Float64("slow_rate", t.SlowRate))
	m.BreakerTransitions.WithLabelValues(provider, t.To.String(), string(t.Reason)).Inc()
}

// BodyBytesHeld is how many bytes of request bodies the gateway holds
// now, out of server.max_body_bytes_in_flight.
func (g *Gateway) BodyBytesHeld() int64 { return g.intake.bodies.used.Load() }

// ReadingBodies is how many requests are reading their bodies now.
func (g *Gateway) ReadingBodies() int64 { return g.intake.bodies.reading.Load() }
