package scrape

import (
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/internal/core/pool"
)

func TestParseMetrics(t *testing.T) {
	vllm := `# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="llama"} 7
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="llama"} 3
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{model_name="llama"} 0.42
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{model_name="llama"} 12345
`
	sglang := `# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="qwen"} 12
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{model_name="qwen"} 4
# TYPE sglang:token_usage gauge
sglang:token_usage{model_name="qwen"} 0.9
`
	for _, c := range []struct {
		name, page string
		want       pool.Load
		err        bool
	}{
		{"vllm", vllm, pool.Load{Waiting: 3, Running: 7, KVCache: 0.42}, false},
		{"sglang", sglang, pool.Load{Waiting: 4, Running: 12, KVCache: 0.9}, false},
		{"older vllm cache gauge", "vllm:num_requests_running 1\nvllm:gpu_cache_usage_perc 0.5\n", pool.Load{Running: 1, KVCache: 0.5}, false},
		{"series summed", "vllm:num_requests_waiting{model_name=\"a\"} 1\nvllm:num_requests_waiting{model_name=\"b\"} 2\n", pool.Load{Waiting: 3}, false},
		{"nonsense values ignored", "vllm:num_requests_waiting NaN\nvllm:num_requests_running -4\nvllm:kv_cache_usage_perc 7\n", pool.Load{KVCache: 1}, false},
		{"not a model server", "process_cpu_seconds_total 3\n", pool.Load{}, true},
		{"not the exposition format", "{\"running\": 3}", pool.Load{}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseMetrics(strings.NewReader(c.page))
			if (err != nil) != c.err || got != c.want {
				t.Errorf("ParseMetrics = %+v, %v; want %+v, error %v", got, err, c.want, c.err)
			}
		})
	}
}
