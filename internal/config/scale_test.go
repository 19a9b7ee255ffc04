package config

import (
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// scaledDurations are the durations Scaled multiplies, by path. With
// Unscaled they must name every Duration in Config: a new one makes
// TestScaledClassifiesEveryDuration fail until it is put in one list or
// the other (and, if the engine reads it, scaled there too).
var scaledDurations = []string{
	"server.stream_idle_timeout",
	"server.stream_stall_timeout",
	"server.stream_stall_floor",
	"providers[].timeout",
	"first_token.ceiling",
	"first_token.floor",
	"models[].first_token_ceiling",
	"providers[].pool.scrape_interval",
	"providers[].pool.stale_after",
	"providers[].limit.slow_threshold",
	"providers[].limit.window",
	"providers[].limit.cooldown",
	"providers[].limit.latency_threshold",
	"providers[].limit.queue_age_threshold",
	"providers[].breaker.window",
	"providers[].breaker.slow_threshold",
	"providers[].breaker.open_for",
	"providers[].breaker.open_for_max",
	"providers[].breaker.probe_timeout",
	"providers[].breaker.probe_interval",
	"providers[].breaker.step_hold",
	"providers[].limits.burst",
	"providers[].limits.token_burst",
	"providers[].model_limits[].burst",
	"providers[].model_limits[].token_burst",
	"models[].timeout",
	"models[].hedge_after.fixed",
	"models[].degrade.queue_age",
	// A replay t times as fast ages its cached answers t times as fast:
	// the repeats a scenario draws find the entries a real run would.
	"models[].cache.ttl",
	"models[].cache.stale_if_error",
	// A replay t times as fast runs the evals t times as often.
	"models[].evals.interval",
	"models[].evals.timeout",
	"admission.queue.max_wait",
	// A hold waits for a probe, whose interval and timeout scale.
	"admission.queue.hold_budget",
	"retries.wait_max",
	"keys[].limits.burst",
	"keys[].limits.token_burst",
	"lanes.large_context.max_wait",
	"lanes.large_context.limits.burst",
	"lanes.large_context.limits.token_burst",
	"lanes.batch.max_wait",
	// How long a stored answer is replayed: a client's retry comes
	// within the scenario's time of its first call.
	"idempotency.ttl",
}

// durationPaths lists every Duration reachable in t, by path.
func durationPaths(t reflect.Type, path string, out *[]string) {
	switch {
	case t == durationType:
		*out = append(*out, path)
		return
	case t == rawNodeType:
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() {
				durationPaths(f.Type, fieldPath(path, yamlName(f)), out)
			}
		}
	case reflect.Pointer:
		durationPaths(t.Elem(), path, out)
	case reflect.Slice, reflect.Map:
		durationPaths(t.Elem(), path+"[]", out)
	}
}

func TestScaledClassifiesEveryDuration(t *testing.T) {
	var all []string
	durationPaths(reflect.TypeFor[Config](), "", &all)
	known := append(slices.Clone(scaledDurations), Unscaled...)
	for _, p := range all {
		if !slices.Contains(known, p) {
			t.Errorf("%s is a Duration that neither scaledDurations nor Unscaled names: decide whether a time-scaled replay scales it", p)
		}
	}
	for _, p := range Unscaled {
		if slices.Contains(scaledDurations, p) {
			t.Errorf("%s is both scaled and Unscaled", p)
		}
	}
	for _, p := range known {
		if !slices.Contains(all, p) {
			t.Errorf("%s is listed but is not a Duration in Config any more", p)
		}
	}
}

// TestLimitsFieldsAreKnown: Scaled treats Limits field by field; a new
// field needs a rule.
func TestLimitsFieldsAreKnown(t *testing.T) {
	var names []string
	for i := range limitsType.NumField() {
		names = append(names, yamlName(limitsType.Field(i)))
	}
	sort.Strings(names)
	if want := []string{"burst", "itpm", "otpm", "rpm", "token_burst"}; !slices.Equal(names, want) {
		t.Errorf("Limits has fields %v, Scaled knows %v: teach scaler.limits the new one", names, want)
	}
}

// fill sets every exported field reachable from v to a non-zero value
// (slices and maps get two entries), so a test sees what Scaled changes.
// Durations are even whole seconds and rates even, so halving and
// doubling are exact.
func fill(t *testing.T, v reflect.Value, n *int) {
	*n++
	switch v.Type() {
	case durationType:
		v.SetInt(int64(2**n) * int64(time.Second))
		return
	case rawNodeType:
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(t, v.Field(i), n)
			}
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(t, v.Elem(), n)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fill(t, v.Index(i), n)
		}
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		for i := range 2 {
			k := reflect.New(v.Type().Key()).Elem()
			k.SetString(strings.Repeat("k", i+1))
			e := reflect.New(v.Type().Elem()).Elem()
			fill(t, e, n)
			v.SetMapIndex(k, e)
		}
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(2 * *n))
	case reflect.Float64:
		v.SetFloat(float64(*n) + 0.5)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.String:
		v.SetString("s")
	default:
		t.Fatalf("fill: no rule for %s", v.Type())
	}
}

func filled(t *testing.T) *Config {
	c := &Config{}
	n := 0
	fill(t, reflect.ValueOf(c).Elem(), &n)
	c.TimeScale = 0
	return c
}

// leaves calls f with each leaf of got and want, walked together (maps
// by key), with its path.
func leaves(path string, got, want reflect.Value, f func(path string, got, want reflect.Value)) {
	if got.Type() == durationType || got.Type() == rawNodeType {
		f(path, got, want)
		return
	}
	switch got.Kind() {
	case reflect.Struct:
		for i := range got.NumField() {
			if fl := got.Type().Field(i); fl.IsExported() {
				leaves(fieldPath(path, yamlName(fl)), got.Field(i), want.Field(i), f)
			}
		}
	case reflect.Pointer:
		leaves(path, got.Elem(), want.Elem(), f)
	case reflect.Slice:
		for i := range got.Len() {
			leaves(path+"[]", got.Index(i), want.Index(i), f)
		}
	case reflect.Map:
		for it := got.MapRange(); it.Next(); {
			leaves(path+"[]", it.Value(), want.MapIndex(it.Key()), f)
		}
	default:
		f(path, got, want)
	}
}

// TestScaledScalesEveryTimeAndRate fills every field, scales by a half,
// and checks each leaf: listed durations halved, Unscaled ones kept,
// per-minute rates doubled, and nothing else touched.
func TestScaledScalesEveryTimeAndRate(t *testing.T) {
	orig := filled(t)
	got, err := orig.Scaled(0.5)
	if err != nil {
		t.Fatal(err)
	}
	if got.TimeScale != 0.5 || got.TimeFactor() != 0.5 || orig.TimeFactor() != 1 {
		t.Errorf("TimeScale %v, TimeFactor %v (orig %v), want 0.5, 0.5, 1", got.TimeScale, got.TimeFactor(), orig.TimeFactor())
	}
	rates := []string{".rpm", ".itpm", ".otpm"}
	seen := map[string]bool{}
	leaves("", reflect.ValueOf(got).Elem(), reflect.ValueOf(orig).Elem(), func(path string, g, o reflect.Value) {
		seen[path] = true
		switch {
		case path == "time_scale":
		case g.Type() == durationType && slices.Contains(Unscaled, path):
			if g.Int() != o.Int() {
				t.Errorf("%s: %v became %v; it is Unscaled", path, Duration(o.Int()), Duration(g.Int()))
			}
		case g.Type() == durationType:
			if g.Int() != o.Int()/2 {
				t.Errorf("%s: %v became %v, want %v", path, Duration(o.Int()), Duration(g.Int()), Duration(o.Int()/2))
			}
		case slices.ContainsFunc(rates, func(r string) bool { return strings.HasSuffix(path, r) }):
			if g.Int() != 2*o.Int() {
				t.Errorf("%s: %d a minute became %d, want %d", path, o.Int(), g.Int(), 2*o.Int())
			}
		case g.Type() == rawNodeType:
		default:
			if !reflect.DeepEqual(g.Interface(), o.Interface()) {
				t.Errorf("%s: %v became %v; only times and rates scale", path, o.Interface(), g.Interface())
			}
		}
	})
	for _, p := range scaledDurations {
		if !seen[p] {
			t.Errorf("%s was never reached by the walk", p)
		}
	}
	// The copy shares nothing with the original.
	again := filled(t)
	if !reflect.DeepEqual(orig, again) {
		t.Error("Scaled changed the configuration it scaled")
	}
}

const scaleYAML = `
providers:
  - name: primary
    kind: openai
    base_url: http://127.0.0.1:8000/v1
    breaker: {window: 12s}
    limits: {rpm: 600, itpm: 90000}
models:
  - name: m
    hedge_after: 1500ms
    targets: [{provider: primary, model: up}]
keys:
  - name: team
    sha256: ` + "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" + `
    limits: {rpm: 60, otpm: 1000, burst: 30s}
`

// TestScaledRealConfig scales a parsed file by a quarter: defaults
// filled in by Parse scale like written values, the server's hygiene
// timeouts stay, rates go up fourfold and every burst lets through what
// it let through before.
func TestScaledRealConfig(t *testing.T) {
	c, err := Parse([]byte(scaleYAML), "scale.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.Scaled(0.25)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err != nil {
		t.Fatalf("scaled config does not validate: %v", err)
	}
	p, q := c.Providers[0], s.Providers[0]
	for _, d := range []struct {
		name      string
		got, want Duration
	}{
		{"providers[0].timeout (default 60s)", q.Timeout, Duration(15 * time.Second)},
		{"providers[0].breaker.window", q.Breaker.Window, Duration(3 * time.Second)},
		{"providers[0].breaker.open_for (default in breaker, left 0)", q.Breaker.OpenFor, 0},
		{"models[0].hedge_after", s.Models[0].HedgeAfter.Fixed, Duration(375 * time.Millisecond)},
		{"admission.queue.max_wait (default 5s)", s.Admission.Queue.MaxWait, Duration(1250 * time.Millisecond)},
		{"server.stream_idle_timeout (default 60s)", s.Server.StreamIdleTimeout, Duration(15 * time.Second)},
		{"server.write_timeout (Unscaled)", s.Server.WriteTimeout, Duration(DefaultWriteTimeout)},
		{"server.read_header_timeout (Unscaled)", s.Server.ReadHeaderTimeout, Duration(DefaultReadHeaderTimeout)},
		{"server.idle_timeout (Unscaled)", s.Server.IdleTimeout, Duration(DefaultIdleTimeout)},
	} {
		if d.got != d.want {
			t.Errorf("%s = %v, want %v", d.name, d.got, d.want)
		}
	}
	if q.Limits.RPM != 2400 || q.Limits.ITPM != 360000 {
		t.Errorf("provider limits %+v, want rpm 2400 itpm 360000", q.Limits)
	}
	if p.Limits.RequestBurst() != q.Limits.RequestBurst() {
		t.Errorf("provider request burst %d became %d", p.Limits.RequestBurst(), q.Limits.RequestBurst())
	}
	if got := q.Limits.TokenBurstOf(q.Limits.ITPM); got != p.Limits.ITPM {
		t.Errorf("provider token burst %d, want a scenario minute's %d", got, p.Limits.ITPM)
	}
	k, kq := c.Keys[0].Limits, s.Keys[0].Limits
	if kq.RPM != 240 || kq.OTPM != 4000 || kq.Burst != Duration(7500*time.Millisecond) {
		t.Errorf("key limits %+v, want rpm 240 otpm 4000 burst 7.5s", kq)
	}
	if k.RequestBurst() != kq.RequestBurst() || kq.TokenBurstOf(kq.OTPM) != k.OTPM || kq.TokenBurstOf(kq.ITPM) != 0 {
		t.Errorf("key bursts: requests %d→%d, output tokens →%d (want %d)", k.RequestBurst(), kq.RequestBurst(), kq.TokenBurstOf(kq.OTPM), k.OTPM)
	}
	if c.Providers[0].Timeout != Duration(DefaultProviderTimeout) || c.Keys[0].Limits.RPM != 60 {
		t.Error("Scaled changed the parsed config")
	}
	if s2, _ := s.Scaled(4); s2.TimeFactor() != 1 || s2.Providers[0].Timeout != p.Timeout || s2.Keys[0].Limits.RPM != 60 {
		t.Errorf("scaling back by 4: factor %v, timeout %v, rpm %d", s2.TimeFactor(), s2.Providers[0].Timeout, s2.Keys[0].Limits.RPM)
	}
}

func TestScaledRejectsBadFactors(t *testing.T) {
	c, err := Parse([]byte(scaleYAML), "scale.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []float64{0, -1} {
		if _, err := c.Scaled(f); err == nil || !strings.Contains(err.Error(), "positive") {
			t.Errorf("Scaled(%v): %v, want a request for a positive factor", f, err)
		}
	}
	if _, err := c.Scaled(1e12); err == nil || !strings.Contains(err.Error(), "overflows") {
		t.Errorf("Scaled(1e12): %v, want an overflow named", err)
	}
	// A positive time never rounds to the zero that means "off".
	s, err := c.Scaled(1e-12)
	if err != nil {
		t.Fatal(err)
	}
	if s.Models[0].HedgeAfter.Fixed != 1 {
		t.Errorf("hedge_after scaled to %v, want 1ns, not off", s.Models[0].HedgeAfter.Fixed)
	}
}
