// Package metrics defines Sluice's Prometheus metrics. Per-request
// counters and histograms are updated on the request path; gauges of the
// admission state are read from a snapshot at scrape time, so they cost
// nothing between scrapes.
package metrics

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/breaker"
)

// Metrics holds the gateway's collectors, registered on one registry.
type Metrics struct {
	Registry *prometheus.Registry

	// Requests counts finished client requests. reason is empty for ok.
	Requests *prometheus.CounterVec
	// Duration is end-to-end latency as the client saw it.
	Duration *prometheus.HistogramVec
	// Upstream is time from sending the upstream request to the last byte.
	Upstream *prometheus.HistogramVec
	// TTFT is time from sending upstream to the first body byte.
	TTFT *prometheus.HistogramVec
	// QueueWait is time spent waiting for admission, by priority.
	QueueWait *prometheus.HistogramVec
	// UpstreamStatus counts upstream responses by status code.
	UpstreamStatus *prometheus.CounterVec
	// Failovers counts requests routed past a model's first target.
	Failovers *prometheus.CounterVec
	// BreakerTransitions counts breaker state changes.
	BreakerTransitions *prometheus.CounterVec
	// Hedges counts hedges fired and won, per model.
	Hedges *prometheus.CounterVec
	// Retries counts retries onto another target.
	Retries *prometheus.CounterVec
	// Validation counts verdicts on answers to requests that declared
	// structured output (package validate), by the provider that made
	// the answer, the model asked for, result (valid or invalid) and
	// stream ("true": judged at its end, sent as its trailing event).
	// What an invalid answer then did shows in sluice_retries_total and
	// in sluice_requests_total's reason invalid_answer (refused).
	Validation *prometheus.CounterVec
	// Rescues counts slow calls stranded on a provider whose breaker is
	// open or recovering, given a second call on another target.
	Rescues *prometheus.CounterVec
	// ReplicaCalls counts upstream calls sent to each replica of a
	// pooled provider; ReplicaScrapes, scrapes of its metrics by result;
	// ReplicaDrained is 1 while a replica takes no new calls, by reason.
	ReplicaCalls   *prometheus.CounterVec
	ReplicaScrapes *prometheus.CounterVec
	ReplicaDrained *prometheus.GaugeVec
	// Probes counts synthetic breaker probes by result.
	Probes *prometheus.CounterVec
	// Reloads counts configuration reloads, by result.
	Reloads *prometheus.CounterVec
	// Tokens counts tokens by key, model (client-facing), provider and
	// direction (input, output), and by source: reported by the
	// provider, counted by Sluice with the model's own encoding, or
	// estimated (an encoding close to, not the same as, the model's; see
	// package tokens; or the deltas of a relayed stream).
	Tokens *prometheus.CounterVec
	// Cost is the dollar cost of billed upstream calls (the gateway's
	// ledger: answers, a race's loser, continuations) at the configured
	// prices, by
	// key, model (client-facing, as Tokens), provider and upstream model
	// (the name prices are keyed by).
	Cost *prometheus.CounterVec
	// Degraded counts background requests served degraded under
	// pressure instead of refused, by model and what they were served as.
	Degraded *prometheus.CounterVec
	// BudgetRefusals counts requests refused by a budget, by key and
	// dimension.
	BudgetRefusals *prometheus.CounterVec
	// SpendRefusals counts requests (and second calls not made) refused
	// by a spend limit, by scope, name and window.
	SpendRefusals *prometheus.CounterVec
	// FleetStoreErrors counts calls to the fleet's shared store that
	// failed, by op (heartbeat, budget, lease, spend) and kind
	// (wrongtype: a key holds another type; error: no answer in time,
	// or another error). Every heartbeat that does not reach Redis
	// counts, so every outage a replica notices moves it.
	FleetStoreErrors *prometheus.CounterVec
	// FleetStoreLosses counts the times this replica found that the
	// shared store had lost its data (the fleet's epoch missing or
	// changed, or the run-time keys' version gone backwards), by what
	// saw it: heartbeat, keys (the run-time keys' store), spend or usage
	// (the usage records' store).
	FleetStoreLosses *prometheus.CounterVec
	// TimeScale is the factor the serving configuration's times were
	// multiplied by (sluice serve --time-scale): 1 at real time. sluice
	// load reads it to refuse a replay at another speed.
	TimeScale prometheus.Gauge

	// Idempotency counts requests with an Idempotency-Key by what became
	// of them (idempotency.go).
	Idempotency *prometheus.CounterVec
	// Evals are the fallback evals' metrics (evals.go).
	Evals Evals
	// Cache are the response cache's metrics (cache.go).
	Cache Cache

	// src is what the gauges read at scrape time: the serving
	// configuration's engine, which a reload replaces.
	src atomic.Pointer[Sources]
	// fleet reports the live replicas and whether the shared store
	// answers, when the gateway is one of a fleet.
	fleet atomic.Pointer[func() (int, bool)]
	// fleetShare reads this replica's part of the fleet's fixed limits.
	fleetShare atomic.Pointer[func() float64]
	// idem reports the idempotency store's state.
	idem atomic.Pointer[func() IdempotencyState]
	// cache reports the response cache's store.
	cache atomic.Pointer[func() CacheState]
}

// Sources are the live state the gauges export. A gateway sets them when
// it starts serving; a reloaded configuration sets its own, and the
// counters carry on across it.
type Sources struct {
	// Admission reports admission state; Scopes[i] names scope i.
	Admission Snapshotter
	Scopes    []string
	// Breakers returns one entry per scope, nil where a scope has none.
	Breakers func() []*breaker.Stats
	// Refused counts the second calls the budgets turned down.
	Refused func() Refusals
	// BodyBytes reports the request-body bytes held now, the budget, and
	// the requests reading their bodies.
	BodyBytes func() (held, limit, reading int64)
	// Quotas reports every per-minute budget (keys, providers, the
	// large-context lane) in each limited dimension.
	Quotas func() []Quota
	// Spend reports every spend limit (spend.go).
	Spend func() []Spend
}

// Quota is one per-minute budget's state in one dimension.
type Quota struct {
	// Owner is "key", "provider" or "lane"; Name names it.
	Owner, Name, Dimension string
	Limit, Remaining       int64
	// Reserved is what admitted requests hold of it now (keys).
	Reserved int64
}

// SetSources points the gauges at a configuration's live state.
func (m *Metrics) SetSources(s Sources) { m.src.Store(&s) }

// latency buckets span a 5 ms rejection to a ten-minute generation.
var latencyBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 15, 30, 60, 120, 300, 600}

// New creates the collectors on a fresh registry, with Go runtime and
// process collectors alongside.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		Registry: reg,
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_requests_total",
			Help: "Client requests finished, by outcome; reason says why a request was shed or failed.",
		}, []string{"endpoint", "model", "provider", "priority", "outcome", "reason"}),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sluice_request_duration_seconds",
			Help:    "End-to-end request latency seen by the client, including queueing.",
			Buckets: latencyBuckets,
		}, []string{"endpoint", "model", "outcome"}),
		Upstream: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sluice_upstream_duration_seconds",
			Help:    "Upstream call latency, from sending the request to the last byte of the response.",
			Buckets: latencyBuckets,
		}, []string{"provider", "model"}),
		TTFT: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sluice_upstream_ttft_seconds",
			Help:    "Upstream time to first byte of the response body (time to first token when streaming).",
			Buckets: latencyBuckets,
		}, []string{"provider", "model"}),
		QueueWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sluice_queue_wait_seconds",
			Help:    "Time admitted requests spent waiting in the admission queue.",
			Buckets: latencyBuckets,
		}, []string{"priority"}),
		UpstreamStatus: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_upstream_responses_total",
			Help: "Upstream responses by HTTP status code; code is \"error\" when no response arrived.",
		}, []string{"provider", "code"}),
		Failovers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_failovers_total",
			Help: "Requests routed past their model's first target because its breaker turned them away.",
		}, []string{"model", "provider"}),
		Hedges: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_hedges_total",
			Help: "Hedged requests: second calls fired, and those whose answer won.",
		}, []string{"model", "result"}),
		Retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_retries_total",
			Help: "Requests retried onto another target after a safe failure (before any byte reached the client).",
		}, []string{"model", "provider"}),
		Validation: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_validation_total",
			Help: "Answers checked against the structured output their request declared, by the provider and model that made them and the verdict.",
		}, []string{"provider", "model", "result", "stream"}),
		Rescues: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_rescues_total",
			Help: "Calls still waiting on a provider past its slow threshold while its breaker is open or recovering, given a second call on another target.",
		}, []string{"model", "from", "to"}),
		ReplicaCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_replica_calls_total",
			Help: "Upstream calls sent to each replica of a pooled provider.",
		}, []string{"provider", "replica"}),
		ReplicaScrapes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_replica_scrapes_total",
			Help: "Scrapes of a pooled provider's replicas' metrics, by result (ok, error).",
		}, []string{"provider", "replica", "result"}),
		ReplicaDrained: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_replica_drained",
			Help: "1 while a replica of a pooled provider takes no new calls, by reason (stale: its metrics stopped answering; queued: its queue is past the cap; tripped: its breaker is open), else 0.",
		}, []string{"provider", "replica", "reason"}),
		Probes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_breaker_probes_total",
			Help: "Synthetic probes of half-open breakers, by result (ok: a 2xx answer, whose speed the breaker judges; error, rate_limited, timeout, cancelled).",
		}, []string{"provider", "result"}),
		BreakerTransitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_breaker_transitions_total",
			Help: "Breaker state changes, by the state entered and the reason.",
		}, []string{"provider", "to", "reason"}),
		Reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_config_reloads_total",
			Help: "Configuration reloads (SIGHUP), by result: ok, or refused (the file was invalid and the running configuration stayed).",
		}, []string{"result"}),
		Tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_tokens_total",
			Help: "Tokens of billed upstream calls (answers, cut and cancelled streams included; a race's loser; continuations), by key, model (the client-facing name), provider, direction (input, output) and source: reported (by the provider), counted (by Sluice, in the model's own encoding) or estimated (in a close encoding, or counted from the relayed stream).",
		}, []string{"key", "model", "provider", "direction", "source"}),
		Cost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_cost_total",
			Help: "Cost in dollars of billed upstream calls (answers, a race's loser, continuations) at the configured prices (prices:), the figure spend and the usage records read, by key, model (the client-facing name, as in sluice_tokens_total), provider and upstream_model (the provider's name for it, which prices are keyed by).",
		}, []string{"key", "model", "provider", "upstream_model"}),
		Degraded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_degraded_total",
			Help: "Background requests served degraded under pressure instead of refused, by model and the model they were served with.",
		}, []string{"model", "served_as"}),
		BudgetRefusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_budget_refusals_total",
			Help: "Requests refused by a per-minute budget, by key (or lane) and dimension.",
		}, []string{"key", "dimension"}),
		SpendRefusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_spend_refusals_total",
			Help: "Requests refused by a spend limit, and hedges or rescues not made for one, by scope (key, team), name and window.",
		}, []string{"scope", "name", "window"}),
		FleetStoreErrors: NewFleetStoreErrors(),
		FleetStoreLosses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_fleet_store_losses_total",
			Help: "Times this replica found that the shared store had lost its data (the fleet's epoch missing or changed, or the run-time keys' version gone backwards) and wrote back what it held, by what saw it (heartbeat, keys, spend, usage).",
		}, []string{"seen_by"}),
		TimeScale: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sluice_time_scale",
			Help: "The factor every time in the configuration was multiplied by, and every per-minute rate divided by (sluice serve --time-scale); 1 at real time.",
		}),
	}
	m.TimeScale.Set(1)
	reg.MustRegister(m.Requests, m.Duration, m.Upstream, m.TTFT, m.QueueWait, m.UpstreamStatus, m.Failovers, m.BreakerTransitions, m.Hedges, m.Retries, m.Validation, m.Rescues, m.ReplicaCalls, m.ReplicaScrapes, m.ReplicaDrained, m.Probes, m.Reloads,
		m.Tokens, m.Cost, m.Degraded, m.BudgetRefusals, m.SpendRefusals, m.FleetStoreErrors, m.FleetStoreLosses, m.TimeScale,
		&gateCollector{m}, &breakerCollector{m}, budgetCollector{m}, quotaCollector{m}, fleetCollector{m}, spendCollector{m},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.registerIdempotency()
	m.registerEvals()
	m.registerCache()
	return m
}

// NewFleetStoreErrors is sluice_fleet_store_errors_total, unregistered
// (New registers the one it makes).
func NewFleetStoreErrors() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_fleet_store_errors_total",
		Help: "Calls to the shared store that failed, by op (heartbeat, budget, lease, spend) and kind (wrongtype: a key holds another type; error: no answer in time, or another error). Every heartbeat that misses counts, so every outage a replica notices moves it."},
		[]string{"op", "kind"})
}

// Snapshotter reports admission state; runner.Runner is one.
type Snapshotter interface {
	Snapshot() admission.Snapshot
}

var (
	inFlightDesc = prometheus.NewDesc("sluice_in_flight_requests",
		"Requests admitted and not yet finished.", []string{"scope"}, nil)
	limitDesc = prometheus.NewDesc("sluice_concurrency_limit",
		"Current concurrency limit (0 means unlimited).", []string{"scope"}, nil)
	queueDesc = prometheus.NewDesc("sluice_queue_depth",
		"Requests waiting for admission.", []string{"priority"}, nil)
	oldestDesc = prometheus.NewDesc("sluice_queue_oldest_wait_seconds",
		"Age of the oldest request waiting for admission.", nil, nil)
	bodyHeldDesc = prometheus.NewDesc("sluice_request_body_bytes_held",
		"Bytes of request-body buffer the gateway holds now, counted as bodies arrive (server.max_body_bytes_in_flight is the budget).", nil, nil)
	bodyLimitDesc = prometheus.NewDesc("sluice_request_body_bytes_limit",
		"The request-body budget, server.max_body_bytes_in_flight.", nil, nil)
	bodyReadingDesc = prometheus.NewDesc("sluice_requests_reading_body",
		"Requests whose bodies are still arriving (a crowd of slow senders shows here).", nil, nil)
)

// gateCollector exports admission's live state at scrape time: in-flight
// and limit per scope ("global" or a provider name), queue depth per
// priority, and the oldest waiter's age.
type gateCollector struct{ m *Metrics }

func (c *gateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- inFlightDesc
	ch <- limitDesc
	ch <- queueDesc
	ch <- oldestDesc
	ch <- bodyHeldDesc
	ch <- bodyLimitDesc
	ch <- bodyReadingDesc
}

func (c *gateCollector) Collect(ch chan<- prometheus.Metric) {
	src := c.m.src.Load()
	if src == nil || src.Admission == nil {
		return
	}
	s := src.Admission.Snapshot()
	gauge := func(d *prometheus.Desc, v int, label ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), label...)
	}
	gauge(inFlightDesc, s.InFlight, "global")
	gauge(limitDesc, s.Limit, "global")
	for i, name := range src.Scopes {
		if i < len(s.ScopeInFlight) {
			gauge(inFlightDesc, s.ScopeInFlight[i], name)
			gauge(limitDesc, s.ScopeLimits[i], name)
		}
	}
	for _, p := range admission.Priorities() {
		gauge(queueDesc, s.Queued[p], p.String())
	}
	ch <- prometheus.MustNewConstMetric(oldestDesc, prometheus.GaugeValue, s.OldestWait.Seconds())
	if src.BodyBytes != nil {
		held, limit, reading := src.BodyBytes()
		ch <- prometheus.MustNewConstMetric(bodyHeldDesc, prometheus.GaugeValue, float64(held))
		ch <- prometheus.MustNewConstMetric(bodyLimitDesc, prometheus.GaugeValue, float64(limit))
		ch <- prometheus.MustNewConstMetric(bodyReadingDesc, prometheus.GaugeValue, float64(reading))
	}
}

var (
	breakerStateDesc = prometheus.NewDesc("sluice_breaker_state",
		"Breaker state per provider: 0 closed, 1 open, 2 half-open, 3 recovering.", []string{"provider"}, nil)
	breakerWeightDesc = prometheus.NewDesc("sluice_breaker_weight",
		"Share of new traffic the provider's breaker lets through (fail-back step).", []string{"provider"}, nil)
	breakerRateDesc = prometheus.NewDesc("sluice_breaker_window_rate",
		"Error and slow-call rates in the breaker's sliding window.", []string{"provider", "kind"}, nil)
	breakerSlowDesc = prometheus.NewDesc("sluice_breaker_slow_threshold_seconds",
		"Age at which an in-flight call counts as slow.", []string{"provider"}, nil)
)

// breakerCollector exports each provider's breaker at scrape time.
type breakerCollector struct{ m *Metrics }

func (c *breakerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- breakerStateDesc
	ch <- breakerWeightDesc
	ch <- breakerRateDesc
	ch <- breakerSlowDesc
}

func (c *breakerCollector) Collect(ch chan<- prometheus.Metric) {
	src := c.m.src.Load()
	if src == nil || src.Breakers == nil {
		return
	}
	for i, st := range src.Breakers() {
		if st == nil || i >= len(src.Scopes) {
			continue
		}
		p := src.Scopes[i]
		g := func(d *prometheus.Desc, v float64, labels ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
		}
		g(breakerStateDesc, float64(st.State), p)
		g(breakerWeightDesc, st.Weight, p)
		g(breakerRateDesc, st.ErrorRate, p, "error")
		g(breakerRateDesc, st.SlowRate, p, "slow")
		g(breakerSlowDesc, st.SlowThreshold.Seconds(), p)
	}
}

var (
	hedgeRefusedDesc = prometheus.NewDesc("sluice_hedges_refused_total",
		"Hedges not sent: the budget was spent, or no target had room.", []string{"reason"}, nil)
	retryRefusedDesc = prometheus.NewDesc("sluice_retries_refused_total",
		"Retries not sent because the retry budget was spent.", nil, nil)
)

// Refusals counts the second calls the engine's budgets turned down.
type Refusals struct{ HedgeBudget, HedgeNoTarget, RetryBudget uint64 }

// budgetCollector exports the engine's refused hedges and retries at
// scrape time.
type budgetCollector struct{ m *Metrics }

func (c budgetCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- hedgeRefusedDesc
	ch <- retryRefusedDesc
}

func (c budgetCollector) Collect(ch chan<- prometheus.Metric) {
	src := c.m.src.Load()
	if src == nil || src.Refused == nil {
		return
	}
	r := src.Refused()
	ch <- prometheus.MustNewConstMetric(hedgeRefusedDesc, prometheus.CounterValue, float64(r.HedgeBudget), "budget")
	ch <- prometheus.MustNewConstMetric(hedgeRefusedDesc, prometheus.CounterValue, float64(r.HedgeNoTarget), "no_target")
	ch <- prometheus.MustNewConstMetric(retryRefusedDesc, prometheus.CounterValue, float64(r.RetryBudget))
}

var (
	quotaLimitDesc = prometheus.NewDesc("sluice_budget_limit",
		"A per-minute budget's limit, by owner (key, provider, lane), name and dimension (requests, input_tokens, output_tokens).", []string{"owner", "name", "dimension"}, nil)
	quotaRemainingDesc = prometheus.NewDesc("sluice_budget_remaining",
		"What a per-minute budget would let through at once now, by owner, name and dimension.", []string{"owner", "name", "dimension"}, nil)
	quotaReservedDesc = prometheus.NewDesc("sluice_budget_reserved",
		"What admitted requests hold reserved of a key's budget now (input tokens as counted, output tokens as max_tokens), until their usage settles it.", []string{"owner", "name", "dimension"}, nil)
)

// quotaCollector exports the per-minute budgets at scrape time.
type quotaCollector struct{ m *Metrics }

func (c quotaCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- quotaLimitDesc
	ch <- quotaRemainingDesc
	ch <- quotaReservedDesc
}

func (c quotaCollector) Collect(ch chan<- prometheus.Metric) {
	src := c.m.src.Load()
	if src == nil || src.Quotas == nil {
		return
	}
	for _, q := range src.Quotas() {
		ch <- prometheus.MustNewConstMetric(quotaLimitDesc, prometheus.GaugeValue, float64(q.Limit), q.Owner, q.Name, q.Dimension)
		ch <- prometheus.MustNewConstMetric(quotaRemainingDesc, prometheus.GaugeValue, float64(q.Remaining), q.Owner, q.Name, q.Dimension)
		if q.Owner == "key" {
			ch <- prometheus.MustNewConstMetric(quotaReservedDesc, prometheus.GaugeValue, float64(q.Reserved), q.Owner, q.Name, q.Dimension)
		}
	}
}

// SetFleet makes the fleet gauges read f: the live replica count, and
// whether the shared store answers now.
func (m *Metrics) SetFleet(f func() (replicas int, shared bool)) { m.fleet.Store(&f) }

// SetFleetShare makes sluice_fleet_limit_share read f: this replica's
// part of the fleet's fixed concurrency limits, from 0 to 1.
func (m *Metrics) SetFleetShare(f func() float64) { m.fleetShare.Store(&f) }

var (
	fleetShareDesc = prometheus.NewDesc("sluice_fleet_limit_share",
		"This replica's part of the fleet's fixed concurrency limits (0 to 1), as the shared store granted it: an equal part once the fleet is settled, less while a joining replica waits for the others to give back what their calls hold, 0 before any.", nil, nil)
	fleetReplicasDesc = prometheus.NewDesc("sluice_fleet_replicas",
		"Live replicas in this replica's fleet (store:), as its last heartbeat saw them.", nil, nil)
	fleetSharedDesc = prometheus.NewDesc("sluice_fleet_store_shared",
		"1 while the shared store answers and key budgets are the fleet's; 0 while this replica decides alone with its share.", nil, nil)
)

// fleetCollector exports the fleet's state at scrape time.
type fleetCollector struct{ m *Metrics }

func (c fleetCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- fleetReplicasDesc
	ch <- fleetSharedDesc
	ch <- fleetShareDesc
}

func (c fleetCollector) Collect(ch chan<- prometheus.Metric) {
	f := c.m.fleet.Load()
	if f == nil {
		return
	}
	n, shared := (*f)()
	v := 0.0
	if shared {
		v = 1
	}
	ch <- prometheus.MustNewConstMetric(fleetReplicasDesc, prometheus.GaugeValue, float64(n))
	ch <- prometheus.MustNewConstMetric(fleetSharedDesc, prometheus.GaugeValue, v)
	if s := c.m.fleetShare.Load(); s != nil {
		ch <- prometheus.MustNewConstMetric(fleetShareDesc, prometheus.GaugeValue, (*s)())
	}
}
