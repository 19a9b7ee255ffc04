// Package scenario reads a scenario file: a gateway configuration (the
// same schema sluice serve reads) plus a scenario: section describing the
// traffic, the upstreams' behaviour and the policies to compare. sluice
// sim runs it on a virtual clock; sluice load replays its traffic against
// a real gateway; sluice serve --config accepts the same file and ignores
// the scenario.
package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/config/upstreamscript"
	"github.com/sluice-gw/sluice/internal/model/upstream"
	"github.com/sluice-gw/sluice/internal/model/workload"
)

// File is a loaded scenario file.
type File struct {
	Path      string
	Gateway   *config.Config
	Scenario  Scenario
	raw       []byte
	upstreams map[string]upstream.Config
}

// The values of Scenario.TickRules.
const (
	TickExact = "exact"
	TickSeed  = "seed"
)

// SeedRules reports whether ticks are settled by seed 000's own rules.
func (s *Scenario) SeedRules() bool { return s.Tick > 0 && s.TickRules == TickSeed }

// Scenario is the scenario: section.
type Scenario struct {
	Name     string        `yaml:"name"`
	Seed     uint64        `yaml:"seed"`
	Duration time.Duration `yaml:"duration"`
	// Tick, when set, quantises the simulated clock the way a tick
	// simulation does: each tick settles calls in flight, then admits
	// arrivals, then checks the memory budget.
	Tick time.Duration `yaml:"tick"`
	// TickRules picks how a tick is settled: "exact" (the default) or
	// "seed", seed 000's own loop in three details: arrivals carried
	// between ticks as the seed's float sum (which may slip one to the
	// next tick), the calls of a tick settled one at a time in arrival
	// order (an answer before a later call's slow flag, and after an
	// earlier call's), and a concurrency limit's state kept across a
	// crash. See docs/SIMULATOR.md.
	TickRules string `yaml:"tick_rules"`
	// Drain, when set, lets the requests in flight at the end finish and
	// counts them, as sluice load does. By default they are not counted,
	// as in seed 000's simulation.
	Drain   bool    `yaml:"drain"`
	Clients Clients `yaml:"clients"`
	// Upstreams is each provider's behaviour in sluice mock's script
	// format; read it through File.Upstream.
	Upstreams map[string]yaml.Node `yaml:"upstreams"`
	Process   *Process             `yaml:"process"`
	// Policies are variants of the gateway config, one table row each.
	// Empty means one row for the gateway config as written.
	Policies []Policy `yaml:"policies"`
	// Keys holds the plaintext of the gateway's virtual keys (keys[] by
	// name), which the gateway config holds only as SHA-256 hashes:
	// sluice load sends them. They must be test keys, never real ones;
	// each must hash to its keys[].sha256. The simulator needs none.
	Keys map[string]string `yaml:"keys"`
	// Reference names a source article whose table the run is printed
	// next to, minute by minute: only "seed-002" (its vLLM ramp).
	Reference string `yaml:"reference"`
	// Fleet runs several replicas of the gateway behind a load balancer;
	// see Fleet. Absent: one replica, as sluice serve runs alone.
	Fleet Fleet `yaml:"fleet"`
}

// Clients describes the traffic: its main stream, and the settings
// every stream shares (patience, abandon, deadlines, retries, stream).
type Clients struct {
	// Name names the main stream in reports (default "main").
	Name string `yaml:"name"`
	// Key names the keys[] entry of the gateway config whose key the
	// main stream's requests carry (default: none). A key with a
	// priority sets its requests' class; otherwise the class drawn from
	// priorities applies, never above admission.default_priority, as the
	// gateway treats a key's header.
	Key string `yaml:"key"`
	// Streams are further independent traffic streams (tenants, kinds
	// of work), each with its own arrivals and random draws: see Stream.
	Streams []Stream `yaml:"streams"`
	// Model is the client-facing model every request names.
	Model string     `yaml:"model"`
	Rate  []RateStep `yaml:"rate"`
	// Arrivals is "even" (the default: evenly spaced) or "poisson". Both
	// run up to the end of the duration inclusive; see package workload.
	Arrivals string `yaml:"arrivals"`
	// Priorities maps class names to shares of the traffic (default all
	// interactive).
	Priorities   map[string]float64  `yaml:"priorities"`
	PromptTokens upstream.TokenRange `yaml:"prompt_tokens"`
	// MaxTokens is the max_tokens each request asks for (0: none).
	MaxTokens int  `yaml:"max_tokens"`
	Stream    bool `yaml:"stream"`
	// Patience is how long a user waits; an answer after it is late, and
	// no retry goes out after it, whether or not the client abandons.
	Patience time.Duration `yaml:"patience"`
	// Abandon: the client disconnects when patience runs out (default
	// true). Seed 000's users wait; real clients usually do not.
	Abandon *bool `yaml:"abandon"`
	// SendDeadline: a client that abandons at patience tells the gateway
	// how long it has left with each attempt (X-Sluice-Timeout), as the
	// official SDKs send their timeout as X-Stainless-Timeout (default
	// true). With it the gateway stops waiting on an answer that cannot
	// come in time. Clients that wait have no deadline to send.
	SendDeadline *bool `yaml:"send_deadline"`
	// Timeout is each attempt's own patience, as an SDK's request
	// timeout: an attempt with no first token by then is abandoned and,
	// like a lost connection, retried under retry, the next attempt with
	// a timeout of its own (seed 002's clients). Once the first token has
	// come the attempt is no longer timed. Zero: attempts are bounded by
	// patience alone.
	Timeout time.Duration `yaml:"timeout"`
	Retry   Retry         `yaml:"retry"`
}

// Stream is one more traffic stream. Name and Key are its own (a stream
// without a key sends none); each other field, when set, overrides the
// main stream's; patience, abandon, send_deadline, retry and stream are
// always the clients' own.
type Stream struct {
	Name         string              `yaml:"name"`
	Key          string              `yaml:"key"`
	Model        string              `yaml:"model"`
	Rate         []RateStep          `yaml:"rate"`
	Arrivals     string              `yaml:"arrivals"`
	Priorities   map[string]float64  `yaml:"priorities"`
	PromptTokens upstream.TokenRange `yaml:"prompt_tokens"`
	MaxTokens    *int                `yaml:"max_tokens"`
}

// MainStream is the main stream's name when clients.name is not set.
const MainStream = "main"

// DefaultPromptTokens is a request's prompt length when prompt_tokens is
// not set: short, like a chat turn.
const DefaultPromptTokens = 16

// All returns every stream as a Clients of its own, with its overrides
// applied and no streams: the main stream first (named), then the
// others in file order. Every host runs the streams from here.
func (c Clients) All() []Clients {
	main := c
	main.Streams = nil
	if main.Name == "" {
		main.Name = MainStream
	}
	out := []Clients{main}
	for _, s := range c.Streams {
		x := main
		x.Name, x.Key = s.Name, s.Key
		if s.Model != "" {
			x.Model = s.Model
		}
		if len(s.Rate) > 0 {
			x.Rate = s.Rate
		}
		if s.Arrivals != "" {
			x.Arrivals = s.Arrivals
		}
		if s.Priorities != nil {
			x.Priorities = s.Priorities
		}
		if s.PromptTokens != (upstream.TokenRange{}) {
			x.PromptTokens = s.PromptTokens
		}
		if s.MaxTokens != nil {
			x.MaxTokens = *s.MaxTokens
		}
		out = append(out, x)
	}
	return out
}

// Prompt is the draw of prompt lengths, uniform over the prompt_tokens
// given (Max 0 meaning exactly Min), or DefaultPromptTokens: the same
// draw in sluice sim and sluice load.
func (c Clients) Prompt() workload.Sizes {
	r := c.PromptTokens
	if r == (upstream.TokenRange{}) {
		r = upstream.TokenRange{Min: DefaultPromptTokens}
	}
	if r.Max < r.Min {
		r.Max = r.Min
	}
	return r.Sizes()
}

// RateStep sets the arrival rate from At on (At itself included). With
// Ramp, the rate moves linearly to RPS over Ramp from the rate in force at
// At: the previous step's rate, or, when the previous step's ramp is still
// under way, wherever it stands, since a step cuts short a ramp it
// interrupts. Before the first step the rate is zero; the last step's
// rate holds to the end.
type RateStep struct {
	At   time.Duration `yaml:"at"`
	RPS  float64       `yaml:"rps"`
	Ramp time.Duration `yaml:"ramp"`
}

// Retry is the clients' retry behaviour on a shed, 429/5xx or error.
type Retry struct {
	// Strategy is "none" (default), "immediate", "backoff" (exponential,
	// no jitter), "jittered" (exponential with full jitter, drawn from
	// [0, base·2^(n−1) capped], honouring Retry-After) or "sluice" (the
	// client package: Retry-After or full jitter, a retry budget and
	// adaptive throttling, see workload.Governor). Clients retry a
	// shed, a 429, a 5xx other than 504 or a lost connection, never an
	// answer that has started; see workload.Retry.
	Strategy    string        `yaml:"strategy"`
	MaxAttempts int           `yaml:"max_attempts"` // total, first included (default 3)
	Base        time.Duration `yaml:"base"`         // default 500ms
	Cap         time.Duration `yaml:"cap"`          // default 30s
}

// Process is the gateway process's memory budget, as in seed 000: each
// request held costs memory, and past the budget the process crashes,
// loses everything it holds and refuses arrivals until it restarts.
type Process struct {
	MemoryMB     float64       `yaml:"memory_mb"`
	MBPerRequest float64       `yaml:"mb_per_request"`
	Restart      time.Duration `yaml:"restart"`
}

// Policy is a named overlay on the gateway config.
type Policy struct {
	Name string `yaml:"name"`
	// Gateway is merged onto the file's gateway config: mappings merge
	// key by key, list items with a name merge with the item of that
	// name, other lists replace.
	Gateway yaml.Node `yaml:"gateway"`
	// Retry and SendDeadline, when set, replace the clients' for this
	// policy: a policy is the gateway and the clients that call it
	// (sluice load --policy NAME runs them too).
	Retry        *Retry `yaml:"retry"`
	SendDeadline *bool  `yaml:"send_deadline"`
}

// For returns the clients as policy p runs them: its retry and
// send_deadline in place of the clients' own, when it sets them.
func (c Clients) For(p Policy) Clients {
	if p.Retry != nil {
		c.Retry = *p.Retry
	}
	if p.SendDeadline != nil {
		c.SendDeadline = p.SendDeadline
	}
	return c
}

// Policy returns the policy named name.
func (f *File) Policy(name string) (Policy, error) {
	var names []string
	for _, p := range f.Scenario.Policies {
		if p.Name == name {
			return p, nil
		}
		names = append(names, fmt.Sprintf("%q", p.Name))
	}
	if len(names) == 0 {
		return Policy{}, fmt.Errorf("%s has no policies; drop --policy", f.Path)
	}
	return Policy{}, fmt.Errorf("%s has no policy %q; it has %s", f.Path, name, strings.Join(names, ", "))
}

// AbandonOnPatience reports whether clients disconnect at patience.
func (c Clients) AbandonOnPatience() bool { return c.Abandon == nil || *c.Abandon }

// SendsDeadline reports whether each attempt tells the gateway the
// client's remaining patience.
func (c Clients) SendsDeadline() bool {
	timed := c.Timeout > 0 || (c.Patience > 0 && c.AbandonOnPatience())
	return timed && (c.SendDeadline == nil || *c.SendDeadline)
}

// AttemptDeadline is how long an attempt sent at elapsed (since the
// request's first attempt) may take: its own timeout, cut to the
// patience left when clients abandon at patience. 0: unbounded.
func (c Clients) AttemptDeadline(elapsed time.Duration) time.Duration {
	d := c.Timeout
	if c.Patience > 0 && c.AbandonOnPatience() {
		left := c.Patience - elapsed
		if d == 0 || left < d {
			d = left
		}
	}
	return d
}

// Load reads and validates a scenario file.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data, path)
}

// Seed002 is the reference name of seed 002's vLLM ramp.
const Seed002 = "seed-002"

// Parse reads a scenario file's bytes.
func Parse(data []byte, path string) (*File, error) {
	gw, err := config.Parse(data, path)
	if err != nil {
		return nil, err
	}
	f := &File{Path: path, Gateway: gw, raw: data}
	node := gw.Scenario.Node
	if node == nil {
		return nil, fmt.Errorf("%s: no scenario: section; add one with clients, upstreams and duration", path)
	}
	if err := decodeStrict(node, &f.Scenario); err != nil {
		return nil, fmt.Errorf("%s: scenario: %w", path, err)
	}
	if err := f.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// decodeStrict decodes a node rejecting unknown keys.
func decodeStrict(n *yaml.Node, v any) error {
	b, err := yaml.Marshal(n)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	return dec.Decode(v)
}

func (f *File) validate() error {
	s := &f.Scenario
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("scenario."+format, a...)) }
	if s.Duration <= 0 {
		bad("duration: must be positive, e.g. 180s")
	}
	if s.Tick < 0 {
		bad("tick: must not be negative")
	}
	switch s.TickRules {
	case "", TickExact:
	case TickSeed:
		if s.Tick == 0 {
			bad("tick_rules: seed needs a tick, e.g. tick: 100ms")
		}
	default:
		bad("tick_rules: %q; use %q (the default) or %q", s.TickRules, TickExact, TickSeed)
	}
	if s.Clients.Timeout < 0 {
		bad("clients.timeout: must not be negative")
	}
	if s.Reference != "" && s.Reference != Seed002 {
		bad("reference: %q; the only reference table is %q", s.Reference, Seed002)
	}
	c := &s.Clients
	if len(c.Rate) == 0 {
		bad("clients.rate: give at least one step, e.g. [{at: 0s, rps: 20}]")
	}
	f.validateStreams(bad)
	checkRetry := func(at string, r Retry) {
		if _, ok := workload.ParseStrategy(r.Strategy); !ok {
			bad("%s.strategy: %q; use none, immediate, backoff, jittered or sluice", at, r.Strategy)
		}
	}
	checkRetry("clients.retry", c.Retry)
	for i, p := range s.Policies {
		if p.Retry != nil {
			checkRetry(fmt.Sprintf("policies[%d].retry", i), *p.Retry)
		}
	}
	f.upstreams = map[string]upstream.Config{}
	// The upstreams to model: each provider, or each replica of a pool
	// (named as config.Replica.Name says).
	known := map[string]bool{}
	addKnown := func(ps []config.Provider) {
		for _, p := range ps {
			if !p.Pooled() {
				known[p.Name] = true
			}
			for _, r := range p.Replicas {
				known[r.Name] = true
			}
		}
	}
	addKnown(f.Gateway.Providers)
	for _, p := range s.Policies {
		if cfg, err := f.PolicyConfig(p); err == nil {
			addKnown(cfg.Providers)
		}
	}
	for name := range s.Upstreams {
		if !known[name] {
			bad("upstreams.%s: not a provider of the gateway config or of any policy", name)
		}
		u, err := upstreamscript.ScenarioUpstream(f.raw, name)
		if err != nil {
			errs = append(errs, err)
		}
		f.upstreams[name] = u
	}
	names := make([]string, 0, len(known))
	for n := range known {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if _, ok := s.Upstreams[n]; !ok {
			bad("upstreams: provider %q has no behaviour; add upstreams.%s", n, n)
		}
	}
	s.Fleet.validate(s.Duration, bad)
	if p := s.Process; p != nil && (p.MemoryMB <= 0 || p.MBPerRequest <= 0 || p.Restart < 0) {
		bad("process: memory_mb and mb_per_request must be positive")
	}
	seen := map[string]bool{}
	for i, p := range s.Policies {
		if p.Name == "" || seen[p.Name] {
			bad("policies[%d].name: give each policy a unique name", i)
		}
		seen[p.Name] = true
		if _, err := f.PolicyConfig(p); err != nil {
			errs = append(errs, fmt.Errorf("scenario.policies[%d] (%s): %w", i, p.Name, err))
		}
	}
	return errors.Join(errs...)
}

// Upstream returns a provider's behaviour exactly as sluice mock
// --scenario FILE --provider NAME would play it: the mock's defaults under
// the scenario's settings, and the same derived seed.
func (f *File) Upstream(provider string) upstream.Config { return f.upstreams[provider] }

// PriorityShares returns the priority mix in class order, defaulting to
// all interactive.
func (c Clients) PriorityShares() workload.Mix {
	if len(c.Priorities) == 0 {
		return workload.Mix{0, 1, 0}
	}
	var out workload.Mix
	names := make([]string, 0, len(c.Priorities))
	for n := range c.Priorities {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		switch n {
		case "critical":
			out[0] = c.Priorities[n]
		case "interactive":
			out[1] = c.Priorities[n]
		case "background":
			out[2] = c.Priorities[n]
		}
	}
	return out
}
