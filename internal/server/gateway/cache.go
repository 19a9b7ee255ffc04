package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/server/cache"
	"github.com/sluice-gw/sluice/internal/server/fleetstore"
	"github.com/sluice-gw/sluice/internal/server/metrics"
	"github.com/sluice-gw/sluice/internal/server/usage"
	"github.com/sluice-gw/sluice/internal/wire/answer"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// The response cache (docs/CACHE.md; package cache keeps the answers,
// package answer turns them between whole and streamed). A chat request
// of a model or key with the cache on is decided once its body is read
// and its model known, before any budget, slot or provider:
//
//   - its key is the request read by its meaning, in its tenant's scope
//     (idemScope: a key's tenant, else the client credential's hash,
//     else the anonymous scope), so no tenant reads another's answers;
//   - a fresh entry young enough for the request's Cache-Control
//     answers it: in the client's dialect and mode, a whole answer or
//     the stream its vendor would send, with X-Sluice-Cache: hit and
//     Age; no admission slot, budget or spend is taken, and no provider
//     is called;
//   - otherwise the request is served as any other, its answer recorded
//     as it goes to the client (whole, or a stream collected whole as it
//     passes; never more than cache.max_entry_bytes), and stored when it
//     is complete: a finish reason, no refusal, not cut at the output
//     cap, not continued, not degraded or rerouted, its declared
//     structured output held, and writable back in both modes.
//
// A lost or slow store is a miss (a lookup waits at most the fleet's
// timeout) and an answer not stored, never an error for the client.

// Results, for X-Sluice-Cache and sluice_cache_requests_total.
const (
	cacheHit    = "hit"
	cacheMiss   = "miss"
	cacheBypass = "bypass"
	// cacheStale is reserved for an answer given past its TTL because no
	// target can answer (stale-if-error, docs/CACHE.md#what-comes-next).
	cacheStale = "stale"
)

// cacheUpstream is the usage records' upstream model for the requests
// the cache answered: a row of its own, at no cost, apart from every
// provider's.
const cacheUpstream = "(cache)"

// cacheShared is what outlives one configuration (Host): the memory
// store, so a reload keeps what it holds.
type cacheShared struct {
	memory *cache.Memory
}

func newCacheShared() *cacheShared {
	return &cacheShared{memory: cache.NewMemory(cache.MemoryOptions{})}
}

// cacheState is a gateway's response cache.
type cacheState struct {
	store cache.Store
	// memory is the store when it is this process's; nil with a fleet.
	memory *cache.Memory
	// models are the models' settings, by name (nil: the model says
	// nothing).
	models   map[string]*config.ModelCache
	maxEntry int64
	// lookup bounds a lookup in the fleet's store, put a write (0: in
	// memory, unbounded, and at once).
	lookup, put time.Duration
	// writes tracks the writes to a fleet's store still running, which
	// Close waits for.
	writes  sync.WaitGroup
	metrics *metrics.Metrics
	log     *slog.Logger
	now     func() time.Time
	usage   *usageBook
	// writeTimeout bounds each write of a hit to its client.
	writeTimeout time.Duration
}

// newCacheState builds the gateway's cache from cfg: in the fleet's
// Redis when there is a fleet (f), else in memory.
func newCacheState(cfg *config.Config, shared *cacheShared, f *fleet, m *metrics.Metrics, log *slog.Logger, now func() time.Time,
	book *usageBook, writeTimeout time.Duration) *cacheState {
	cc := cfg.Cache.WithDefaults()
	s := &cacheState{models: make(map[string]*config.ModelCache, len(cfg.Models)), maxEntry: cc.MaxEntryBytes.Int64(),
		metrics: m, log: log, now: now, usage: book, writeTimeout: writeTimeout}
	window := config.DefaultCacheTTL
	for i := range cfg.Models {
		mc := cfg.Models[i].Cache
		s.models[cfg.Models[i].Name] = mc
		if mc.On() {
			d := mc.WithDefaults()
			window = max(window, d.TTL.D()+d.StaleIfError.D())
		}
	}
	if f != nil {
		prefix := cfg.Fleet.Prefix
		if prefix == "" {
			prefix = fleetstore.DefaultPrefix
		}
		s.store = fleetCacheStore{cache.NewRedis(f.rdb, cache.RedisOptions{Prefix: prefix, MaxBytes: cc.MaxBytes.Int64(),
			MaxEntryBytes: cc.MaxEntryBytes.Int64(), Window: window}), f}
		s.lookup, s.put = f.timeout, max(4*f.timeout, 100*time.Millisecond)
		m.SetCache(func() metrics.CacheState { return metrics.CacheState{} })
		return s
	}
	if shared == nil {
		shared = newCacheShared()
	}
	shared.memory.Configure(cache.MemoryOptions{MaxBytes: cc.MaxBytes.Int64(), MaxEntryBytes: cc.MaxEntryBytes.Int64()})
	s.store, s.memory = shared.memory, shared.memory
	m.SetCache(func() metrics.CacheState {
		_, _, byModel := shared.memory.Stats(now())
		st := metrics.CacheState{Memory: true, Entries: map[string]int{}, Bytes: map[string]int64{}, MaxBytes: cc.MaxBytes.Int64()}
		for model, ms := range byModel {
			st.Entries[model], st.Bytes[model] = ms.Entries, ms.Bytes
		}
		return st
	})
	return s
}

// fleetCacheStore is the fleet's Redis store, asked only while the
// fleet finds Redis reachable: while it does not, every lookup is a
// miss at once rather than a wait for the timeout.
type fleetCacheStore struct {
	*cache.Redis
	f *fleet
}

func (s fleetCacheStore) Get(ctx context.Context, k cache.Key, now time.Time) (*cache.Entry, error) {
	if !s.f.reachable.Load() {
		return nil, errStoreDown
	}
	return s.Redis.Get(ctx, k, now)
}

func (s fleetCacheStore) Put(ctx context.Context, k cache.Key, e *cache.Entry) (bool, error) {
	if !s.f.reachable.Load() {
		return false, errStoreDown
	}
	return s.Redis.Put(ctx, k, e)
}

// cacheCall is one request's dealings with the cache.
type cacheCall struct {
	s      *cacheState
	key    cache.Key
	ctl    cache.Control
	set    config.ModelCache
	model  string
	result string
	// lookup: the request may be answered from the cache; store: its
	// answer may be stored.
	lookup, store bool
	// includeUsage: an OpenAI client asked its stream for the usage
	// chunk.
	includeUsage bool
}

// cacheable are the endpoints whose answers the cache keeps: chat, in
// either API (package answer turns their answers between modes).
var cacheable = map[string]bool{"chat_completions": true, "messages": true}

// plan decides what the cache does for a request to m: nil when the
// cache is off for its model and key (the request is served as if
// there were none, and its answer says nothing of a cache).
func (s *cacheState) plan(r *http.Request, x *exchange, m *model, body *protocol.Body) *cacheCall {
	if s == nil {
		return nil
	}
	mc := s.models[m.name]
	var kc *config.KeyCache
	if x.key != nil {
		kc = x.key.cache
	}
	if !config.CacheOn(mc, kc) {
		return nil
	}
	c := &cacheCall{s: s, set: mc.WithDefaults(), model: m.name, result: cacheBypass, includeUsage: readIncludeUsage(body)}
	if !cacheable[x.endpoint.Name] || x.bridge != nil {
		return c
	}
	k, facts, err := cache.KeyOf(cache.Request{Scope: idemScope(r, x), Endpoint: x.endpoint.Path, Model: m.name,
		Headers: answerHeaders(r.Header, m), Body: body.Raw()})
	if err != nil || (facts.Sampled && !c.set.Temperature) {
		return c
	}
	c.key, c.store, c.lookup = k, true, true
	if kc.Controls() {
		c.ctl = cache.ParseControl(r.Header.Values("Cache-Control"))
		c.lookup, c.store = !c.ctl.NoCache, !c.ctl.NoStore
	}
	if c.lookup {
		c.result = cacheMiss
	}
	return c
}

// answerHeaders are the request's headers that reach m's providers and
// may change an answer (the APIs' beta and version headers, and any the
// operator forwards), for the key; Accept only says how the answer is
// delivered.
func answerHeaders(h http.Header, m *model) [][2]string {
	var out [][2]string
	seen := map[string]bool{}
	for _, t := range m.targets {
		for _, name := range t.provider.forward {
			if name == "Accept" || seen[name] {
				continue
			}
			seen[name] = true
			if vv := h.Values(name); len(vv) > 0 {
				out = append(out, [2]string{strings.ToLower(name), strings.Join(vv, ",")})
			}
		}
	}
	return out
}

// generateCached is generate, with the response cache in front of it
// when the request's model or key has it on.
func (g *Gateway) generateCached(w http.ResponseWriter, r *http.Request, x *exchange, m *model, body *protocol.Body, clientTimeout time.Duration) {
	c := g.cache.plan(r, x, m, body)
	if c == nil {
		g.generate(w, r, x, m, body, clientTimeout)
		return
	}
	if c.lookup {
		if e := c.get(r.Context()); e != nil && c.serve(w, x, e) {
			return
		}
	}
	x.cache = c.result
	w.Header().Set("X-Sluice-Cache", c.result)
	c.s.metrics.Cache.Requests.WithLabelValues(c.model, c.result).Inc()
	if !c.store {
		if c.key != (cache.Key{}) {
			c.s.metrics.Cache.Writes.WithLabelValues(c.model, "no_store").Inc()
		}
		g.generate(w, r, x, m, body, clientTimeout)
		return
	}
	rec := newCacheRecorder(w, x.endpoint.Dialect, x.stream, c.s.maxEntry)
	g.generate(rec, r, x, m, body, clientTimeout)
	c.keep(x, rec)
}

// get looks the request's key up, within the store's timeout; an entry
// is returned only when it is fresh and as young as the request asks.
func (c *cacheCall) get(ctx context.Context) *cache.Entry {
	if c.s.lookup > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.s.lookup)
		defer cancel()
	}
	now := c.s.now()
	e, err := c.s.store.Get(ctx, c.key, now)
	if err != nil {
		c.s.metrics.Cache.StoreErrors.WithLabelValues("get").Inc()
		return nil
	}
	if e == nil || !e.Fresh(now) || (c.ctl.HasMaxAge && e.Age(now) > c.ctl.MaxAge) {
		// Past its TTL, an entry is kept for stale-if-error only.
		return nil
	}
	return e
}

// serve answers the request from e, in its dialect and mode; false
// when e cannot be written in that mode, and the request is served as a
// miss.
func (c *cacheCall) serve(w http.ResponseWriter, x *exchange, e *cache.Entry) bool {
	d := x.endpoint.Dialect
	data := e.Body
	if x.stream {
		var err error
		if data, err = answer.Stream(d, e.Body, answer.Options{IncludeUsage: c.includeUsage}); err != nil {
			return false
		}
	}
	g := c.s
	h := w.Header()
	if x.stream {
		h.Set("Content-Type", "text/event-stream")
		h.Set("X-Accel-Buffering", "no")
	} else {
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", strconv.Itoa(len(data)))
	}
	h.Set("X-Sluice-Cache", cacheHit)
	h.Set("Age", strconv.FormatInt(int64(e.Age(g.now())/time.Second), 10))
	if e.Validated {
		h.Set("X-Sluice-Validation", "valid")
	}
	x.cache, x.wroteHeader, x.status = cacheHit, true, http.StatusOK
	w.WriteHeader(http.StatusOK)
	x.outcome, x.reason = outcomeOK, "cache_hit"
	if _, err := writerFor(w, x, g.writeTimeout).send(data, x.stream); err != nil {
		x.outcome, x.reason = outcomeCancelled, "client_disconnected"
		if x.stalled {
			x.reason = "client_stalled"
		}
	}
	g.metrics.Cache.Requests.WithLabelValues(c.model, cacheHit).Inc()
	g.metrics.Cache.Tokens.WithLabelValues(c.model, "input").Add(float64(e.Input + e.CachedInput))
	g.metrics.Cache.Tokens.WithLabelValues(c.model, "output").Add(float64(e.Output))
	g.recordHit(x, c.model)
	return true
}

// recordHit adds a hit to the usage records: a request on the cache's
// own row, at no cost, with no call and no tokens, since no provider
// was called (the ledger, ledger.go, records only calls).
func (s *cacheState) recordHit(x *exchange, model string) {
	if s.usage == nil || s.usage.rec == nil {
		return
	}
	row := usage.Row{Key: "-", Team: "-", Model: model, Upstream: cacheUpstream}
	if x.key != nil {
		row.Key, row.Team = x.key.name, x.key.tenant
	}
	s.usage.rec.Add(s.usage.now(), row, usage.Counts{Requests: 1})
}

// readIncludeUsage reads stream_options.include_usage from a body that
// sets stream_options.
func readIncludeUsage(body *protocol.Body) bool {
	if !body.StreamOptions {
		return false
	}
	var v struct {
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	return json.Unmarshal(body.Raw(), &v) == nil && v.StreamOptions.IncludeUsage
}

// keep stores the answer rec recorded, when it is complete and the
// request's exchange says nothing kept it from being whole.
func (c *cacheCall) keep(x *exchange, rec *cacheRecorder) {
	if rec.status != http.StatusOK || x.status != http.StatusOK {
		return // an error, a refusal: never stored
	}
	result := c.judge(x)
	var whole []byte
	var facts answer.Facts
	if result == "" {
		whole, facts, result = c.whole(x, rec)
	}
	if result == "" && c.store {
		e := &cache.Entry{Body: whole, Stored: c.s.now(), TTL: c.set.TTL.D(), Stale: c.set.StaleIfError.D(),
			Validated: x.contract != nil, Input: facts.Usage.Input, CachedInput: facts.Usage.CachedInput, Output: facts.Usage.Output}
		if x.usageKnown && x.reportedInput > 0 {
			cached := min(x.reportedCached, x.reportedInput)
			e.Input, e.CachedInput, e.Output = x.reportedInput-cached, cached, int64(x.outputTokens)
		}
		if e.Size(c.key) > c.s.maxEntry {
			result = "too_large"
		} else {
			c.put(e)
			return
		}
	}
	c.s.metrics.Cache.Writes.WithLabelValues(c.model, result).Inc()
}

// judge is why the exchange's answer must not be stored ("" when
// nothing says so).
func (c *cacheCall) judge(x *exchange) string {
	switch {
	case x.outcome != outcomeOK || x.reason != "" || x.abort:
		return "incomplete" // cut at the output cap, or the client left
	case x.cont.continued != "" || x.cont.done > 0:
		return "continued"
	case x.degraded != "" || x.model != x.requested:
		return "rerouted"
	case x.contract != nil && x.verdict != verdictValid:
		return "invalid"
	}
	return ""
}

// whole is the answer rec recorded as the cache keeps it, and what it
// says of itself, or why it cannot be kept.
func (c *cacheCall) whole(x *exchange, rec *cacheRecorder) ([]byte, answer.Facts, string) {
	d := x.endpoint.Dialect
	whole, err := rec.answer()
	switch {
	case errors.Is(err, answer.ErrTooLarge):
		return nil, answer.Facts{}, "too_large"
	case errors.Is(err, answer.ErrShape):
		return nil, answer.Facts{}, "shape"
	case err != nil:
		return nil, answer.Facts{}, "incomplete"
	}
	facts, err := answer.Inspect(d, whole)
	switch {
	case err != nil:
		return nil, facts, "shape"
	case !facts.Finished:
		return nil, facts, "incomplete"
	case facts.Refused:
		return nil, facts, "refusal"
	}
	if !facts.Usage.Known && x.usageKnown && x.reportedInput > 0 {
		// A stream whose client did not ask for its usage: the
		// provider's count, which the ledger has, goes in.
		cached := min(x.reportedCached, x.reportedInput)
		u := answer.Usage{Input: x.reportedInput - cached, CachedInput: cached, Output: int64(x.outputTokens), Known: true}
		whole = answer.WithUsage(d, whole, u)
		facts.Usage = u
	}
	// Given back in either mode: a whole answer that cannot be written
	// as a stream is not kept.
	if _, err := answer.Stream(d, whole, answer.Options{IncludeUsage: true}); err != nil {
		return nil, facts, "shape"
	}
	return whole, facts, ""
}

// put writes e: in memory at once; in the fleet's store off the
// request's path, within the write timeout.
func (c *cacheCall) put(e *cache.Entry) {
	s := c.s
	done := func(ok bool, err error) {
		switch {
		case err != nil:
			s.metrics.Cache.StoreErrors.WithLabelValues("put").Inc()
			s.metrics.Cache.Writes.WithLabelValues(c.model, "store_error").Inc()
		case !ok:
			s.metrics.Cache.Writes.WithLabelValues(c.model, "no_room").Inc()
		default:
			s.metrics.Cache.Writes.WithLabelValues(c.model, "stored").Inc()
		}
	}
	if s.put == 0 {
		done(s.store.Put(context.Background(), c.key, e))
		return
	}
	s.writes.Add(1)
	go func() {
		defer s.writes.Done()
		ctx, cancel := context.WithTimeout(context.Background(), s.put)
		defer cancel()
		done(s.store.Put(ctx, c.key, e))
	}()
}

// cacheRecorder passes an answer to the client and keeps, beside it,
// what the cache needs of it: a whole answer's bytes, or a stream
// collected whole as it passes; either up to max bytes, past which it
// keeps nothing.
type cacheRecorder struct {
	http.ResponseWriter
	status int
	stream bool
	body   []byte
	col    *answer.Collector
	max    int64
	over   bool
}

func newCacheRecorder(w http.ResponseWriter, d protocol.Dialect, stream bool, max int64) *cacheRecorder {
	rec := &cacheRecorder{ResponseWriter: w, stream: stream, max: max}
	if stream {
		rec.col = answer.NewCollector(d, int(max))
	}
	return rec
}

// Unwrap lets http.ResponseController reach the client's writer
// (flushes, write deadlines).
func (rec *cacheRecorder) Unwrap() http.ResponseWriter { return rec.ResponseWriter }

func (rec *cacheRecorder) WriteHeader(code int) {
	if rec.status == 0 {
		rec.status = code
	}
	rec.ResponseWriter.WriteHeader(code)
}

func (rec *cacheRecorder) Write(p []byte) (int, error) {
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	n, err := rec.ResponseWriter.Write(p)
	if rec.status == http.StatusOK && !rec.over {
		switch {
		case rec.stream:
			rec.col.Write(p[:n])
		case int64(len(rec.body)+n) > rec.max:
			rec.over, rec.body = true, nil
		default:
			rec.body = append(rec.body, p[:n]...)
		}
	}
	return n, err
}

// answer is the whole answer recorded.
func (rec *cacheRecorder) answer() ([]byte, error) {
	switch {
	case rec.over:
		return nil, answer.ErrTooLarge
	case rec.stream:
		return rec.col.Whole()
	}
	return rec.body, nil
}

// serveCacheAdmin serves /admin/cache: GET says what the cache holds;
// DELETE clears a tenant's entries (tenant=NAME, or tenant=- for
// requests without a key or credential), a model's (model=NAME), both
// together, or all=true.
func (g *Gateway) serveCacheAdmin(w http.ResponseWriter, r *http.Request) {
	s := g.cache
	w.Header().Set("Content-Type", "application/json")
	if r.Method == http.MethodGet {
		out := map[string]any{"store": "redis"}
		if s.memory != nil {
			entries, bytes, byModel := s.memory.Stats(s.now())
			out = map[string]any{"store": "memory", "entries": entries, "bytes": bytes, "models": byModel}
		}
		json.NewEncoder(w).Encode(out)
		return
	}
	if r.Method != http.MethodDelete {
		w.Header().Set("Allow", "GET, DELETE")
		http.Error(w, `{"error":"use GET to read the cache's state, DELETE to clear entries"}`, http.StatusMethodNotAllowed)
		return
	}
	q := r.URL.Query()
	tenant, model := q.Get("tenant"), q.Get("model")
	if tenant == "" && model == "" && q.Get("all") != "true" {
		http.Error(w, `{"error":"name what to clear: tenant=NAME (tenant=- for requests with no key), model=NAME, both, or all=true"}`, http.StatusBadRequest)
		return
	}
	scope := ""
	switch tenant {
	case "":
	case "-":
		scope = "anonymous"
	default:
		scope = "tenant:" + tenant
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	n, err := s.store.Clear(ctx, scope, model)
	if err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		json.NewEncoder(w).Encode(map[string]any{"cleared": n, "error": "the store did not finish: " + err.Error()})
		return
	}
	g.log.Info("cache cleared", "tenant", tenant, "model", model, "entries", n)
	json.NewEncoder(w).Encode(map[string]any{"cleared": n, "tenant": tenant, "model": model})
}
