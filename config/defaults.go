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
	DefaultMaxInFlight     = 256
	DefaultQueueDepth      = 150
	DefaultQueueWait       = 5 * time.Second
	DefaultPriority        = PriorityInteractive
)

// Priority classes, as written in admission.default_priority and the
// X-Sluice-Priority header.
const (
	PriorityCritical    = "critical"
	PriorityInteractive = "interactive"
	PriorityBackground  = "background"
)

// Provider kinds: the wire protocol a provider speaks.
const (
	KindOpenAI    = "openai"
	KindAnthropic = "anthropic"
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
		// Client paths are appended to base_url; a trailing slash would
		// double up.
		p.BaseURL = strings.TrimRight(p.BaseURL, "/")
	}
	a := &c.Admission
	if unset("admission.max_in_flight", a.MaxInFlight == 0) {
		a.MaxInFlight = DefaultMaxInFlight
	}
	if unset("admission.queue.max_depth", a.Queue.MaxDepth == 0) {
		a.Queue.MaxDepth = DefaultQueueDepth
	}
	if unset("admission.queue.max_wait", a.Queue.MaxWait == 0) {
		a.Queue.MaxWait = Duration(DefaultQueueWait)
	}
	if a.DefaultPriority == "" {
		a.DefaultPriority = DefaultPriority
	}
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
	data := strings.ReplaceAll(defaultYAML, "${MOCK_BASE_URL}", strings.TrimRight(mockBaseURL, "/"))
	c, err := Parse([]byte(data), "default.yaml")
	if err != nil {
		panic("config: built-in default config is invalid: " + err.Error())
	}
	return c
}
