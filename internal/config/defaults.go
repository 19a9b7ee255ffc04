package config

import (
	_ "embed"
	"fmt"
	"strings"
	"time"
)

// Defaults for fields a config file leaves out. Exported so that command
// help text and other packages' tests can quote them rather than copy them.
const (
	DefaultListen          = "127.0.0.1:8080"
	DefaultAdminListen     = "127.0.0.1:9090"
	DefaultMaxBodyBytes    = 10 << 20
	DefaultLogFormat       = "text"
	DefaultLogLevel        = "info"
	DefaultProviderTimeout = 60 * time.Second
	// DefaultAzureAPIVersion is the api-version an azure provider sends
	// when its config names none: Azure OpenAI's current GA data-plane
	// version.
	DefaultAzureAPIVersion = "2024-10-21"
	// DefaultScrapeInterval is how often a pool reads its replicas'
	// metrics.
	DefaultScrapeInterval = time.Second
	DefaultMaxInFlight    = 256
	DefaultQueueDepth     = 150
	DefaultQueueWait      = 5 * time.Second
	DefaultPriority       = PriorityInteractive

	// Server limits. Envoy's own defaults where it has one (60 KiB of
	// headers, 100 header fields); the others are sized so an honest
	// client never meets them and a crowd of hostile ones cannot take the
	// process's memory: 10,000 connections cost about 200 MB of buffers
	// and stacks at most, and bodies are counted as they arrive, never
	// reserved from what a client declares.
	DefaultMaxConnections       = 10000
	DefaultMaxHeaderBytes       = 64 << 10
	DefaultMaxHeaders           = 100
	DefaultMaxBodyBytesInFlight = 128 << 20
	DefaultReadHeaderTimeout    = 10 * time.Second
	DefaultBodyReadTimeout      = 30 * time.Second
	// A write to a client blocks only once the socket's buffers are full;
	// ten seconds of accepting nothing is a client that stopped reading.
	DefaultWriteTimeout = 10 * time.Second
	// Providers send tokens, or keep-alive pings, far more often than
	// this once a response has started.
	DefaultStreamIdleTimeout = 60 * time.Second
	DefaultIdleTimeout       = 120 * time.Second
	// Long enough for a load balancer's health check (typically 2-5 s
	// apart) to see /readyz fail before the listener closes.
	DefaultDrainDelay    = 5 * time.Second
	DefaultShutdownGrace = 30 * time.Second
)

// Priority classes, as written in admission.default_priority and the
// X-Sluice-Priority header.
const (
	PriorityCritical    = "critical"
	PriorityInteractive = "interactive"
	PriorityBackground  = "background"
)

// Pool balances (Pool.Balance).
const (
	PoolLeastLoaded = "least_loaded"
	PoolRoundRobin  = "round_robin"
)

// Provider kinds: the wire protocol a provider speaks.
const (
	KindOpenAI    = "openai"
	KindAnthropic = "anthropic"
	// KindAzure is Azure OpenAI: OpenAI's API under Azure's URL scheme
	// (a deployment per model, an api-version query) and api-key header.
	KindAzure = "azure"
	// KindGemini and KindBedrock are native APIs (native.go).
	KindGemini  = "gemini"
	KindBedrock = "bedrock"
)

// applyDefaults fills in every field the file left out. A field the file
// set explicitly is kept even when zero: "max_depth: 0" means "no queue",
// and "timeout: 0s" should be reported by Validate, not silently become
// 60s. For a Config built in code (no source), zero means unset.
func (c *Config) applyDefaults() {
	unset := func(path string, zero bool) bool { return zero && !c.src.has(path) }
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.AdminListen == "" {
		c.AdminListen = DefaultAdminListen
	}
	if unset("max_body_bytes", c.MaxBodyBytes == 0) {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	c.Server.fill(func(field string, zero bool) bool { return unset("server."+field, zero) })
	if c.Log.Format == "" {
		c.Log.Format = DefaultLogFormat
	}
	if c.Log.Level == "" {
		c.Log.Level = DefaultLogLevel
	}
	for i := range c.Providers {
		p := &c.Providers[i]
		if unset(fmt.Sprintf("providers[%d].timeout", i), p.Timeout == 0) {
			p.Timeout = Duration(DefaultProviderTimeout)
		}
		if p.Kind == KindAzure && p.APIVersion == "" {
			p.APIVersion = DefaultAzureAPIVersion
		}
		// Client paths are appended to base_url; a trailing slash would
		// double up.
		p.BaseURL = strings.TrimRight(p.BaseURL, "/")
		p.nativeDefaults()
		for j := range p.Replicas {
			r := &p.Replicas[j]
			r.BaseURL = strings.TrimRight(r.BaseURL, "/")
			if r.Name == "" {
				r.Name = fmt.Sprintf("%s-%d", p.Name, j+1)
			}
		}
		if p.Pooled() {
			pl := &p.Pool
			if pl.Balance == "" {
				pl.Balance = PoolLeastLoaded
			}
			if unset(fmt.Sprintf("providers[%d].pool.scrape_interval", i), pl.ScrapeInterval == 0) {
				pl.ScrapeInterval = Duration(DefaultScrapeInterval)
			}
			if unset(fmt.Sprintf("providers[%d].pool.stale_after", i), pl.StaleAfter == 0) {
				pl.StaleAfter = 3 * pl.ScrapeInterval
			}
		}
		// Every provider has a breaker unless the file says off, and
		// it probes with the gateway's own calls (see Breaker.Probe).
		switch {
		case p.Breaker == nil:
			p.Breaker = &Breaker{}
		case p.Breaker.off:
			p.Breaker = nil
		}
		if p.Breaker != nil && p.Breaker.Probe == "" {
			p.Breaker.Probe = ProbeSynthetic
		}
	}
	a := &c.Admission
	if unset("admission.max_in_flight", a.MaxInFlight == 0) {
		a.MaxInFlight = c.defaultMaxInFlight()
	}
	if unset("admission.queue.max_depth", a.Queue.MaxDepth == 0) {
		a.Queue.MaxDepth = DefaultQueueDepth
	}
	if unset("admission.queue.max_wait", a.Queue.MaxWait == 0) {
		a.Queue.MaxWait = Duration(DefaultQueueWait)
	}
	c.Idempotency.fill(func(field string, zero bool) bool { return unset("idempotency."+field, zero) })
	c.cacheDefaults(unset)
	c.Tracing.fill(func(field string, zero bool) bool { return unset("tracing."+field, zero) })
	if c.Store != "" && c.Fleet.Timeout == 0 {
		c.Fleet.Timeout = Duration(DefaultFleetTimeout)
	}
	if a.DefaultPriority == "" {
		a.DefaultPriority = DefaultPriority
	}
	if l := &c.Lanes.LargeContext; l.MinInputTokens > 0 {
		if l.MaxInFlight == 0 {
			l.MaxInFlight = max(1, c.capacity()/4)
		}
	}
	for i := range c.Models {
		if v := &c.Models[i].Validation; v.OnInvalid == "" {
			v.OnInvalid = OnInvalidAnnotate
		}
		if d := c.Models[i].Degrade; d != nil {
			if unset(fmt.Sprintf("models[%d].degrade.queue_age", i), d.QueueAge == 0) {
				d.QueueAge = Duration(DefaultDegradeQueueAge)
			}
			if unset(fmt.Sprintf("models[%d].degrade.budget_below", i), d.BudgetBelow == 0) {
				d.BudgetBelow = DefaultDegradeBudgetBelow
			}
		}
	}
	c.firstTokenDefaults(unset)
	if unset("hedging.budget", c.Hedging.Budget == 0) {
		c.Hedging.Budget = DefaultHedgeBudget
	}
	if c.Hedging.Burst == 0 {
		c.Hedging.Burst = DefaultHedgeBurst
	}
	if unset("retries.budget", c.Retries.Budget == 0) {
		c.Retries.Budget = DefaultRetryBudget
	}
	if c.Retries.Burst == 0 {
		c.Retries.Burst = DefaultHedgeBurst
	}
}

// defaultMaxInFlight is the global limit a config that names none gets:
// DefaultMaxInFlight, or, when every provider declares its own
// max_in_flight, their sum if that is larger. The operator has said how
// much each provider takes; the gateway should not quietly take less,
// least of all in a brownout, when calls stranded on a slow provider
// hold their slots until they are rescued onto another.
// capacity is how many calls the gateway can really have running: the
// global limit, or the providers' limits summed when every provider
// declares one and that is less. A share of capacity (the large-context
// lane's) is a share of this, not of a global limit set high above the
// providers'.
func (c *Config) capacity() int {
	sum := 0
	for _, p := range c.Providers {
		if p.Capacity() <= 0 {
			return c.Admission.MaxInFlight
		}
		sum += p.Capacity()
	}
	if sum > 0 && sum < c.Admission.MaxInFlight {
		return sum
	}
	return c.Admission.MaxInFlight
}

func (c *Config) defaultMaxInFlight() int {
	sum := 0
	for _, p := range c.Providers {
		if p.Capacity() <= 0 {
			return DefaultMaxInFlight
		}
		sum += p.Capacity()
	}
	return max(sum, DefaultMaxInFlight)
}

// DefaultMaxMessages and DefaultMaxJSONDepth bound a request body's
// shape: far above any conversation or JSON schema a client sends, far
// below the 280,000 one-character messages that fit in max_body_bytes,
// each of which costs work before admission (counting, translation).
const (
	DefaultMaxMessages  = 100_000
	DefaultMaxJSONDepth = 128
)

// fill sets each field that unset says to default: a file's explicit zero
// stays (drain_delay: 0s), a Config built in code takes every default.
func (sv *Server) fill(unset func(field string, zero bool) bool) {
	for _, n := range []struct {
		field string
		v     *int
		def   int
	}{
		{"max_connections", &sv.MaxConnections, DefaultMaxConnections},
		{"max_headers", &sv.MaxHeaders, DefaultMaxHeaders},
		{"max_messages", &sv.MaxMessages, DefaultMaxMessages},
		{"max_json_depth", &sv.MaxJSONDepth, DefaultMaxJSONDepth},
	} {
		if unset(n.field, *n.v == 0) {
			*n.v = n.def
		}
	}
	for _, b := range []struct {
		field string
		v     *ByteSize
		def   int64
	}{
		{"max_header_bytes", &sv.MaxHeaderBytes, DefaultMaxHeaderBytes},
		{"max_body_bytes_in_flight", &sv.MaxBodyBytesInFlight, DefaultMaxBodyBytesInFlight},
	} {
		if unset(b.field, *b.v == 0) {
			*b.v = ByteSize(b.def)
		}
	}
	for _, d := range []struct {
		field string
		v     *Duration
		def   time.Duration
	}{
		{"read_header_timeout", &sv.ReadHeaderTimeout, DefaultReadHeaderTimeout},
		{"body_read_timeout", &sv.BodyReadTimeout, DefaultBodyReadTimeout},
		{"write_timeout", &sv.WriteTimeout, DefaultWriteTimeout},
		{"stream_idle_timeout", &sv.StreamIdleTimeout, DefaultStreamIdleTimeout},
		{"idle_timeout", &sv.IdleTimeout, DefaultIdleTimeout},
		{"drain_delay", &sv.DrainDelay, DefaultDrainDelay},
		{"shutdown_grace", &sv.ShutdownGrace, DefaultShutdownGrace},
	} {
		if unset(d.field, *d.v == 0) {
			*d.v = Duration(d.def)
		}
	}
}

// BodyBytesPerClient is what one client may hold of
// server.max_body_bytes_in_flight: server.max_body_bytes_per_client when
// set; otherwise a quarter of the budget, raised to twice max_body_bytes
// (a body is held twice over for a moment while it is joined into one
// piece, and one client must always be able to send a largest body), and
// never more than the budget.
func (c *Config) BodyBytesPerClient() int64 {
	sv := c.Server.WithDefaults()
	if sv.MaxBodyBytesPerClient > 0 {
		return sv.MaxBodyBytesPerClient.Int64()
	}
	budget := sv.MaxBodyBytesInFlight.Int64()
	return min(budget, max(budget/4, 2*c.MaxBodyBytes.Int64()))
}

// WithDefaults returns s with every zero limit and timeout at its
// default except drain_delay, whose zero means none: for a Server built
// in code, where zero means unset (a zero write timeout would fail
// every write; zero max_headers would refuse every request).
func (s Server) WithDefaults() Server {
	s.fill(func(field string, zero bool) bool { return zero && field != "drain_delay" })
	return s
}

// Hedging defaults: a few percent of requests, as the brownout
// literature advises, with a small reserve for quiet times.
const (
	DefaultHedgeBudget = 0.05
	DefaultHedgeBurst  = 10
	// DefaultRetryBudget: retries at most 10% of requests, the SRE
	// practice (and Envoy's retry budget) against retry storms.
	DefaultRetryBudget = 0.1
)

//go:embed default.yaml
var defaultYAML string

// Default returns the built-in config that `sluice serve` uses without
// --config: two providers, one per wire protocol, both served by the
// in-process fake provider at mockBaseURL (e.g. "http://127.0.0.1:41234",
// without the /v1).
//
// It panics if the result does not parse, which can only happen if
// default.yaml is broken (a test parses it) or mockBaseURL is not an
// absolute http(s) URL.
func Default(mockBaseURL string) *Config {
	base := strings.TrimRight(mockBaseURL, "/")
	c, err := parse([]byte(defaultYAML), "default.yaml", func(name string) (string, bool) {
		if name == "MOCK_BASE_URL" {
			return base, true
		}
		return osLookup(name)
	})
	if err != nil {
		panic("config: built-in default config is invalid: " + err.Error())
	}
	return c
}
