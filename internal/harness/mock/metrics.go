package mock

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metricsHandler serves the capacity model's state as vLLM names it at
// its /metrics, so a gateway's replica pool can be tried on loopback:
// vllm:num_requests_running and vllm:num_requests_waiting are the
// calls generating and queued now, and vllm:kv_cache_usage_perc is the
// batch's fill (running over max_running, as a share from 0 to 1; 0
// with no batch limit), which is what a KV cache's use tracks on a real
// server.
func (s *Server) metricsHandler() http.Handler {
	reg := prometheus.NewRegistry()
	labels := prometheus.Labels{"model_name": s.cfg.Models[0]}
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels}, f)
	}
	reg.MustRegister(
		gauge("vllm:num_requests_running", "Number of requests in model execution batches.", func() float64 {
			r, _ := s.sched.counts()
			return float64(r)
		}),
		gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", func() float64 {
			_, w := s.sched.counts()
			return float64(w)
		}),
		gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", func() float64 {
			if s.cfg.MaxRunning <= 0 {
				return 0
			}
			r, _ := s.sched.counts()
			return min(1, float64(r)/float64(s.cfg.MaxRunning))
		}),
	)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}
