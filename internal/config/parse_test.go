package config

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// allErrors flattens what Parse returns into its *Error parts.
func allErrors(t *testing.T, err error) []*Error {
	t.Helper()
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	var out []*Error
	for _, e := range errs {
		var ce *Error
		if !errors.As(e, &ce) {
			t.Fatalf("error %q is %T, not *Error", e, e)
		}
		out = append(out, ce)
	}
	return out
}

func mustLoad(t *testing.T, path string) *Config {
	t.Helper()
	c, err := Load(path)
	if err != nil {
		t.Fatalf("Load(%s): %v", path, err)
	}
	return c
}

func TestValidFullConfig(t *testing.T) {
	c := mustLoad(t, "testdata/valid_full.yaml")
	c.src = nil
	want := Config{
		Listen:       "0.0.0.0:8000",
		AdminListen:  "127.0.0.1:9100",
		MaxBodyBytes: 512 << 10,
		Server: Server{MaxConnections: DefaultMaxConnections, MaxHeaderBytes: DefaultMaxHeaderBytes, MaxHeaders: DefaultMaxHeaders,
			MaxBodyBytesInFlight: DefaultMaxBodyBytesInFlight, ReadHeaderTimeout: Duration(DefaultReadHeaderTimeout),
			BodyReadTimeout: Duration(DefaultBodyReadTimeout), WriteTimeout: Duration(DefaultWriteTimeout),
			StreamIdleTimeout: Duration(DefaultStreamIdleTimeout), IdleTimeout: Duration(DefaultIdleTimeout),
			DrainDelay: Duration(DefaultDrainDelay), ShutdownGrace: Duration(DefaultShutdownGrace),
			MaxMessages: DefaultMaxMessages, MaxJSONDepth: DefaultMaxJSONDepth},
		Log: Log{Format: "json", Level: "debug"},
		Providers: []Provider{
			{Name: "openai", Kind: "openai", BaseURL: "https://api.openai.com/v1", APIKeyEnv: "OPENAI_API_KEY",
				Timeout: Duration(90 * time.Second), MaxInFlight: 10, Breaker: &Breaker{Probe: ProbeSynthetic}},
			{Name: "anthropic", Kind: "anthropic", BaseURL: "https://api.anthropic.com/v1", APIKeyEnv: "ANTHROPIC_API_KEY",
				Timeout: Duration(45 * time.Second), Breaker: &Breaker{Probe: ProbeSynthetic}},
		},
		Models: []Model{
			{Name: "gpt-4o", Timeout: Duration(20 * time.Second), Targets: []Target{
				{Provider: "openai", Model: "gpt-4o"}, {Provider: "openai", Model: "gpt-4o-mini"}},
				Validation: Validation{OnInvalid: OnInvalidAnnotate}},
			{Name: "1.10", Targets: []Target{{Provider: "anthropic", Model: "claude-haiku"}},
				Validation: Validation{OnInvalid: OnInvalidAnnotate}},
		},
		Hedging:    Budget{Budget: DefaultHedgeBudget, Burst: DefaultHedgeBurst},
		FirstToken: FirstToken{Ceiling: DefaultFirstTokenCeiling, Floor: DefaultFirstTokenFloor, Factor: DefaultFirstTokenFactor},
		Retries:    Retries{Budget: DefaultRetryBudget, Burst: DefaultHedgeBurst},
		Idempotency: Idempotency{TTL: Duration(DefaultIdempotencyTTL), MaxEntries: DefaultIdempotencyMaxEntries,
			MaxBytes: DefaultIdempotencyMaxBytes, MaxResponseBytes: DefaultIdempotencyMaxResponseBytes},
		Cache:   Cache{MaxBytes: DefaultCacheMaxBytes, MaxEntryBytes: DefaultCacheMaxEntryBytes},
		Tracing: Tracing{SampleRatio: 1, ParentSampledPerSecond: 100, ServiceName: "sluice"},
		Admission: Admission{
			MaxInFlight:     32,
			Queue:           Queue{MaxDepth: 40, MaxWait: Duration(2500 * time.Millisecond)},
			DefaultPriority: "background",
			Priorities: Priorities{
				Critical:    Class{Reserved: 2, MaxQueued: 5},
				Interactive: Class{MaxQueued: 30},
				Background:  Class{MaxQueued: 10},
			},
		},
	}
	if !reflect.DeepEqual(*c, want) {
		t.Fatalf("got\n%+v\nwant\n%+v", *c, want)
	}
}

func TestDefaults(t *testing.T) {
	c := mustLoad(t, "testdata/minimal.yaml")
	a := c.Admission
	checks := []struct {
		name      string
		got, want any
	}{
		{"listen", c.Listen, "127.0.0.1:8080"},
		{"admin_listen", c.AdminListen, "127.0.0.1:9090"},
		{"max_body_bytes", c.MaxBodyBytes.Int64(), int64(10 << 20)},
		{"log.format", c.Log.Format, "text"},
		{"log.level", c.Log.Level, "info"},
		{"providers[0].timeout", c.Providers[0].Timeout.D(), 60 * time.Second},
		{"admission.max_in_flight", a.MaxInFlight, 256},
		{"admission.queue.max_depth", a.Queue.MaxDepth, 150},
		{"admission.queue.max_wait", a.Queue.MaxWait.D(), 5 * time.Second},
		{"admission.default_priority", a.DefaultPriority, "interactive"},
	}
	for _, ck := range checks {
		if ck.got != ck.want {
			t.Errorf("%s = %v, want %v", ck.name, ck.got, ck.want)
		}
	}
}

// An explicit zero is a choice, not a gap: max_depth: 0 turns the queue off.
func TestExplicitZeroKept(t *testing.T) {
	base, err := os.ReadFile("testdata/minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse(append(base, "admission:\n  queue:\n    max_depth: 0\n    max_wait: ~\n"...), "z.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Admission.Queue.MaxDepth != 0 {
		t.Errorf("max_depth = %d, want the explicit 0", c.Admission.Queue.MaxDepth)
	}
	if c.Admission.Queue.MaxWait.D() != 5*time.Second {
		t.Errorf("max_wait: ~ should mean unset, got %v", c.Admission.Queue.MaxWait)
	}
}

func TestAnchorsAndMergeKeys(t *testing.T) {
	c := mustLoad(t, "testdata/anchors.yaml")
	b, _ := c.Provider("b")
	if b.Kind != "openai" || b.Timeout.D() != 10*time.Second || b.BaseURL != "http://b.example/v1" {
		t.Errorf("merged provider b = %+v", *b)
	}
	cp, _ := c.Provider("c")
	if cp.BaseURL != "http://a.example/v1" || cp.Timeout.D() != 30*time.Second {
		t.Errorf("merged provider c = %+v", *cp)
	}
	n, _ := c.Model("n")
	if len(n.Targets) != 2 || n.Targets[1].Provider != "b" {
		t.Errorf("aliased targets = %+v", n.Targets)
	}
}

func TestEmbeddedDefault(t *testing.T) {
	c := Default("http://127.0.0.1:4321/")
	if len(c.Providers) != 2 || len(c.Models) != 3 {
		t.Fatalf("default config has %d providers, %d models", len(c.Providers), len(c.Models))
	}
	for _, p := range c.Providers {
		if p.BaseURL != "http://127.0.0.1:4321/v1" || p.APIKeyEnv != "" || p.MaxInFlight != 64 || p.Timeout.D() != time.Minute {
			t.Errorf("provider %+v", p)
		}
	}
	routes := map[string][2]string{
		"mock-gpt":    {"mock-openai", "mock-gpt-4o"},
		"mock-embed":  {"mock-openai", "mock-embedding"},
		"mock-claude": {"mock-anthropic", "mock-claude-sonnet"},
	}
	for name, want := range routes {
		m, ok := c.Model(name)
		if !ok || len(m.Targets) != 1 || m.Targets[0] != (Target{Provider: want[0], Model: want[1]}) {
			t.Errorf("model %s = %+v", name, m)
		}
	}
	if p, _ := c.Provider("mock-anthropic"); p.Kind != KindAnthropic {
		t.Errorf("mock-anthropic kind = %q", p.Kind)
	}
	a := c.Admission
	if a.MaxInFlight != 128 || a.Queue.MaxDepth != 150 || a.Queue.MaxWait.D() != 5*time.Second ||
		a.DefaultPriority != "interactive" || a.Priorities.Critical.Reserved != 5 ||
		a.Priorities.Interactive.MaxQueued != 120 || a.Priorities.Background.MaxQueued != 25 {
		t.Errorf("admission = %+v", a)
	}
}

func TestExampleConfig(t *testing.T) {
	c := mustLoad(t, "../../examples/sluice.yaml")
	for _, name := range []string{"openai", "anthropic", "vllm"} {
		if _, ok := c.Provider(name); !ok {
			t.Errorf("example lacks provider %s", name)
		}
	}
	multi := false
	for _, m := range c.Models {
		multi = multi || len(m.Targets) > 1
		// Traffic fails over only past a breaker: a chain whose primary
		// has none would only ever retry.
		if p, _ := c.Provider(m.Targets[0].Provider); len(m.Targets) > 1 && p.Breaker == nil {
			t.Errorf("model %s has a failover chain but its primary %s has no breaker", m.Name, p.Name)
		}
	}
	if !multi {
		t.Error("example has no model with a failover chain")
	}
	pr := c.Admission.Priorities
	if pr.Critical.Reserved != 5 || pr.Interactive.MaxQueued != 120 || pr.Background.MaxQueued != 25 {
		t.Errorf("example budget = %+v, want 5/120/25", pr)
	}
}

func TestHelpers(t *testing.T) {
	c := mustLoad(t, "testdata/valid_full.yaml")
	if _, ok := c.Provider("nope"); ok {
		t.Error("Provider found a missing name")
	}
	if _, ok := c.Model("nope"); ok {
		t.Error("Model found a missing name")
	}
	p, _ := c.Provider("openai")
	t.Setenv("OPENAI_API_KEY", "sk-test")
	if p.APIKey() != "sk-test" {
		t.Errorf("APIKey() = %q", p.APIKey())
	}
	if (&Provider{}).APIKey() != "" {
		t.Error("a provider with no api_key_env has a key")
	}
	withOwn, _ := c.Model("gpt-4o")
	inherits, _ := c.Model("1.10")
	for _, tt := range []struct {
		m    *Model
		want time.Duration
	}{
		{withOwn, 20 * time.Second},
		{inherits, 45 * time.Second}, // anthropic's
		{&Model{Targets: []Target{{Provider: "gone"}}}, DefaultProviderTimeout},
		{nil, DefaultProviderTimeout},
	} {
		if got := c.Timeout(tt.m); got != tt.want {
			t.Errorf("Timeout(%+v) = %v, want %v", tt.m, got, tt.want)
		}
	}
}

func TestErrorFormat(t *testing.T) {
	for _, tt := range []struct {
		e    Error
		want string
	}{
		{Error{"s.yaml", 12, "providers[1].timeout", "bad"}, "s.yaml:12: providers[1].timeout: bad"},
		{Error{"s.yaml", 0, "providers", "bad"}, "s.yaml: providers: bad"},
		{Error{"", 3, "", "bad"}, "line 3: bad"},
		{Error{"", 0, "x", "bad"}, "x: bad"},
	} {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load("testdata/does-not-exist.yaml")
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "does-not-exist.yaml") {
		t.Fatalf("err = %v", err)
	}
}

func TestValidateCodeBuilt(t *testing.T) {
	c := Default("http://127.0.0.1:1")
	c.src = nil
	if err := c.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	c.Providers[0].Timeout = 0
	err := c.Validate()
	if err == nil || err.Error() != "providers[0].timeout: must be positive; write e.g. 60s, or remove it for the default of 1m0s" {
		t.Fatalf("err = %v", err)
	}
}

func TestWarnings(t *testing.T) {
	if w := mustLoad(t, "../../examples/sluice.yaml").Warnings(); len(w) != 0 {
		t.Errorf("the example config warns: %q", w)
	}
	c := mustLoad(t, "../../examples/sluice.yaml")
	vllm, _ := c.Provider("vllm")
	vllm.Breaker = nil
	openai, _ := c.Provider("openai")
	openai.Breaker.Probe = ProbeTraffic
	w := c.Warnings()
	if len(w) != 2 || !strings.Contains(w[0], "model chat-default: provider vllm has breaker: off") ||
		!strings.Contains(w[1], "provider openai: it alone serves a model") || !strings.Contains(w[1], "set it to synthetic") {
		t.Errorf("warnings:\n%s", strings.Join(w, "\n"))
	}
}

// Every provider has a breaker unless the file says off, probing with the
// gateway's own calls unless it says traffic.
func TestBreakerOnByDefault(t *testing.T) {
	const head = `
providers:
  - {name: a, kind: openai, base_url: "http://127.0.0.1:1/v1"%s}
  - {name: b, kind: openai, base_url: "http://127.0.0.1:2/v1"}
models:
  - {name: solo, targets: [{provider: a, model: m}]}
  - {name: chain, targets: [{provider: b, model: m}, {provider: a, model: m}]}
`
	for _, tc := range []struct {
		breaker string
		want    *Breaker
	}{
		{"", &Breaker{Probe: ProbeSynthetic}},
		{", breaker: {}", &Breaker{Probe: ProbeSynthetic}},
		{", breaker: on", &Breaker{Probe: ProbeSynthetic}},
		{", breaker: {probe: traffic}", &Breaker{Probe: ProbeTraffic}},
		{", breaker: off", nil},
		{", breaker: false", nil},
		{", breaker: Off", nil},
	} {
		c, err := Parse([]byte(fmt.Sprintf(head, tc.breaker)), "b.yaml")
		if err != nil {
			t.Fatalf("%q: %v", tc.breaker, err)
		}
		a, _ := c.Provider("a")
		if !reflect.DeepEqual(a.Breaker, tc.want) {
			t.Errorf("%q: breaker = %+v, want %+v", tc.breaker, a.Breaker, tc.want)
		}
		if b, _ := c.Provider("b"); b.Breaker == nil || b.Breaker.Probe != ProbeSynthetic {
			t.Errorf("%q: provider b breaker = %+v, want the default breaker", tc.breaker, b.Breaker)
		}
	}
	_, err := Parse([]byte(fmt.Sprintf(head, ", breaker: sometimes")), "b.yaml")
	if err == nil || !strings.Contains(err.Error(), `providers[0].breaker: want a mapping of fields, or off, got string "sometimes"; valid fields are window,`) {
		t.Errorf("err = %v", err)
	}
}

// The global limit defaults to the providers' own declared limits when
// they add up to more than the default.
func TestDefaultGlobalLimitFollowsProviders(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{", max_in_flight: 200", ", max_in_flight: 300", 500},
		{", max_in_flight: 100", ", max_in_flight: 100", DefaultMaxInFlight},
		{", max_in_flight: 1000", "", DefaultMaxInFlight}, // b unlimited: no sum to take
	} {
		c, err := Parse([]byte(fmt.Sprintf(`
providers:
  - {name: a, kind: openai, base_url: "http://127.0.0.1:1/v1"%s}
  - {name: b, kind: openai, base_url: "http://127.0.0.1:2/v1"%s}
models:
  - {name: m, targets: [{provider: a, model: m}, {provider: b, model: m}]}
`, tc.a, tc.b)), "g.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Admission.MaxInFlight; got != tc.want {
			t.Errorf("providers %q %q: admission.max_in_flight = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
