package metrics

import "github.com/prometheus/client_golang/prometheus"

// Evals are the metrics of the fallback evals (package evals): the
// gateway's own synthetic calls, never counted with client requests.
// Every series is per model and target (provider, upstream model).
type Evals struct {
	// Runs counts eval calls by result: pass, fail (answered, and the
	// check failed) or error (no answer to judge).
	Runs *prometheus.CounterVec
	// PassRate is the target's pass rate over its eval window.
	PassRate *prometheus.GaugeVec
	// Degraded is 1 while the target is degraded by its evals.
	Degraded *prometheus.GaugeVec
	// Duration is how long answered eval calls took.
	Duration *prometheus.HistogramVec
}

var evalLabels = []string{"model", "provider", "upstream_model"}

func (m *Metrics) registerEvals() {
	m.Evals = Evals{
		Runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_eval_calls_total",
			Help: "Eval calls (the gateway's own synthetic traffic, models[].evals), by result: pass, fail (answered wrongly) or error (no answer to judge).",
		}, append(evalLabels, "result")),
		PassRate: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_eval_pass_rate",
			Help: "Share of a target's judged eval answers that passed, over its eval window.",
		}, evalLabels),
		Degraded: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_eval_degraded",
			Help: "1 while a target's eval pass rate is below its threshold: failover passes over it while a healthy target remains.",
		}, evalLabels),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sluice_eval_duration_seconds",
			Help:    "Time eval calls took to answer.",
			Buckets: latencyBuckets,
		}, evalLabels),
	}
	m.Registry.MustRegister(m.Evals.Runs, m.Evals.PassRate, m.Evals.Degraded, m.Evals.Duration)
}
