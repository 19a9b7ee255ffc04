package loadgen

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/model/workload"
	"github.com/sluice-gw/sluice/internal/sim/scenario"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// DefaultMaxRequests bounds a run whose options give no cap, so that a
// typo in a rate cannot start millions of goroutines.
const DefaultMaxRequests = 1_000_000

// drainSlack is waited beyond patience for answers after the last
// arrival. It is real time, not scenario time, and so is not scaled: it
// is there for the network and the gateway's own bookkeeping.
const drainSlack = 5 * time.Second

// Options adjust a run. Zero values take the defaults.
type Options struct {
	// Target is the gateway's base URL, e.g. http://127.0.0.1:8080. A
	// trailing /v1 is accepted and dropped. Several, comma-separated,
	// are a fleet: attempts go to them in turn (round robin).
	Target string
	// TimeScale multiplies every time in the scenario (rate step times,
	// ramps, duration, patience, retry base and cap) and divides every
	// rate, so the same requests arrive in proportionally less time.
	// Default 1.
	TimeScale float64
	// RPSScale multiplies every rate. Default 1.
	RPSScale float64
	// Duration, when set, replaces the (scaled) scenario duration. It is
	// wall-clock time and is not itself scaled.
	Duration time.Duration
	// MaxRequests caps unique requests (default DefaultMaxRequests).
	MaxRequests int
	// Metrics, when set, is the gateway's Prometheus endpoint (its admin
	// /metrics). Its counters of hedges, retries, rescues and probes are
	// read before and after the run, and their growth is the report's
	// extra calls.
	Metrics string
	// Notes receives end-of-run notes (the request cap reached, generator
	// lag, extra calls that could not be read); nil sends them to
	// Progress.
	Notes io.Writer
	// Progress receives status lines: rewritten every second on a
	// terminal, appended every 5 s otherwise (nil: none).
	Progress io.Writer
	// CriticalKey is sent as the bearer key of the scenario's critical
	// requests: a gateway makes a request critical for its key, not for
	// its X-Sluice-Priority header. Without it, critical requests are
	// served as interactive.
	CriticalKey string
	// Policy, when set, names one of the scenario's policies: its clients
	// (retry and send_deadline, scenario.Clients.For) are the ones
	// replayed, its gateway config maps the models, and the row takes its
	// name. The gateway at the target must run the same policy (sluice
	// serve --config SCENARIO --policy NAME); nothing checks that it does.
	Policy string
	// QueuePoll, when positive, samples the queues into the row's
	// timeline (its peak queue columns) at this period of real time,
	// while requests are issued: the gateway's sluice_queue_depth at
	// Metrics, and the "waiting" of each of UpstreamStats. sluice load
	// polls every DefaultQueuePoll. Zero: no sampling.
	QueuePoll time.Duration
	// UpstreamStats are upstream servers' /stats URLs (a sluice mock's,
	// e.g. http://127.0.0.1:8000/stats); each may hold several,
	// comma-separated.
	UpstreamStats []string
}

// ConfigError is a problem with the options or the scenario that no run
// could get past, as opposed to something that went wrong while running.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// plan is the scenario's client side after scaling: everything the run
// needs, in wall-clock units.
type plan struct {
	name string
	seed uint64
	// streams are the scenario's traffic streams, the main one first
	// (scenario.Clients.All); perStream says the report breaks the row
	// down by them.
	streams     []*streamPlan
	perStream   bool
	duration    time.Duration
	maxRequests int
	// patience 0 means the clients wait for ever (up to drain).
	patience time.Duration
	abandon  bool
	// sendDeadline: each attempt tells the gateway the patience it has
	// left, in X-Sluice-Timeout (scenario clients.send_deadline).
	sendDeadline bool
	drain        time.Duration
	retry        workload.Retry
	// timeout is each attempt's own timeout (clients.timeout), scaled; 0
	// none. See attemptDeadline.
	timeout time.Duration
	// timeScale is Options.TimeScale, 1 when unset.
	timeScale float64
	// upstreamStats are Options.UpstreamStats, split and checked.
	upstreamStats []string
}

// attemptDeadline is scenario.Clients.AttemptDeadline in the run's
// wall-clock units: how long an attempt sent elapsed after its request's
// first attempt may take before the client hangs up, 0 for ever.
func (p *plan) attemptDeadline(elapsed time.Duration) time.Duration {
	c := scenario.Clients{Timeout: p.timeout, Patience: p.patience, Abandon: &p.abandon}
	return c.AttemptDeadline(elapsed)
}

// streamPlan is one traffic stream: its arrivals, classes and bodies,
// and the endpoint of its model's API.
type streamPlan struct {
	index   int
	name    string
	sched   workload.Schedule
	spacing workload.Spacing
	shares  workload.Mix
	// keyed: the stream's key has a class of its own, which its requests
	// take (class), whatever the shares.
	keyed bool
	class int
	// urls are the stream's endpoint at each target; next picks the
	// target of the next attempt, shared by every stream of the run.
	urls []string
	next *atomic.Uint64
	body *bodies
}

// url is the endpoint the next attempt goes to.
func (sp *streamPlan) url() string {
	if len(sp.urls) == 1 {
		return sp.urls[0]
	}
	return sp.urls[(sp.next.Add(1)-1)%uint64(len(sp.urls))]
}

func newPlan(f *scenario.File, o Options) (*plan, error) {
	bad := func(format string, a ...any) (*plan, error) {
		return nil, &ConfigError{fmt.Errorf(format, a...)}
	}
	if f == nil || f.Gateway == nil {
		return bad("no scenario")
	}
	ts, rs := o.TimeScale, o.RPSScale
	if ts == 0 {
		ts = 1
	}
	if rs == 0 {
		rs = 1
	}
	if !(ts > 0) || !(rs > 0) {
		return bad("time and rate scales must be positive, not %v and %v", ts, rs)
	}
	if o.Duration < 0 || o.MaxRequests < 0 {
		return bad("duration and max requests must not be negative")
	}
	bases, err := targetURLs(o.Target)
	if err != nil {
		return nil, &ConfigError{err}
	}
	stats, err := statsURLs(o.UpstreamStats)
	if err != nil {
		return nil, &ConfigError{err}
	}
	next := new(atomic.Uint64)
	s := f.Scenario
	c := s.Clients
	gw := f.Gateway
	name := s.Name
	if o.Policy != "" {
		pol, err := f.Policy(o.Policy)
		if err != nil {
			return nil, &ConfigError{fmt.Errorf("--policy: %w", err)}
		}
		if gw, err = f.PolicyConfig(pol); err != nil {
			return nil, &ConfigError{fmt.Errorf("--policy %s: %w", pol.Name, err)}
		}
		c, name = c.For(pol), pol.Name
	}
	scale := func(d time.Duration) time.Duration { return time.Duration(float64(d) * ts) }
	p := &plan{
		name:          name,
		seed:          s.Seed,
		perStream:     c.HasStreams(),
		duration:      scale(s.Duration),
		maxRequests:   o.MaxRequests,
		patience:      scale(c.Patience),
		abandon:       c.AbandonOnPatience(),
		sendDeadline:  c.SendsDeadline(),
		retry:         c.Retry.Policy(scale(c.Patience), ts),
		timeout:       scale(c.Timeout),
		timeScale:     ts,
		upstreamStats: stats,
	}
	for i, sc := range c.All() {
		sp, err := newStreamPlan(f, gw, sc, i, bases, next, rs, ts, o.CriticalKey)
		if err != nil {
			return nil, err
		}
		p.streams = append(p.streams, sp)
	}
	if p.name == "" {
		p.name = "load"
	}
	if o.Duration > 0 {
		p.duration = o.Duration
	}
	if p.maxRequests == 0 {
		p.maxRequests = DefaultMaxRequests
	}
	if p.duration <= 0 {
		return bad("duration must be positive")
	}
	// Without patience the gateway's own deadline is the longest anyone
	// waits, so that is what bounds the drain: time-scaled, as a gateway
	// serving a time-scaled run has it (sluice serve --time-scale,
	// checked in timescale.go).
	wait := p.patience
	if wait <= 0 {
		for _, sc := range c.All() {
			if m, ok := gw.Model(sc.Model); ok {
				wait = max(wait, scale(gw.Timeout(m)))
			}
		}
	}
	p.drain = wait + drainSlack
	return p, nil
}

// newStreamPlan resolves stream i: its model's API and endpoint (in gw,
// the gateway config of the policy run), and the key it sends. The main
// stream (i 0) draws from the sources the load generator always used;
// the others from their own, derived from the seed and i.
func newStreamPlan(f *scenario.File, gw *config.Config, c scenario.Clients, i int, bases []string, next *atomic.Uint64, rs, ts float64, criticalKey string) (*streamPlan, error) {
	bad := func(format string, a ...any) (*streamPlan, error) {
		return nil, &ConfigError{fmt.Errorf(format, a...)}
	}
	m, ok := gw.Model(c.Model)
	if !ok || len(m.Targets) == 0 {
		return bad("stream %s: model %q has no target in the gateway config", c.Name, c.Model)
	}
	prov, ok := gw.Provider(m.Targets[0].Provider)
	if !ok {
		return bad("model %q: provider %q is not in the gateway config", c.Model, m.Targets[0].Provider)
	}
	dialect, ok := protocol.ParseDialect(prov.Kind)
	if !ok {
		return bad("provider %q: kind %q has no client endpoint; want openai or anthropic", prov.Name, prov.Kind)
	}
	sp := &streamPlan{
		index:   i,
		name:    c.Name,
		sched:   c.Schedule(rs, ts),
		spacing: c.Spacing(),
		shares:  c.PriorityShares(),
		next:    next,
	}
	for _, b := range bases {
		sp.urls = append(sp.urls, b+endpointPath(dialect))
	}
	seed := f.Scenario.Seed
	if i > 0 {
		seed ^= uint64(i) * 0x9e3779b97f4a7c15
	}
	sp.body = newBodies(dialect, c, seed, criticalKey)
	if c.Key != "" {
		key, ok := f.Scenario.Keys[c.Key]
		if !ok {
			return bad("stream %s: sends key %q, but scenario.keys has no plaintext for it; add scenario.keys.%s: the test key whose SHA-256 is its keys[].sha256",
				c.Name, c.Key, c.Key)
		}
		sp.body.key = key
		for _, k := range gw.Keys {
			if k.Name == c.Key && k.Priority != "" {
				if pri, ok := admission.ParsePriority(k.Priority); ok {
					sp.keyed, sp.class = true, int(pri)
				}
			}
		}
	}
	return sp, nil
}

// targetURLs checks a comma-separated list of gateway base URLs.
func targetURLs(s string) ([]string, error) {
	var bases []string
	for t := range strings.SplitSeq(s, ",") {
		base, err := targetURL(strings.TrimSpace(t))
		if err != nil {
			return nil, err
		}
		bases = append(bases, base)
	}
	return bases, nil
}

// targetURL checks the gateway base URL and drops what the endpoint path
// will add again.
func targetURL(s string) (string, error) {
	if s == "" {
		return "", errors.New("--target is required, e.g. --target http://127.0.0.1:8080")
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("target %q: want an http(s) base URL such as http://127.0.0.1:8080", s)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("target %q: give the base URL only, without query or fragment", s)
	}
	return strings.TrimSuffix(strings.TrimRight(s, "/"), "/v1"), nil
}

// endpointPath is the chat route of a dialect, from the gateway's own
// route table so the two cannot drift apart.
func endpointPath(d protocol.Dialect) string {
	name := "chat_completions"
	if d == protocol.Anthropic {
		name = "messages"
	}
	for _, e := range protocol.Endpoints {
		if e.Name == name {
			return e.Path
		}
	}
	panic("loadgen: protocol has no " + name + " endpoint")
}

// priority picks a class from the shares with u uniform in [0, 1), or is
// the class of the stream's key.
func (p *streamPlan) priority(u float64) int {
	if p.keyed {
		return p.class
	}
	return p.shares.Class(u)
}

// arrivals is a stream's arrival times, from their own seeded source so
// that Poisson gaps do not depend on anything else the run draws.
func (p *plan) arrivals(sp *streamPlan) *workload.Arrivals {
	return workload.NewArrivals(sp.sched, p.duration, sp.spacing, rand.New(rand.NewPCG(p.seed+uint64(sp.index)*0x9e3779b97f4a7c15, 0xa4417a15)))
}

// picker is a stream's source of classes and prompts: its own, so that
// Poisson gaps stay the same whatever the priority mix.
func (p *plan) picker(sp *streamPlan) *rand.Rand {
	return rand.New(rand.NewPCG(p.seed+uint64(sp.index)*0xbf58476d1ce4e5b9, 0x9e10))
}

// target is the scheduled rate at elapsed wall time, all streams
// together, zero once issuing has stopped.
func (p *plan) target(elapsed time.Duration) float64 {
	if elapsed > p.duration {
		return 0
	}
	total := 0.0
	for _, sp := range p.streams {
		total += sp.sched.Rate(elapsed)
	}
	return total
}
