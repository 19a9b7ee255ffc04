package config

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"
	"unicode"
)

// Unscaled lists the durations Scaled leaves alone, by their path in the
// file. They bound the machinery around the scenario, not the
// scenario: how slow a client's network may be (header, body and write
// timeouts, idle keep-alives), how long a load balancer needs to notice
// a drain (drain_delay, shutdown_grace), and how long a decision may
// wait on the shared store (fleet.timeout), and how long a browser
// caches a preflight's answer (server.cors.max_age). None of them gets faster
// because the scenario does, and shrinking them would turn a compressed
// replay's loopback hiccups into 408s, dropped connections and a fleet
// deciding alone.
var Unscaled = []string{
	"server.read_header_timeout",
	"server.body_read_timeout",
	"server.write_timeout",
	"server.idle_timeout",
	"server.drain_delay",
	"server.shutdown_grace",
	"fleet.timeout",
	"server.cors.max_age",
	// A spend limit's rolling window is money over real time, as its
	// calendar windows are: a replay does not make dollars reset faster.
	"keys[].spend.rolling.window",
	"teams[].spend.rolling.window",
}

// Scaled returns a copy of c for replaying a scenario at t times its
// length: sluice serve --time-scale t, the factor sluice load and
// sluice mock take too (0.25 runs a six-minute scenario in 90 s). Every
// duration in the configuration is multiplied by t (timeouts, queue
// waits, hedge delays, breaker and limit windows, degrade ages, burst
// windows, stream_idle_timeout), except those in Unscaled; every
// per-minute rate (rpm, itpm, otpm: of keys, providers, models and the
// large-context lane) is divided by t, with its bursts kept at what the
// scenario allows. Zero stays zero, so "the package's default" stays
// that, and the engine scales those defaults by TimeScale
// (policy.FromConfig). Counts and shares (concurrency limits, queue
// depths, budgets, rates of errors) are not times and stay.
//
// The result records t in TimeScale, times any factor c already had. t
// must be positive and finite, and no scaled value may overflow.
func (c *Config) Scaled(t float64) (*Config, error) {
	if !(t > 0) || math.IsInf(t, 0) {
		return nil, fmt.Errorf("time scale %v: want a positive factor, e.g. 0.25 to run four times faster", t)
	}
	out := *c
	s := scaler{t: t, keep: map[string]bool{}}
	for _, p := range Unscaled {
		s.keep[p] = true
	}
	s.walk(reflect.ValueOf(&out).Elem(), "")
	if s.err != nil {
		return nil, s.err
	}
	out.TimeScale = c.TimeFactor() * t
	return &out, nil
}

// TimeFactor is the factor the configuration's times were multiplied
// by: TimeScale, or 1 for a configuration that was never scaled.
func (c *Config) TimeFactor() float64 {
	if c == nil || c.TimeScale == 0 {
		return 1
	}
	return c.TimeScale
}

// scaler copies a configuration deeply while it scales it, so the
// original and the copy share no slice, map or pointer.
type scaler struct {
	t    float64
	keep map[string]bool
	err  error
}

var (
	durationType = reflect.TypeFor[Duration]()
	limitsType   = reflect.TypeFor[Limits]()
	rawNodeType  = reflect.TypeFor[RawNode]()
)

// walk scales v, which is addressable, in place; path is its place in
// the file ("providers[].breaker.window"), for Unscaled and errors.
func (s *scaler) walk(v reflect.Value, path string) {
	switch v.Type() {
	case durationType:
		if !s.keep[path] {
			d := v.Addr().Interface().(*Duration)
			*d = s.duration(path, *d)
		}
		return
	case limitsType:
		s.limits(v.Addr().Interface().(*Limits), path)
		return
	case rawNodeType:
		return // the scenario: serve never reads it
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				s.walk(v.Field(i), fieldPath(path, yamlName(f)))
			}
		}
	case reflect.Pointer:
		if !v.IsNil() {
			n := reflect.New(v.Type().Elem())
			n.Elem().Set(v.Elem())
			v.Set(n)
			s.walk(n.Elem(), path)
		}
	case reflect.Slice:
		if !v.IsNil() {
			n := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
			reflect.Copy(n, v)
			v.Set(n)
			for i := range n.Len() {
				s.walk(n.Index(i), path+"[]")
			}
		}
	case reflect.Map:
		if !v.IsNil() {
			n := reflect.MakeMapWithSize(v.Type(), v.Len())
			for it := v.MapRange(); it.Next(); {
				e := reflect.New(v.Type().Elem()).Elem()
				e.Set(it.Value())
				s.walk(e, path+"[]")
				n.SetMapIndex(it.Key(), e)
			}
			v.Set(n)
		}
	}
}

// yamlName is a field's name in the file, or, for a field the file
// does not name (HedgeDelay's Fixed, Limits' TokenBurst), its Go name in
// the file's style: fixed, token_burst.
func yamlName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name != "" && name != "-" {
		return name
	}
	var b strings.Builder
	for i, r := range f.Name {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

func (s *scaler) duration(path string, d Duration) Duration {
	if d == 0 {
		return 0
	}
	f := math.Round(float64(d) * s.t)
	if f >= math.MaxInt64 {
		s.fail(path, "%s × %v overflows a duration", d, s.t)
		return d
	}
	// A positive time stays positive: zero means "unset" or "off".
	return Duration(max(1, int64(f)))
}

// limits divides the per-minute rates by t and keeps what the scenario
// lets through at once: the request burst, time at the rate, becomes
// explicit before it is scaled (its default is a constant), and the
// token burst, a minute's worth, becomes a scaled minute, so a minute of
// the scenario's tokens may still come at once.
func (s *scaler) limits(l *Limits, path string) {
	if l.RPM > 0 && l.Burst == 0 {
		l.Burst = Duration(DefaultBurst)
	}
	l.Burst = s.duration(fieldPath(path, "burst"), l.Burst)
	if (l.ITPM > 0 || l.OTPM > 0) && l.TokenBurst == 0 {
		l.TokenBurst = Duration(time.Minute)
	}
	l.TokenBurst = s.duration(fieldPath(path, "token_burst"), l.TokenBurst)
	for _, r := range []struct {
		name string
		v    *int64
	}{{"rpm", &l.RPM}, {"itpm", &l.ITPM}, {"otpm", &l.OTPM}} {
		if *r.v <= 0 {
			continue
		}
		f := math.Round(float64(*r.v) / s.t)
		if f >= math.MaxInt64/2 {
			s.fail(fieldPath(path, r.name), "%d ÷ %v overflows", *r.v, s.t)
			continue
		}
		*r.v = max(1, int64(f))
	}
}

func (s *scaler) fail(path, format string, args ...any) {
	if s.err == nil {
		s.err = fmt.Errorf("time scale %v: %s: %s", s.t, path, fmt.Sprintf(format, args...))
	}
}
