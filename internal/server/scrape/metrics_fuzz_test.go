package scrape

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/internal/core/pool"
)

// FuzzParseMetrics: a replica's metrics page is read into a load whose
// queue counts are finite and never negative and whose KV cache share
// is within [0, 1], whatever the page holds (a replica is a process
// the gateway does not control). On a page built from the fuzzed
// values, the load is the sum of the series that make sense.
func FuzzParseMetrics(f *testing.F) {
	f.Add([]byte("# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name=\"m\"} 3\nvllm:num_requests_running 2\nvllm:kv_cache_usage_perc 0.5\n"), 1.0, 2.0, 0.25, false)
	f.Add([]byte("sglang:num_queue_reqs 1\nsglang:num_running_reqs 4\nsglang:token_usage 1.5\n"), 0.0, 0.0, 0.0, true)
	f.Add([]byte("vllm:num_requests_waiting NaN\nvllm:num_requests_running +Inf\nvllm:gpu_cache_usage_perc -1\n"), math.Inf(1), -1.0, math.NaN(), false)
	f.Add([]byte("# TYPE vllm:num_requests_waiting counter\nvllm:num_requests_waiting 7\n"), 1e308, 1e308, 2.0, true)
	f.Add([]byte("process_cpu_seconds_total 12\n"), 5e-324, 0.0, 1.0, false)
	f.Add([]byte("vllm:num_requests_waiting{a=\"\\\"\"} 1 1700000000000\n"), 1.0, 1.0, 1.0, false)
	f.Fuzz(func(t *testing.T, page []byte, w1, w2, kv float64, sglang bool) {
		l, err := ParseMetrics(strings.NewReader(string(page)))
		if err == nil {
			sane(t, l, page)
		} else if l != (pool.Load{}) {
			t.Fatalf("error %v with a load %+v", err, l)
		}

		waiting, running, cache := "vllm:num_requests_waiting", "vllm:num_requests_running", "vllm:kv_cache_usage_perc"
		if sglang {
			waiting, running, cache = "sglang:num_queue_reqs", "sglang:num_running_reqs", "sglang:token_usage"
		}
		built := fmt.Sprintf("# TYPE %[1]s gauge\n%[1]s{model_name=\"a\"} %[2]s\n%[1]s{model_name=\"b\"} %[3]s\n%[4]s 1\n%[5]s %[6]s\n",
			waiting, num(w1), num(w2), running, cache, num(kv))
		l, err = ParseMetrics(strings.NewReader(built))
		if err != nil {
			t.Fatalf("%v\n%s", err, built)
		}
		sane(t, l, []byte(built))
		want := 0.0
		for _, v := range []float64{w1, w2} {
			if v > 0 && !math.IsInf(v, 0) {
				want += v
			}
		}
		if math.IsInf(want, 0) {
			want = 0
		}
		if l.Waiting != want || l.Running != 1 {
			t.Fatalf("waiting %v, running %v; want %v and 1\n%s", l.Waiting, l.Running, want, built)
		}
		if wantKV := min(max(kv, 0), 1); !math.IsNaN(kv) && !math.IsInf(kv, 0) && l.KVCache != wantKV {
			t.Fatalf("KV cache %v, want %v\n%s", l.KVCache, wantKV, built)
		}
	})
}

func sane(t *testing.T, l pool.Load, page []byte) {
	t.Helper()
	for _, v := range []float64{l.Waiting, l.Running, l.KVCache} {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			t.Fatalf("load %+v from %q", l, page)
		}
	}
	if l.KVCache > 1 {
		t.Fatalf("KV cache share %v from %q", l.KVCache, page)
	}
}

// num writes v as the text format does.
func num(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
