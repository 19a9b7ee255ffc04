package scrape

import (
	"errors"
	"io"
	"math"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/sluice-gw/sluice/internal/core/pool"
)

// The gauges a replica's metrics are read for, by server. Each is summed
// over its series (a server serving several models has one per model).
var (
	waitingNames = []string{"vllm:num_requests_waiting", "sglang:num_queue_reqs"}
	runningNames = []string{"vllm:num_requests_running", "sglang:num_running_reqs"}
	// vLLM renamed its gauge; both are a share from 0 to 1.
	kvNames = []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage"}
)

// ErrNoLoad: a metrics page had none of the gauges a pool reads, so it
// is not a vLLM or SGLang server's (or not one this version knows).
var ErrNoLoad = errors.New("scrape: no vLLM or SGLang queue metrics in the page")

// ParseMetrics reads a replica's load from its Prometheus metrics page
// in the text exposition format: vLLM's vllm:num_requests_waiting,
// vllm:num_requests_running and vllm:kv_cache_usage_perc, or SGLang's
// sglang:num_queue_reqs, sglang:num_running_reqs and sglang:token_usage.
// A page with neither queue gauge is ErrNoLoad.
func ParseMetrics(r io.Reader) (pool.Load, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return pool.Load{}, err
	}
	var l pool.Load
	w, okW := sum(fams, waitingNames)
	run, okR := sum(fams, runningNames)
	if !okW && !okR {
		return pool.Load{}, ErrNoLoad
	}
	l.Waiting, l.Running = w, run
	if kv, ok := sum(fams, kvNames); ok {
		l.KVCache = min(max(kv, 0), 1)
	}
	return l, nil
}

// sum adds the series of the first family named that the page has.
func sum(fams map[string]*dto.MetricFamily, names []string) (float64, bool) {
	for _, n := range names {
		f, ok := fams[n]
		if !ok {
			continue
		}
		var s float64
		for _, m := range f.GetMetric() {
			var v float64
			switch {
			case m.GetGauge() != nil:
				v = m.GetGauge().GetValue()
			case m.GetUntyped() != nil:
				v = m.GetUntyped().GetValue()
			}
			if !math.IsNaN(v) && !math.IsInf(v, 0) && v > 0 {
				s += v
			}
		}
		if math.IsNaN(s) || math.IsInf(s, 0) || s < 0 {
			s = 0 // a broken gauge says nothing
		}
		return s, true
	}
	return 0, false
}
