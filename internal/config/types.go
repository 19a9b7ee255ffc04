package config

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Config is the whole of a Sluice gateway configuration, as read from YAML.
// Every field has a default (see defaults.go), so an empty file is valid
// apart from needing at least one provider and one model.
type Config struct {
	// Listen is the client-facing address, host:port.
	Listen string `yaml:"listen"`
	// AdminListen serves /metrics, /healthz, /readyz and the dashboard,
	// host:port. Beyond loopback it needs admin.token_env (or admin.open).
	AdminListen string `yaml:"admin_listen"`
	// Admin guards the admin listener.
	Admin Admin `yaml:"admin"`
	// MaxBodyBytes bounds a request body; larger bodies get 413.
	MaxBodyBytes ByteSize `yaml:"max_body_bytes"`
	// Server bounds what clients can hold of the gateway: connections,
	// headers, request bodies, and the time they may take.
	Server    Server     `yaml:"server"`
	Log       Log        `yaml:"log"`
	Providers []Provider `yaml:"providers"`
	Models    []Model    `yaml:"models"`
	Admission Admission  `yaml:"admission"`
	Hedging   Budget     `yaml:"hedging"`
	// FirstToken is the first-token deadline: a call with no first token
	// by a deadline derived from its target's recent time to first token
	// gets a second call on the next target (firsttoken.go).
	FirstToken FirstToken `yaml:"first_token"`
	// Retries bounds retries on the provider that failed, per provider:
	// they stay within budget (default 0.1) of the requests sent to it.
	// A retry on another target is not charged (it adds no load to the
	// provider that failed).
	Retries Retries `yaml:"retries"`
	// Keys are the virtual keys clients send (keys.go); with any defined,
	// a request needs one (auth).
	Keys []Key `yaml:"keys"`
	// Store, a redis:// or rediss:// URL, makes the replicas that name it
	// one fleet: key budgets exact across them, concurrency limits split
	// between the live ones. Empty: everything stays in this process.
	Store string `yaml:"store"`
	Fleet Fleet  `yaml:"fleet"`
	// State is where a replica without a store keeps what must outlive
	// it (state.go).
	State State `yaml:"state"`
	Auth  Auth  `yaml:"auth"`
	// Idempotency is how requests with an Idempotency-Key are shared
	// and replayed (idempotency.go).
	Idempotency Idempotency `yaml:"idempotency"`
	// Cache bounds the response cache, which models[].cache and
	// keys[].cache turn on (cache.go, docs/CACHE.md).
	Cache Cache `yaml:"cache"`
	// ResponseHeaders are the X-Sluice-* headers on every answer that say
	// which provider and model served it, after how many calls and how
	// long a wait (responseheaders.go). All are sent unless hidden.
	ResponseHeaders ResponseHeaders `yaml:"response_headers"`
	// Tracing sends OpenTelemetry traces (tracing.go); off by default.
	Tracing Tracing `yaml:"tracing"`
	// Lanes keep large-context and batch work apart from interactive.
	Lanes Lanes `yaml:"lanes"`
	// Prices, per upstream model, give the cost of each request: the
	// shipped table (prices.yaml, sluice prices), each model named here
	// replaced.
	Prices map[string]Price `yaml:"prices"`
	// Usage is how the usage records are kept (usage.go).
	Usage Usage `yaml:"usage"`
	// Teams are spend limits across keys: a team is the keys whose
	// tenant: is its name (team = tenant; spend.go).
	Teams []Team `yaml:"teams"`
	// Spend holds what every spend limit shares: the time zone of
	// calendar windows.
	Spend Spend `yaml:"spend"`
	// Evals bounds the eval calls of every model's eval set together
	// (models[].evals); unused when no model declares one.
	Evals EvalBudget `yaml:"evals"`
	// Scenario is ignored by serve; sim and load read it, so that one file
	// describes a gateway and the traffic to test it with.
	Scenario RawNode `yaml:"scenario"`

	// TimeScale is the factor Scaled multiplied this configuration's
	// times by (sluice serve --time-scale); 0 means 1, real time. The
	// engine scales the defaults that live in code by it too
	// (policy.FromConfig), and the gateway exports it as
	// sluice_time_scale. Never read from a file.
	TimeScale float64 `yaml:"-"`

	// src records where each value came from, so that validation can point
	// at lines and defaults can tell "left out" from an explicit zero. Nil
	// for configs built in code.
	src *source
}

// Server bounds what clients can hold of the gateway before and after
// admission: each limit keeps one client, or a crowd of idle ones, from
// taking memory or time that others need. Defaults follow Envoy's where
// Envoy has one. See defaults.go for the values and why.
type Server struct {
	// MaxConnections caps open client connections; past it new ones wait
	// in the kernel's accept queue (default 10000).
	MaxConnections int `yaml:"max_connections"`
	// MaxHeaderBytes caps a request's header block (default 64KiB, about
	// Envoy's 60 KiB); past it, 431.
	MaxHeaderBytes ByteSize `yaml:"max_header_bytes"`
	// MaxHeaders caps the number of request header fields (default 100,
	// Envoy's); past it, 431.
	MaxHeaders int `yaml:"max_headers"`
	// MaxBodyBytesInFlight caps the request-body bytes the gateway holds
	// at once, across all requests, counted as they arrive (default
	// 128MiB); past it, requests are refused with 503/529.
	MaxBodyBytesInFlight ByteSize `yaml:"max_body_bytes_in_flight"`
	// MaxMessages caps a request's messages array (default 100000; past
	// it, 413) and MaxJSONDepth how deeply its body nests (default 128;
	// past it, 400): the work done on a body before admission (counting,
	// translation) grows with its pieces, not only its bytes.
	MaxMessages  int `yaml:"max_messages"`
	MaxJSONDepth int `yaml:"max_json_depth"`
	// MaxBodyBytesPerClient caps what one client holds of that budget:
	// its virtual key when it sent a known one, otherwise its IP address
	// (an IPv6 /64). Past it, that client's requests are refused with
	// 429, so one client cannot take the budget from the others. Zero:
	// a quarter of max_body_bytes_in_flight, raised to twice
	// max_body_bytes (see Config.BodyBytesPerClient).
	MaxBodyBytesPerClient ByteSize `yaml:"max_body_bytes_per_client"`
	// ReadHeaderTimeout bounds sending the request line and headers
	// (default 10s); BodyReadTimeout bounds sending the body (default
	// 30s; past it, 408).
	ReadHeaderTimeout Duration `yaml:"read_header_timeout"`
	BodyReadTimeout   Duration `yaml:"body_read_timeout"`
	// WriteTimeout bounds one write to a client (default 10s): a client
	// that stops reading loses its request, and its upstream call is
	// cancelled, once that long passes with nothing accepted.
	WriteTimeout Duration `yaml:"write_timeout"`
	// StreamIdleTimeout ends a response whose provider sends nothing for
	// this long after it started answering (default 60s).
	StreamIdleTimeout Duration `yaml:"stream_idle_timeout"`
	// StreamStallTimeout and StreamStallFloor bound the stall deadline
	// of a stream that has begun: quiet for longer, it counts as broken
	// and is continued elsewhere (lifecycle.StallDeadline: 20 times the
	// stream's own mean gap, within [floor, timeout]; defaults 5s and
	// 15s, well under stream_idle_timeout).
	StreamStallTimeout Duration `yaml:"stream_stall_timeout"`
	StreamStallFloor   Duration `yaml:"stream_stall_floor"`
	// IdleTimeout closes a keep-alive connection idle this long (default
	// 120s).
	IdleTimeout Duration `yaml:"idle_timeout"`
	// DrainDelay is how long /readyz fails after SIGTERM before the
	// listener closes, so load balancers stop sending first (default 5s).
	DrainDelay Duration `yaml:"drain_delay"`
	// ShutdownGrace is how long in-flight requests get to finish after
	// the listener closes (default 30s); streams still open then end with
	// an error event.
	ShutdownGrace Duration `yaml:"shutdown_grace"`
	// AllowedHosts are the names, beyond this machine's own (localhost,
	// 127.0.0.1, [::1], the listen address), that a listener on loopback
	// answers to in the Host header; others get 421, so that a web page
	// whose name points at 127.0.0.1 (DNS rebinding) cannot call it
	// (browser.go).
	AllowedHosts []string `yaml:"allowed_hosts"`
	// CORS names the web origins allowed to call the client API from a
	// browser (browser.go); without it, cross-origin requests get 403.
	CORS CORS `yaml:"cors"`
	// TrustedProxies are the addresses (IPs or CIDR prefixes) of the
	// proxies in front of the gateway whose X-Forwarded-For is believed:
	// a keyless client is then known by the address its proxy saw, not
	// the proxy's (proxies.go). Default: none, and the socket's peer is
	// the client.
	TrustedProxies []string `yaml:"trusted_proxies"`
}

// Log selects the request log's format and level.
type Log struct {
	Format string `yaml:"format"` // "text" (default) or "json"
	Level  string `yaml:"level"`  // "debug", "info" (default), "warn", "error"
}

// Provider is one upstream API endpoint.
type Provider struct {
	Name string `yaml:"name"`
	// Kind is the wire protocol the provider speaks: "openai",
	// "anthropic", or "azure" (Azure OpenAI: OpenAI's API, called at
	// {base_url}/openai/deployments/{target model}/...?api-version=...
	// with the key in an api-key header), or a native API: "gemini"
	// (Google's generateContent, on the Gemini API or Vertex AI) or
	// "bedrock" (AWS Bedrock's Converse), served through Anthropic's
	// Messages API as the hub (native.go).
	Kind string `yaml:"kind"`
	// BaseURL includes the API version prefix, e.g. https://api.openai.com/v1
	// or http://127.0.0.1:8000/v1 for vLLM. Client paths below /v1 are
	// appended to it. For kind azure it is the resource's endpoint, e.g.
	// https://NAME.openai.azure.com, with no /openai path: each target's
	// model is then its deployment's name. A pool (Replicas) has none:
	// each replica has its own.
	BaseURL string `yaml:"base_url"`
	// APIKeyEnv names the environment variable holding the provider's key.
	// The key itself never appears in config, logs or errors. Empty means
	// the provider needs no key (self-hosted).
	APIKeyEnv string `yaml:"api_key_env"`
	// APIVersion is the api-version query parameter every call to an
	// azure provider carries (default DefaultAzureAPIVersion, the current
	// GA version; a "-preview" version works too). Only for kind azure.
	APIVersion string `yaml:"api_version"`
	// Responses says whether the provider serves OpenAI's Responses API
	// (POST /v1/responses), which Sluice passes through but never
	// translates. Default true for kind openai (OpenAI's API, vLLM and
	// SGLang have it), false otherwise; write false for an
	// OpenAI-compatible server without it, and its targets are skipped
	// for Responses requests. It cannot be true for kind anthropic or
	// azure. Nil means the default (ServesResponses).
	Responses *bool `yaml:"responses"`
	// Timeout bounds one upstream call end to end (default 60s).
	Timeout Duration `yaml:"timeout"`
	// MaxInFlight caps concurrent upstream calls to this provider
	// (0 = only the global limit applies); for a pool, to each replica.
	MaxInFlight int `yaml:"max_in_flight"`
	// Limit makes this provider's concurrency limit adaptive. Without
	// it the limit is fixed at MaxInFlight.
	Limit Limit `yaml:"limit"`
	// Breaker watches this provider for errors and slowness and takes it
	// out of rotation while it is unhealthy, so a model's next target
	// gets its traffic. Every provider has one: left out, or written
	// "breaker: {}", it takes the defaults (see package breaker, "Why
	// these defaults"); "breaker: off" turns it off. After parsing, nil
	// means off.
	Breaker *Breaker `yaml:"breaker"`
	// Headers are set on every call to the provider (an organization or
	// project id, a gateway-side beta flag). Values may use ${VAR}.
	Headers map[string]string `yaml:"headers"`
	// Limits are the provider's per-minute budgets across all its models
	// (the account's quota); ModelLimits, per upstream model. A target
	// over its budget is passed over for the next, as a paused one is.
	Limits      Limits            `yaml:"limits"`
	ModelLimits map[string]Limits `yaml:"model_limits"`
	// ForwardHeaders names client request headers passed on to the
	// provider beyond those its API needs (for OpenAI: OpenAI-Beta; for
	// Anthropic: anthropic-version, anthropic-beta). Every other client
	// header stops at the gateway: a client's identity and forwarding
	// headers must not reach a third party, nor change how the provider
	// treats the gateway's key for everyone.
	ForwardHeaders []string `yaml:"forward_headers"`
	// Replicas makes the provider a pool of self-hosted servers (vLLM,
	// SGLang) serving the same model, in place of base_url: each call
	// goes to one replica, chosen by Pool.Balance. Each replica has its
	// own concurrency limit (max_in_flight, its own or the provider's)
	// and its own breaker (the provider's breaker settings, probing with
	// traffic); the provider's limit is the sum of its replicas'. Empty:
	// the provider is base_url alone.
	Replicas []Replica `yaml:"replicas"`
	// Pool says how calls are spread over Replicas; ignored without them.
	Pool Pool `yaml:"pool"`
	// Continuation says how a broken stream may be continued on this
	// provider's targets: "prefill", "prompt" or "none" (continuation.go;
	// default prefill for kind anthropic, prompt otherwise). A target
	// may say otherwise.
	Continuation string `yaml:"continuation"`
	// OnUnsupported says what a native codec (a provider whose API is
	// neither OpenAI's nor Anthropic's) does with a request parameter
	// the provider's API cannot carry: "drop" it, "refuse" the request,
	// or, empty, drop only what leaves the answer's shape alone
	// (translate.Neutral) and refuse the rest.
	OnUnsupported string `yaml:"on_unsupported"`

	// Native APIs (kind gemini, kind bedrock; native.go).

	// Vertex makes a gemini provider call Vertex AI (Google Cloud's
	// OAuth2 credentials) instead of the Gemini API (api_key_env). Only
	// for kind gemini.
	Vertex *Vertex `yaml:"vertex"`
	// Region is a bedrock provider's AWS region, e.g. us-east-1
	// (required for kind bedrock, only for it).
	Region string `yaml:"region"`
	// AWSProfile names the shared AWS config profile whose credentials
	// sign a bedrock provider's calls; empty: the default chain
	// (environment, shared files, web identity, instance role).
	AWSProfile string `yaml:"aws_profile"`
}

// Replica is one server of a provider's pool.
type Replica struct {
	// Name labels the replica in logs, metrics and a scenario's
	// upstreams (default: the provider's name, "-" and the replica's
	// place from 1, e.g. vllm-2).
	Name string `yaml:"name"`
	// BaseURL is the replica's API root, as a provider's base_url.
	BaseURL string `yaml:"base_url"`
	// MetricsURL, when set, is the replica's Prometheus metrics (vLLM's
	// and SGLang's /metrics), scraped every pool.scrape_interval: its
	// queue, batch and KV cache use join the choice of replica, and a
	// replica whose metrics stop answering is drained. Empty: the
	// replica is judged by this gateway's own calls alone.
	MetricsURL string `yaml:"metrics_url"`
	// MaxInFlight caps this gateway's calls on the replica (default: the
	// provider's max_in_flight; 0 there too means no cap).
	MaxInFlight int `yaml:"max_in_flight"`
}

// Pool configures how a provider's replicas share its calls.
type Pool struct {
	// Balance is "least_loaded" (the default: the replica with the
	// fewest requests in progress, from this gateway's calls and its
	// metrics, weighted by its recent first-token time; see package
	// pool) or "round_robin" (each usable replica in turn, for
	// comparison).
	Balance string `yaml:"balance"`
	// ScrapeInterval is how often each replica's metrics_url is read
	// (default 1s). Each scrape must answer within it.
	ScrapeInterval Duration `yaml:"scrape_interval"`
	// StaleAfter drains a replica whose metrics have not answered for
	// this long: no new calls until a scrape succeeds again (default
	// three scrape intervals).
	StaleAfter Duration `yaml:"stale_after"`
	// MaxWaiting drains a replica whose metrics show more requests
	// waiting than this, while another replica is under its cap (0, the
	// default: more waiting than running, a queue longer than a whole
	// batch).
	MaxWaiting int `yaml:"max_waiting"`
}

// Pooled reports whether the provider is a pool of replicas.
func (p *Provider) Pooled() bool { return len(p.Replicas) > 0 }

// ReplicaLimit is replica i's concurrency cap (0: none).
func (p *Provider) ReplicaLimit(i int) int {
	if n := p.Replicas[i].MaxInFlight; n > 0 {
		return n
	}
	return p.MaxInFlight
}

// Capacity is the provider's concurrency cap: its max_in_flight, or, for
// a pool, the sum of its replicas' (0 when any has none: no cap).
func (p *Provider) Capacity() int {
	if !p.Pooled() {
		return p.MaxInFlight
	}
	sum := 0
	for i := range p.Replicas {
		n := p.ReplicaLimit(i)
		if n <= 0 {
			return 0
		}
		sum += n
	}
	return sum
}

// Breaker configures a provider's circuit breaker.
type Breaker struct {
	Window    Duration `yaml:"window"`     // start times the rates judge (default 12s)
	MinCalls  int      `yaml:"min_calls"`  // calls before either rate judges (default 10)
	ErrorRate float64  `yaml:"error_rate"` // trip at this error share (default 0.2)
	SlowRate  float64  `yaml:"slow_rate"`  // trip at this slow share (default 0.2)
	// SlowThreshold makes a call slow once it is this old in flight;
	// zero derives it from twice the provider's healthy p95.
	SlowThreshold Duration `yaml:"slow_threshold"`
	// ConsecutiveErrors trips the breaker on this many provider-caused
	// failures in a row (5xx, 529, connection errors), however few calls
	// the window holds (default 5; -1 turns it off).
	ConsecutiveErrors int `yaml:"consecutive_errors"`
	// OpenFor is the time open before probing (default 10s for traffic
	// probes, doubling per failed recovery up to OpenForMax, default 2m;
	// synthetic probes start after ProbeInterval and never back off).
	OpenFor      Duration `yaml:"open_for"`
	OpenForMax   Duration `yaml:"open_for_max"`
	Probes       int      `yaml:"probes"`        // half-open probes (default 3)
	ProbeTimeout Duration `yaml:"probe_timeout"` // default: the slow threshold
	// ProbeInterval makes half-open trickle: one probe per interval, a
	// failed probe only frees its place, the first fast one starts
	// fail-back. Zero: 500ms for synthetic probes; for traffic probes, a
	// classic round of Probes at once.
	ProbeInterval Duration  `yaml:"probe_interval"`
	StepHold      Duration  `yaml:"step_hold"` // each fail-back step (default 10s)
	Steps         []float64 `yaml:"steps"`     // fail-back shares (default 0.1, 0.25, 0.5, 1)
	// Probe says what a half-open breaker probes with: "synthetic" (the
	// default: Sluice's own one-token request, every probe_interval for
	// as long as the provider is out, with no backoff, since it costs
	// users nothing) or "traffic" (routed user requests, backing off
	// after each failed recovery; one still waiting at the probe timeout
	// goes on in a rescue on the model's next target, if there is one).
	// Traffic probes test the real request path, but when every target
	// of a model is out its users have nowhere to be rescued to, and the
	// backoff leaves a recovered provider unused for up to open_for_max:
	// in scenarios/brownouts/all-slow.yaml synthetic probes answer 3,708
	// requests to traffic probes' 2,514.
	Probe string `yaml:"probe"`
	// ProbeModel is the upstream model a synthetic probe asks for
	// (default: the model of the first target that names this provider).
	ProbeModel string `yaml:"probe_model"`
	// Rescue (default true): while the breaker is open or recovering, a
	// call still waiting on this provider past the slow threshold gets a
	// second call on the model's next target; the first answer wins.
	Rescue *bool `yaml:"rescue"`

	// off records "breaker: off" until defaults turn it into a nil
	// Breaker.
	off bool
}

// switchOff reads a scalar written where a breaker's settings go:
// "off" (or false) turns the breaker off, "on" (or true) keeps the
// defaults. It reports false for anything else.
func (b *Breaker) switchOff(v string) bool {
	switch strings.ToLower(v) {
	case "off", "false":
		b.off = true
	case "on", "true":
	default:
		return false
	}
	return true
}

// Breaker.Probe values.
const (
	ProbeTraffic   = "traffic"
	ProbeSynthetic = "synthetic"
)

// Rescues reports whether the breaker rescues stranded calls.
func (b *Breaker) Rescues() bool { return b.Rescue == nil || *b.Rescue }

// Limit configures an adaptive concurrency limit for one provider. Zero
// fields take the algorithm's own defaults (see package limit).
type Limit struct {
	// Algorithm is "fixed" (the default), "aimd", "windowed_aimd",
	// "gradient2" or "vegas".
	Algorithm string `yaml:"algorithm"`
	// Signal is the latency the algorithm reads: "auto" (the default:
	// time to first token for streams, end-to-end otherwise), "ttft",
	// "tpot" (time per output token) or "total".
	Signal string `yaml:"signal"`
	// SlowThreshold flags a call slow the moment it passes this age while
	// still in flight (for the ttft signal: with no first token yet), and
	// the limiter hears of it then, not when the call returns.
	SlowThreshold Duration `yaml:"slow_threshold"`

	Initial           int      `yaml:"initial"`
	Min               int      `yaml:"min"`
	Max               int      `yaml:"max"`
	Backoff           float64  `yaml:"backoff"`
	Window            Duration `yaml:"window"`
	Cooldown          Duration `yaml:"cooldown"`
	LatencyThreshold  Duration `yaml:"latency_threshold"`
	QueueAgeThreshold Duration `yaml:"queue_age_threshold"`
	Tolerance         float64  `yaml:"tolerance"`
	Smoothing         float64  `yaml:"smoothing"`
	LongWindow        int      `yaml:"long_window"`
	QueueSize         int      `yaml:"queue_size"`
}

// Model maps a client-facing model name to upstream targets.
type Model struct {
	Name string `yaml:"name"`
	// Timeout, when set, overrides the first target's provider timeout.
	Timeout Duration `yaml:"timeout"`
	// Targets is an ordered failover chain; the first is the primary.
	Targets []Target `yaml:"targets"`
	// HedgeAfter, when set, sends a second call (a hedge) to the next
	// healthy target, or the same one, if the first call has no first
	// byte (for streams: no first token) this long after it started; the
	// first to answer wins and the other is cancelled. hedging.budget
	// bounds how many requests may be hedged.
	HedgeAfter HedgeDelay `yaml:"hedge_after"`
	// FirstTokenCeiling, when set, replaces first_token.ceiling for this
	// model (a reasoning model may be silent for longer); an explicit 0s
	// turns the first-token deadline off for it (FirstTokenOff).
	FirstTokenCeiling Duration `yaml:"first_token_ceiling"`
	FirstTokenOff     bool     `yaml:"-"`
	// ContextFallback names another model a request goes to when its
	// prompt is too long for this one: when a target answers
	// context_length_exceeded, or, with ContextWindow set, before the
	// call when the counted prompt does not fit.
	ContextFallback string `yaml:"context_fallback"`
	// ContextWindow, in tokens, is the model's context window; 0:
	// unknown, so a prompt is only judged by the provider's answer.
	ContextWindow int64 `yaml:"context_window"`
	// Degrade, when set, serves the model's background requests under
	// pressure in a cheaper way instead of refusing them.
	Degrade *Degrade `yaml:"degrade"`
	// DefaultMaxTokens is the output cap of a request naming no
	// max_tokens (default 4096, lifecycle.DefaultMaxOutput; more for
	// reasoning models, whose answers run long): what it reserves of its
	// key's output budget until its usage settles it, how long its whole
	// answer may take before it is slow, and where the gateway cuts what
	// it relays (lifecycle.Engine.OutputLimit).
	DefaultMaxTokens int64 `yaml:"default_max_tokens"`
	// Evals, when set, is the model's eval set: prompts with checks run
	// against every target on a schedule; a target that fails too many
	// is degraded, and failover passes over it (evals.go). Unset: no
	// eval runs for the model.
	Evals *Evals `yaml:"evals"`
	// Validation says what the gateway does with an answer that breaks
	// the structured output its request asked for.
	Validation Validation `yaml:"validation"`
	// OnUnsupported says what translation to another API (a client of
	// OpenAI's API served by an Anthropic-kind target, or the reverse)
	// does with a parameter the target's API cannot carry: "drop" it,
	// "refuse" the request (400 when no same-kind target is left), or,
	// empty, drop only what leaves the answer's shape alone (a seed, the
	// penalties, top_k; translate.Neutral) and refuse the rest (n > 1,
	// audio). Whatever is dropped is named in X-Sluice-Dropped.
	OnUnsupported string `yaml:"on_unsupported"`
	// Cache, when set, turns the response cache on for the model:
	// an answer is given again to the same request from the same
	// tenant for its ttl (cache.go, docs/CACHE.md). Unset: off, unless
	// a key turns it on.
	Cache *ModelCache `yaml:"cache"`
}

// The actions for an invalid answer (Validation.OnInvalid).
const (
	OnInvalidRetry    = "retry"
	OnInvalidAnnotate = "annotate"
	OnInvalidRefuse   = "refuse"
)

// Validation holds a model's answers to the structured output their
// request declared, whichever backend served them: OpenAI's
// response_format (json_schema: the text must be JSON valid against the
// schema; json_object: a JSON object) and the input schemas of the tools
// a request declares (each tool call must name one, with arguments valid
// against its schema). A request that declares neither is not checked.
// Every verdict is counted in sluice_validation_total and, for a whole
// answer, told in the X-Sluice-Validation header (valid or invalid, with
// X-Sluice-Validation-Reason).
type Validation struct {
	// OnInvalid is what an invalid whole (non-streamed) answer does:
	//
	//   - annotate (the default): the answer is returned as it is, with
	//     X-Sluice-Validation: invalid and the reason.
	//   - retry: the answer is not sent; the request is tried again, on
	//     the model's next target that can take it (or the same one
	//     after a short wait), under the retries: budget. When no retry
	//     is possible (budget spent, deadline too close, already
	//     retried) the invalid answer is returned annotated.
	//   - refuse: a 502 in the client's API, saying why the answer
	//     failed validation.
	//
	// Why annotate by default: whether an answer can meet its schema is
	// the client's choice (a schema no model can satisfy is one line of
	// JSON), while the retries: budget is shared by every client of the
	// provider. Retrying invalid answers by default would let one client's
	// impossible schema spend the budget that everybody's failovers need
	// in a brownout. Annotate gives the client what it would have got
	// without Sluice, plus the verdict. Choose retry for a model whose
	// clients you trust (an answer that breaks its schema is worth no
	// more than an error, and a retry here comes sooner than the
	// client's, and may reach another backend). A stream is checked at
	// its end, after its answer went out, so for a stream every action
	// is annotate, sent in HTTP trailers (X-Sluice-Validation and
	// X-Sluice-Validation-Reason).
	OnInvalid string `yaml:"on_invalid"`
	// StreamEvent (default false) also sends a stream's verdict as a
	// trailing event of Sluice's own, "event: sluice.validation", after
	// the stream's last event. Off by default because a client that
	// parses every event as its vendor's fails on one its vendor never
	// sends (the Vercel AI SDK does: its structured-output and tool
	// streams end in an error); turn it on for clients that read the
	// raw stream and cannot see HTTP trailers.
	StreamEvent bool `yaml:"stream_event"`
	// CountInBreaker (default false) counts an invalid answer as a
	// failure of the provider that made it, in its circuit breaker, so a
	// backend that keeps breaking schemas is taken out of rotation like
	// one that keeps erroring. Off by default because the request's own
	// schema can be what the model cannot meet, and one client's hard
	// schema must not open a breaker for everyone.
	CountInBreaker bool `yaml:"count_in_breaker"`
}

// Target is one {provider, upstream model name} pair.
type Target struct {
	Provider string `yaml:"provider"`
	Model    string `yaml:"model"`
	// Continuation overrides the provider's for this model
	// (continuation.go). Empty: the provider's.
	Continuation string `yaml:"continuation"`
}

// Admission configures the concurrency limit and the waiting queue.
type Admission struct {
	// MaxInFlight is the global cap on admitted requests (default 256,
	// or the sum of the providers' max_in_flight when every provider
	// declares one and that is more).
	MaxInFlight int   `yaml:"max_in_flight"`
	Queue       Queue `yaml:"queue"`
	// DefaultPriority applies when a request has no X-Sluice-Priority
	// header: "critical", "interactive" (default) or "background".
	DefaultPriority string     `yaml:"default_priority"`
	Priorities      Priorities `yaml:"priorities"`
	// CriticalKeysEnv names an environment variable holding the client
	// keys (comma-separated) whose requests are critical. When it is
	// set, only those keys may be critical: anyone else asking for
	// critical with X-Sluice-Priority is served as interactive, so a
	// client cannot skip the limiter by asking. Unset, the header is
	// trusted (fine for a gateway that only trusted services reach).
	CriticalKeysEnv string `yaml:"critical_keys_env"`
	// FailFast (default true): while a class is refused at least as
	// often as it is admitted over the last 10 s, its refusals carry
	// x-should-retry: false, because a retry is then more likely refused
	// than served (the OpenAI and Anthropic SDKs and Sluice's client
	// honour it), and so do they while it has been refused in nearly
	// every second of them, when a served retry only takes another
	// request's place; and while most of a class's waiters leave the queue
	// unserved, its requests that cannot start at once are refused at
	// the door instead of waiting to be refused.
	FailFast *bool `yaml:"fail_fast"`
}

// FailsFast reports admission.fail_fast, default true.
func (a Admission) FailsFast() bool { return a.FailFast == nil || *a.FailFast }

// Budget bounds the gateway's second calls of one kind: hedges
// (hedging:) or retries onto another target or after a wait (retries:).
type Budget struct {
	// Budget is the share of requests that may get such a call (default
	// 0.05 for hedges, 0.1 for retries): every request earns Budget of
	// one and every call spends one, so a brownout that makes every call
	// slow or failing cannot double the load.
	Budget float64 `yaml:"budget"`
	// Burst caps the calls saved up in quiet times (default 10).
	Burst float64 `yaml:"burst"`
}

// Retries bounds the retries of a provider's failures (retries:): the
// budget and burst of those sent to the same provider, as Budget's, and
// how long a provider's Retry-After may be waited out there.
type Retries struct {
	Budget float64 `yaml:"budget"`
	Burst  float64 `yaml:"burst"`
	// WaitMax is the longest Retry-After waited out on the provider that
	// sent it, when it fits the client's deadline; a longer one sends the
	// request to its next target at once (default 3s).
	WaitMax Duration `yaml:"wait_max"`
}

// Queue bounds the waiting room.
type Queue struct {
	MaxDepth int      `yaml:"max_depth"` // default 150
	MaxWait  Duration `yaml:"max_wait"`  // default 5s
	// HoldBudget is the longest a request whose every target is out of
	// rotation waits in the queue for a synthetic probe's verdict: it is
	// held only when that verdict is due within it, and refused at once
	// (503/529 with a Retry-After naming the next verdict) otherwise.
	// Zero: the engine's default, 1s (lifecycle.DefaultHoldBudget).
	HoldBudget Duration `yaml:"hold_budget"`
}

// Priorities holds the per-class budgets.
type Priorities struct {
	Critical    Class `yaml:"critical"`
	Interactive Class `yaml:"interactive"`
	Background  Class `yaml:"background"`
}

// Class is one priority class's budget.
type Class struct {
	// Reserved is the number of in-flight slots and queue places held back
	// for this class alone. Only meaningful for critical.
	Reserved int `yaml:"reserved"`
	// MaxQueued caps this class's waiters (0 = bounded only by max_depth).
	MaxQueued int `yaml:"max_queued"`
}

// Duration is a time.Duration that must be written with a unit ("15s").
type Duration time.Duration

// ByteSize is a byte count written as a number or with a unit ("10MiB").
type ByteSize int64

// RawNode keeps a YAML subtree undecoded, for another reader.
type RawNode struct {
	Node *yaml.Node
}

// UnmarshalYAML stores the node as it is.
func (r *RawNode) UnmarshalYAML(n *yaml.Node) error {
	r.Node = n
	return nil
}

// HedgeDelay is a fixed duration ("1500ms") or "p95": the recent healthy
// 95th-percentile latency of the target the request went to (which needs
// a breaker on that provider, since the breaker keeps those latencies).
type HedgeDelay struct {
	Fixed Duration
	P95   bool
}

// UnmarshalYAML accepts "p95" or a duration with a unit.
func (h *HedgeDelay) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && n.Value == "p95" {
		*h = HedgeDelay{P95: true}
		return nil
	}
	var d Duration
	if err := d.UnmarshalYAML(n); err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.Msg += ", or p95 to hedge after the target's healthy p95"
			return e
		}
		return fmt.Errorf("%w, or write p95 to hedge after the target's healthy p95", err)
	}
	*h = HedgeDelay{Fixed: d}
	return nil
}

// MarshalYAML writes the delay back in the form it was read.
func (h HedgeDelay) MarshalYAML() (any, error) {
	if h.P95 {
		return "p95", nil
	}
	return h.Fixed.MarshalYAML()
}

// On reports whether hedging is configured.
func (h HedgeDelay) On() bool { return h.P95 || h.Fixed > 0 }

// Fleet tunes how a replica uses the shared store.
type Fleet struct {
	// Timeout is the longest a decision waits on the store; past it, or
	// with the store down, the replica decides alone with its share of
	// the limits (default 50ms: DefaultFleetTimeout).
	Timeout Duration `yaml:"timeout"`
	// ID names this replica among the live ones (default: host name and
	// process id).
	ID string `yaml:"id"`
	// Prefix starts every name the fleet keeps in the store (default
	// "sluice:"), so that two fleets can share one Redis.
	Prefix string `yaml:"prefix"`
}

// DefaultFleetTimeout bounds a decision's wait on the shared store. It
// was 5 ms; on a busy two-core machine one budget round trip passed
// 5 ms a third of the time with 8 callers at once, and each timeout
// sends a replica to decide alone for a second, so replicas decided
// alone 21-93 % of the time with no fault at all. At 50 ms that went
// away (docs/FLEET.md, "Choosing fleet.timeout"). Most decisions are
// taken from credit and never wait on Redis, so the bound matters only
// to the few that do, and to how long a hung Redis can hold one.
const DefaultFleetTimeout = 50 * time.Millisecond
