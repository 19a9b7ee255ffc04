package metrics

import "github.com/prometheus/client_golang/prometheus"

// Cache are the response cache's metrics (docs/CACHE.md).
type Cache struct {
	// Requests counts the requests of models with the cache on, by
	// model and result: hit, miss, bypass (stale is reserved for an
	// answer given past its TTL).
	Requests *prometheus.CounterVec
	// Writes counts what became of the answers of the misses and
	// bypasses that could be stored, by model and result.
	Writes *prometheus.CounterVec
	// Tokens counts the tokens the hits' answers carried, which no
	// provider was called for, by model and direction.
	Tokens *prometheus.CounterVec
	// StoreErrors counts the store's calls that failed or timed out, by
	// op (get, put): each a miss, or an answer not stored.
	StoreErrors *prometheus.CounterVec
}

// CacheState is the cache's store at a scrape: entries and bytes by
// model, when the store is this process's memory (Memory); a fleet's
// Redis store's totals are not known to one replica.
type CacheState struct {
	Memory   bool
	Entries  map[string]int
	Bytes    map[string]int64
	MaxBytes int64
}

// SetCache makes the cache's gauges read f.
func (m *Metrics) SetCache(f func() CacheState) { m.cache.Store(&f) }

var (
	cacheEntriesDesc = prometheus.NewDesc("sluice_cache_entries",
		"Answers the response cache holds in this process's memory, by model.", []string{"model"}, nil)
	cacheBytesDesc = prometheus.NewDesc("sluice_cache_bytes",
		"Memory the response cache's answers take, by model (cache.max_bytes bounds the sum).", []string{"model"}, nil)
	cacheMaxBytesDesc = prometheus.NewDesc("sluice_cache_max_bytes",
		"The response cache's bound in bytes (cache.max_bytes).", nil, nil)
)

func (m *Metrics) registerCache() {
	m.Cache = Cache{
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_cache_requests_total",
			Help: "Requests to models with the response cache on, by result: hit (answered from the cache, no provider called), miss (looked up, none fresh enough), bypass (not looked up: not cacheable, or Cache-Control: no-cache).",
		}, []string{"model", "result"}),
		Writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_cache_writes_total",
			Help: "Answers of misses and bypasses, by what became of them: stored, or why not (incomplete, refusal, invalid, continued, rerouted, shape, too_large, no_room, no_store, store_error).",
		}, []string{"model", "result"}),
		Tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_cache_tokens_total",
			Help: "Tokens of the answers given from the cache, as their provider counted them when they were stored, by direction (input, output): usage no provider was called for.",
		}, []string{"model", "direction"}),
		StoreErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_cache_store_errors_total",
			Help: "Calls to the cache's store that failed or timed out, by op (get: taken for a miss; put: the answer not stored).",
		}, []string{"op"}),
	}
	m.Registry.MustRegister(m.Cache.Requests, m.Cache.Writes, m.Cache.Tokens, m.Cache.StoreErrors, cacheCollector{m})
}

// cacheCollector exports the cache's gauges at scrape time.
type cacheCollector struct{ m *Metrics }

func (c cacheCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- cacheEntriesDesc
	ch <- cacheBytesDesc
	ch <- cacheMaxBytesDesc
}

func (c cacheCollector) Collect(ch chan<- prometheus.Metric) {
	f := c.m.cache.Load()
	if f == nil {
		return
	}
	s := (*f)()
	if !s.Memory {
		return
	}
	for model, n := range s.Entries {
		ch <- prometheus.MustNewConstMetric(cacheEntriesDesc, prometheus.GaugeValue, float64(n), model)
		ch <- prometheus.MustNewConstMetric(cacheBytesDesc, prometheus.GaugeValue, float64(s.Bytes[model]), model)
	}
	ch <- prometheus.MustNewConstMetric(cacheMaxBytesDesc, prometheus.GaugeValue, float64(s.MaxBytes))
}
