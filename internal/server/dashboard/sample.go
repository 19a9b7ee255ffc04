package dashboard

// Sample is one second of the gateway, as the page charts it. Rates are
// per second over the second before T; latencies are quantiles over the
// trailing LatencyWindow.
type Sample struct {
	// T is the sample's time, Unix milliseconds.
	T int64 `json:"t"`
	// RPS is client requests finished per second; OK those answered.
	RPS float64 `json:"rps"`
	OK  float64 `json:"ok"`
	// InFlight and Limit are the whole gateway's (Limit 0: unlimited).
	InFlight int `json:"in_flight"`
	Limit    int `json:"limit"`
	// Queue is the admission queue's depth by class (critical,
	// interactive, background); OldestWaitMS its oldest waiter's age.
	Queue        map[string]int `json:"queue"`
	OldestWaitMS float64        `json:"oldest_wait_ms"`
	// LatencyMS is the client-seen latency of requests that were not
	// shed or refused (a shed answer takes a millisecond and would hide
	// the rest); TTFTMS the upstream time to first byte.
	LatencyMS Quantiles `json:"latency_ms"`
	TTFTMS    Quantiles `json:"ttft_ms"`
	// Sheds are shed requests per second by "reason/class".
	Sheds map[string]float64 `json:"sheds"`
	// Hedges, Rescues and Retries are the second calls sent per second;
	// Refused those the budgets (or a lack of targets) turned down.
	Hedges  float64 `json:"hedges"`
	Rescues float64 `json:"rescues"`
	Retries float64 `json:"retries"`
	Refused float64 `json:"refused"`
	// TokensPerMin is tokens (input and output) per minute by key, at
	// the last second's pace; "-" is requests without a key.
	TokensPerMin map[string]float64 `json:"tokens_per_min,omitempty"`
	// EvalPassRate is each eval-graded target's pass rate, 0 to 1, by
	// "model provider/upstream model" (models[].evals; absent without
	// evals).
	EvalPassRate map[string]float64 `json:"eval_pass_rate,omitempty"`
	// CacheHits and CacheMisses are the response cache's hits and
	// misses per second (sluice_cache_requests_total): their share is
	// the hit ratio. Zero without the cache.
	CacheHits   float64    `json:"cache_hits,omitempty"`
	CacheMisses float64    `json:"cache_misses,omitempty"`
	Providers   []Provider `json:"providers"`
	// Verdict is Classify's kind at this second.
	Verdict string `json:"verdict"`
}

// Provider is one provider's second.
type Provider struct {
	Name     string `json:"name"`
	InFlight int    `json:"in_flight"`
	Limit    int    `json:"limit"`
	// State is the breaker's state (closed, open, half_open,
	// recovering; "" without a breaker); Weight the share of new
	// traffic it lets through, the fail-back step.
	State  string  `json:"state"`
	Weight float64 `json:"weight"`
	// ErrorRate and SlowRate are the breaker window's rates, 0 to 1.
	ErrorRate float64 `json:"error_rate"`
	SlowRate  float64 `json:"slow_rate"`
	// Calls are upstream answers per second; Throttled those that were
	// 429, or 503/529 (overloaded); Errors the other failures.
	Calls     float64 `json:"calls"`
	Throttled float64 `json:"throttled"`
	Errors    float64 `json:"errors"`
}

// Quantiles are latency quantiles in milliseconds; 0 when nothing was
// observed in the window (the page draws a gap, not a zero).
type Quantiles struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
	N   float64 `json:"n"`
}

// Event is something to mark on the time axis.
type Event struct {
	// Seq numbers the events from 1, so a reader polling with since can
	// tell one it has already seen.
	Seq int64 `json:"seq"`
	T   int64 `json:"t"`
	// Kind is "breaker" (a provider's breaker changed state, or took a
	// fail-back step: recovering to recovering, Label saying the share), "verdict"
	// (the pressure verdict changed) or "mark" (a host's own note, such
	// as the demo's scripted brownout).
	Kind     string `json:"kind"`
	Provider string `json:"provider,omitempty"`
	From     string `json:"from,omitempty"`
	To       string `json:"to,omitempty"`
	Label    string `json:"label"`
}

// Budgets are the second-call budgets the page draws the rates against:
// the share of requests that may get a hedge, and a retry.
type Budgets struct {
	Hedge float64 `json:"hedge"`
	Retry float64 `json:"retry"`
}

// Snapshot is what data.json answers: the samples and events after the
// asked-for time, and the current verdict with its evidence.
type Snapshot struct {
	Now      int64    `json:"now"`
	Interval int64    `json:"interval_ms"`
	Window   int64    `json:"window_ms"`
	Budgets  Budgets  `json:"budgets"`
	Verdict  Verdict  `json:"verdict"`
	Samples  []Sample `json:"samples"`
	Events   []Event  `json:"events"`
	// Spenders are today's (UTC) top keys by cost, from the usage
	// records (SetSpenders); NearLimits the keys with little left of a
	// per-minute budget at the last sample.
	Spenders   []Spender   `json:"spenders"`
	NearLimits []NearLimit `json:"near_limits"`
}

// Spender is one key's spending today (UTC), fleet-wide when the usage
// records are in a shared store.
type Spender struct {
	Key        string `json:"key"`
	Team       string `json:"team"`
	Requests   int64  `json:"requests"`
	CostMicros int64  `json:"cost_micros"`
}

// NearLimit is a key with less than NearLimitShare of a per-minute
// budget left (sluice_budget_remaining against sluice_budget_limit).
type NearLimit struct {
	Key       string  `json:"key"`
	Dimension string  `json:"dimension"`
	Limit     int64   `json:"limit"`
	Remaining int64   `json:"remaining"`
	Used      float64 `json:"used"` // the share spent, 0 to 1
}

// NearLimitShare: a key with less than this share of a budget left is
// near its limit. MaxNearLimits bounds the list, the nearest first.
const (
	NearLimitShare = 0.2
	MaxNearLimits  = 10
)
