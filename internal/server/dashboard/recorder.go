package dashboard

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

const (
	// Interval is the sampling period.
	Interval = time.Second
	// DefaultWindow is the samples kept: 15 minutes.
	DefaultWindow = 900
	// LatencyWindow is the trailing window of the latency quantiles, in
	// samples: long enough to hold a p99 at a few requests a second.
	LatencyWindow = 10
	// verdictSamples are averaged for the verdict.
	verdictSamples = 5
	// maxEvents bounds the events kept, however much a breaker flaps.
	maxEvents = 512
)

// Recorder samples a gateway's metrics once a second into a bounded ring.
// Its memory is bounded by the window (samples) and maxEvents (events);
// the request path never calls it. It is safe for concurrent use.
type Recorder struct {
	g      prometheus.Gatherer
	window int

	mu      sync.Mutex
	ring    []Sample // oldest first once full; see at
	head    int      // next write position
	full    bool
	events  []Event
	seq     int64
	budgets Budgets
	verdict Verdict
	// prev holds the counters' values at the last sample; hist the
	// latency histograms' cumulative buckets at the last LatencyWindow
	// samples, oldest first.
	prev     map[string]float64
	prevT    time.Time
	hist     []histPair
	states   map[string]string
	lastKind string
	// near is the keys near a per-minute limit at the last sample;
	// spenders gives today's top spenders (SetSpenders), nil for none.
	near     []NearLimit
	spenders func() []Spender
}

type histPair struct{ latency, ttft hist }

// hist is a histogram's cumulative bucket counts at upper bounds, summed
// over its series.
type hist struct {
	bounds []float64
	counts []float64
	total  float64
}

// NewRecorder returns a recorder over g's metrics (the gateway's
// registry), keeping window samples (DefaultWindow when <= 0).
func NewRecorder(g prometheus.Gatherer, window int) *Recorder {
	if window <= 0 {
		window = DefaultWindow
	}
	return &Recorder{g: g, window: window, ring: make([]Sample, 0, window), states: map[string]string{},
		verdict: Verdict{Kind: Calm, Summary: "no samples yet", Why: []string{"the first sample is taken a second after start"}}}
}

// SetBudgets sets the second-call budgets drawn against the rates (the
// serving configuration's hedging.budget and retries.budget).
func (r *Recorder) SetBudgets(b Budgets) {
	r.mu.Lock()
	r.budgets = b
	r.mu.Unlock()
}

// SetSpenders sets where the top spenders of the day come from (the
// usage records' Recorder.Top); it is called at each data.json.
func (r *Recorder) SetSpenders(f func() []Spender) {
	r.mu.Lock()
	r.spenders = f
	r.mu.Unlock()
}

// Run samples every Interval until ctx ends.
func (r *Recorder) Run(ctx context.Context) {
	t := time.NewTicker(Interval)
	defer t.Stop()
	r.Sample(time.Now())
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			r.Sample(now)
		}
	}
}

// Mark adds a host's note to the time axis at now (sluice demo marks its
// scripted brownout).
func (r *Recorder) Mark(now time.Time, label string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addEvent(Event{T: now.UnixMilli(), Kind: "mark", Label: label})
}

func (r *Recorder) addEvent(e Event) {
	r.seq++
	e.Seq = r.seq
	r.events = append(r.events, e)
	// Drop what has scrolled out of the window, and past maxEvents the
	// oldest, so a flapping breaker cannot grow the list.
	cut := 0
	horizon := e.T - int64(r.window)*Interval.Milliseconds()
	for cut < len(r.events) && (r.events[cut].T < horizon || len(r.events)-cut > maxEvents) {
		cut++
	}
	if cut > 0 {
		r.events = append(r.events[:0], r.events[cut:]...)
	}
}

// Sample gathers the metrics once and records the second that ended at
// now. Run calls it; tests call it with their own times.
func (r *Recorder) Sample(now time.Time) {
	fams, err := r.g.Gather()
	if err != nil && len(fams) == 0 {
		return
	}
	rd := read(fams)
	r.mu.Lock()
	defer r.mu.Unlock()
	dt := now.Sub(r.prevT).Seconds()
	first := r.prev == nil
	if first || dt <= 0 {
		dt = 1
	}
	rate := func(key string) float64 {
		if first {
			return 0
		}
		d := rd.counters[key] - r.prev[key]
		if d < 0 { // a counter reset (a new registry): start again
			return 0
		}
		return d / dt
	}
	s := Sample{T: now.UnixMilli(), InFlight: int(rd.gauges["in_flight|global"]), Limit: int(rd.gauges["limit|global"]),
		Queue: map[string]int{}, OldestWaitMS: 1000 * rd.gauges["oldest"], Sheds: map[string]float64{}}
	for key := range rd.counters {
		switch {
		case strings.HasPrefix(key, "req|"):
			s.RPS += rate(key)
			if strings.HasPrefix(key, "req|ok|") {
				s.OK += rate(key)
			}
			if rest, ok := strings.CutPrefix(key, "req|shed|"); ok {
				if v := rate(key); v > 0 {
					s.Sheds[rest] += v
				}
			}
		case strings.HasPrefix(key, "tok|"):
			if v := rate(key); v > 0 {
				if s.TokensPerMin == nil {
					s.TokensPerMin = map[string]float64{}
				}
				s.TokensPerMin[key[4:]] += 60 * v
			}
		}
	}
	s.Hedges, s.Rescues, s.Retries, s.Refused = rate("hedges"), rate("rescues"), rate("retries"), rate("refused")
	s.CacheHits, s.CacheMisses = rate("cache|hit"), rate("cache|miss")
	for _, p := range rd.priorities {
		s.Queue[p] = int(rd.gauges["queue|"+p])
	}
	for key, v := range rd.gauges {
		if target, ok := strings.CutPrefix(key, "eval|"); ok {
			if s.EvalPassRate == nil {
				s.EvalPassRate = map[string]float64{}
			}
			s.EvalPassRate[target] = v
		}
	}
	r.near = nearLimits(rd)
	for _, name := range rd.providers {
		p := Provider{Name: name, InFlight: int(rd.gauges["in_flight|"+name]), Limit: int(rd.gauges["limit|"+name]),
			State: rd.states[name], Weight: rd.gauges["weight|"+name],
			ErrorRate: rd.gauges["rate|"+name+"|error"], SlowRate: rd.gauges["rate|"+name+"|slow"],
			Calls: rate("up|" + name + "|all"), Throttled: rate("up|" + name + "|throttled"), Errors: rate("up|" + name + "|error")}
		s.Providers = append(s.Providers, p)
		r.transitions(s.T, p, rd.counters, first)
	}

	r.hist = append(r.hist, histPair{rd.latency, rd.ttft})
	if len(r.hist) > LatencyWindow+1 {
		r.hist = append(r.hist[:0], r.hist[len(r.hist)-LatencyWindow-1:]...)
	}
	if len(r.hist) > 1 {
		old := r.hist[0]
		s.LatencyMS = quantiles(rd.latency, old.latency)
		s.TTFTMS = quantiles(rd.ttft, old.ttft)
	}

	recent := append(r.last(verdictSamples-1), s)
	r.verdict = Classify(SignalsFrom(recent, verdictSamples))
	s.Verdict = r.verdict.Kind
	if r.lastKind != "" && r.lastKind != s.Verdict {
		r.addEvent(Event{T: s.T, Kind: "verdict", From: r.lastKind, To: s.Verdict, Label: strings.ReplaceAll(s.Verdict, "_", " ")})
	}
	r.lastKind = s.Verdict
	r.push(s)
	r.prev, r.prevT = rd.counters, now
}

// transitions records a provider's breaker transitions since the last
// sample. The transitions counter sees every one, even a state held for
// less than a second (an open time that ends before the next sample);
// the sampled state alone would miss it. They are recorded in the
// breaker's cycle order from the state last seen.
func (r *Recorder) transitions(t int64, p Provider, counters map[string]float64, first bool) {
	name, now := p.Name, p.State
	was, seen := r.states[name]
	r.states[name] = now
	if first || !seen {
		return
	}
	start := 0
	for i, st := range stateNames {
		if st == was {
			start = i + 1
		}
	}
	from, found := was, false
	for k := range stateNames {
		to := stateNames[(start+k)%len(stateNames)]
		key := "tr|" + name + "|" + to
		if counters[key] > r.prev[key] {
			label := name + " " + to
			if from == to {
				label = fmt.Sprintf("%s fail-back step, %.0f%%", name, 100*p.Weight)
			}
			r.addEvent(Event{T: t, Kind: "breaker", Provider: name, From: from, To: to, Label: label})
			from, found = to, true
		}
	}
	if !found && was != now { // no counter (a breaker without one): the states tell
		r.addEvent(Event{T: t, Kind: "breaker", Provider: name, From: was, To: now, Label: name + " " + now})
	}
}

func (r *Recorder) push(s Sample) {
	if len(r.ring) < r.window {
		r.ring = append(r.ring, s)
		return
	}
	r.ring[r.head] = s
	r.head = (r.head + 1) % r.window
	r.full = true
}

// last returns up to n of the newest samples, oldest first (a copy).
func (r *Recorder) last(n int) []Sample {
	all := r.ordered()
	if len(all) > n {
		all = all[len(all)-n:]
	}
	return append([]Sample(nil), all...)
}

// ordered returns the ring oldest first; it aliases the ring when it has
// not wrapped.
func (r *Recorder) ordered() []Sample {
	if !r.full {
		return r.ring
	}
	out := make([]Sample, 0, len(r.ring))
	out = append(out, r.ring[r.head:]...)
	return append(out, r.ring[:r.head]...)
}

// Since returns the samples and events after since (Unix ms; 0 for the
// whole window) and the current verdict.
func (r *Recorder) Since(since int64) Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	snap := Snapshot{Now: time.Now().UnixMilli(), Interval: Interval.Milliseconds(), Window: int64(r.window) * Interval.Milliseconds(),
		Budgets: r.budgets, Verdict: r.verdict, Samples: []Sample{}, Events: []Event{}, Spenders: []Spender{}, NearLimits: []NearLimit{}}
	snap.NearLimits = append(snap.NearLimits, r.near...)
	if r.spenders != nil {
		snap.Spenders = append(snap.Spenders, r.spenders()...)
	}
	all := r.ordered()
	i := sort.Search(len(all), func(i int) bool { return all[i].T > since })
	snap.Samples = append(snap.Samples, all[i:]...)
	for _, e := range r.events {
		if e.T > since {
			snap.Events = append(snap.Events, e)
		}
	}
	return snap
}

// reading is one gather, flattened: counters and gauges by a short key.
type reading struct {
	counters   map[string]float64
	gauges     map[string]float64
	states     map[string]string
	providers  []string
	priorities []string
	latency    hist
	ttft       hist
}

var stateNames = []string{"closed", "open", "half_open", "recovering"}

func read(fams []*dto.MetricFamily) reading {
	rd := reading{counters: map[string]float64{}, gauges: map[string]float64{}, states: map[string]string{}}
	seen := map[string]bool{}
	addProvider := func(p string) {
		if !seen[p] {
			seen[p] = true
			rd.providers = append(rd.providers, p)
		}
	}
	for _, f := range fams {
		name := f.GetName()
		for _, m := range f.GetMetric() {
			l := labels(m)
			switch name {
			case "sluice_requests_total":
				rd.counters["req|"+l["outcome"]+"|"+l["reason"]+"/"+l["priority"]] += m.GetCounter().GetValue()
			case "sluice_request_duration_seconds":
				if o := l["outcome"]; o != "shed" && o != "client_error" {
					rd.latency.add(m.GetHistogram())
				}
			case "sluice_upstream_ttft_seconds":
				rd.ttft.add(m.GetHistogram())
			case "sluice_upstream_responses_total":
				v := m.GetCounter().GetValue()
				p := l["provider"]
				rd.counters["up|"+p+"|all"] += v
				switch l["code"] {
				case "429", "503", "529":
					rd.counters["up|"+p+"|throttled"] += v
				default:
					if c := l["code"]; c == "error" || (len(c) == 3 && c[0] == '5') {
						rd.counters["up|"+p+"|error"] += v
					}
				}
			case "sluice_hedges_total":
				if l["result"] == "fired" {
					rd.counters["hedges"] += m.GetCounter().GetValue()
				}
			case "sluice_breaker_transitions_total":
				rd.counters["tr|"+l["provider"]+"|"+l["to"]] += m.GetCounter().GetValue()
			case "sluice_cache_requests_total":
				rd.counters["cache|"+l["result"]] += m.GetCounter().GetValue()
			case "sluice_rescues_total":
				rd.counters["rescues"] += m.GetCounter().GetValue()
			case "sluice_retries_total":
				rd.counters["retries"] += m.GetCounter().GetValue()
			case "sluice_hedges_refused_total", "sluice_retries_refused_total":
				rd.counters["refused"] += m.GetCounter().GetValue()
			case "sluice_tokens_total":
				k := l["key"]
				if k == "" {
					k = "-"
				}
				rd.counters["tok|"+k] += m.GetCounter().GetValue()
			case "sluice_budget_limit", "sluice_budget_remaining":
				if l["owner"] == "key" {
					rd.gauges["q"+name[len("sluice_budget_"):]+"|"+l["name"]+"|"+l["dimension"]] = m.GetGauge().GetValue()
				}
			case "sluice_eval_pass_rate":
				rd.gauges["eval|"+l["model"]+" "+l["provider"]+"/"+l["upstream_model"]] = m.GetGauge().GetValue()
			case "sluice_in_flight_requests":
				rd.gauges["in_flight|"+l["scope"]] = m.GetGauge().GetValue()
			case "sluice_concurrency_limit":
				rd.gauges["limit|"+l["scope"]] = m.GetGauge().GetValue()
			case "sluice_queue_depth":
				rd.gauges["queue|"+l["priority"]] = m.GetGauge().GetValue()
				rd.priorities = append(rd.priorities, l["priority"])
			case "sluice_queue_oldest_wait_seconds":
				rd.gauges["oldest"] = m.GetGauge().GetValue()
			case "sluice_breaker_state":
				p := l["provider"]
				addProvider(p)
				if i := int(m.GetGauge().GetValue()); i >= 0 && i < len(stateNames) {
					rd.states[p] = stateNames[i]
				}
			case "sluice_breaker_weight":
				rd.gauges["weight|"+l["provider"]] = m.GetGauge().GetValue()
			case "sluice_breaker_window_rate":
				rd.gauges["rate|"+l["provider"]+"|"+l["kind"]] = m.GetGauge().GetValue()
			}
		}
	}
	// Providers without a breaker still have a concurrency scope.
	for key := range rd.gauges {
		if p, ok := strings.CutPrefix(key, "limit|"); ok && p != "global" {
			addProvider(p)
		}
	}
	sort.Strings(rd.providers)
	return rd
}

func labels(m *dto.Metric) map[string]string {
	out := make(map[string]string, len(m.GetLabel()))
	for _, lp := range m.GetLabel() {
		out[lp.GetName()] = lp.GetValue()
	}
	return out
}

func (h *hist) add(p *dto.Histogram) {
	bs := p.GetBucket()
	if h.bounds == nil {
		h.bounds = make([]float64, len(bs))
		h.counts = make([]float64, len(bs))
		for i, b := range bs {
			h.bounds[i] = b.GetUpperBound()
		}
	}
	for i, b := range bs {
		if i < len(h.counts) {
			h.counts[i] += float64(b.GetCumulativeCount())
		}
	}
	h.total += float64(p.GetSampleCount())
}

// quantiles estimates p50, p95 and p99 of what was observed between old
// and now, interpolating linearly inside a bucket (as Prometheus's
// histogram_quantile does); past the last bound it answers that bound.
func quantiles(now, old hist) Quantiles {
	n := now.total - old.total
	if n <= 0 || len(now.bounds) == 0 {
		return Quantiles{}
	}
	delta := make([]float64, len(now.counts))
	for i := range now.counts {
		delta[i] = now.counts[i]
		if i < len(old.counts) {
			delta[i] -= old.counts[i]
		}
	}
	q := func(phi float64) float64 {
		rank := phi * n
		lower, below := 0.0, 0.0
		for i, c := range delta {
			if c >= rank {
				in := c - below
				frac := 1.0
				if in > 0 {
					frac = (rank - below) / in
				}
				return 1000 * (lower + (now.bounds[i]-lower)*frac)
			}
			lower, below = now.bounds[i], c
		}
		return 1000 * now.bounds[len(now.bounds)-1]
	}
	r := func(f float64) float64 { return math.Round(f*10) / 10 }
	return Quantiles{P50: r(q(0.5)), P95: r(q(0.95)), P99: r(q(0.99)), N: n}
}

// nearLimits is the keys with less than NearLimitShare of a per-minute
// budget left, the nearest first, at most MaxNearLimits.
func nearLimits(rd reading) []NearLimit {
	var out []NearLimit
	for k, limit := range rd.gauges {
		rest, ok := strings.CutPrefix(k, "qlimit|")
		i := strings.LastIndexByte(rest, '|')
		if !ok || limit <= 0 || i < 0 {
			continue
		}
		rem, ok := rd.gauges["qremaining|"+rest]
		if !ok || rem >= NearLimitShare*limit {
			continue
		}
		out = append(out, NearLimit{Key: rest[:i], Dimension: rest[i+1:], Limit: int64(limit), Remaining: int64(rem), Used: 1 - max(rem, 0)/limit})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Used != out[j].Used {
			return out[i].Used > out[j].Used
		}
		return out[i].Key+out[i].Dimension < out[j].Key+out[j].Dimension
	})
	if len(out) > MaxNearLimits {
		out = out[:MaxNearLimits]
	}
	return out
}
