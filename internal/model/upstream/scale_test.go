package upstream

import (
	"reflect"
	"testing"
	"time"
)

// fillConfig sets every field of a Config, however deep (slices get two
// elements), to a distinct non-zero value, so that a test can tell which
// fields Scaled changed. Durations are whole seconds, so halving them is
// exact.
func fillConfig(t *testing.T) Config {
	t.Helper()
	var c Config
	n := 0
	durType := reflect.TypeFor[time.Duration]()
	var fill func(v reflect.Value)
	fill = func(v reflect.Value) {
		n++
		switch {
		case v.Type() == durType:
			v.SetInt(int64(n) * int64(time.Second))
			return
		}
		switch v.Kind() {
		case reflect.Struct:
			for i := range v.NumField() {
				if v.Type().Field(i).IsExported() {
					fill(v.Field(i))
				}
			}
		case reflect.Slice:
			v.Set(reflect.MakeSlice(v.Type(), 2, 2))
			for i := range 2 {
				fill(v.Index(i))
			}
		case reflect.Int, reflect.Int64:
			v.SetInt(int64(n))
		case reflect.Uint64:
			v.SetUint(uint64(n))
		case reflect.Pointer:
			v.Set(reflect.New(v.Type().Elem()))
			fill(v.Elem())
		case reflect.Float64:
			v.SetFloat(float64(n) + 0.5)
		case reflect.Bool:
			v.SetBool(true)
		case reflect.String:
			v.SetString("s")
		default:
			t.Fatalf("fillConfig: no rule for %s (kind %s); teach the test, and Scaled, about it", v.Type(), v.Kind())
		}
	}
	fill(reflect.ValueOf(&c).Elem())
	return c
}

// compareFields walks got and orig together and calls check with each
// leaf's path.
func compareFields(path string, got, orig reflect.Value, check func(path string, got, orig reflect.Value)) {
	switch got.Kind() {
	case reflect.Struct:
		if got.Type() == reflect.TypeFor[time.Duration]() {
			check(path, got, orig)
			return
		}
		for i := range got.NumField() {
			f := got.Type().Field(i)
			if f.IsExported() {
				compareFields(path+"."+f.Name, got.Field(i), orig.Field(i), check)
			}
		}
	case reflect.Slice:
		for i := range got.Len() {
			compareFields(path+"[]", got.Index(i), orig.Index(i), check)
		}
	case reflect.Pointer:
		compareFields(path, got.Elem(), orig.Elem(), check)
	case reflect.Func:
	default:
		check(path, got, orig)
	}
}

// TestScaledCoversEveryDuration guards Scaled: every time.Duration in
// Config, including ones added later, must come out multiplied, and
// everything else (counts, shares, multipliers, capacity) unchanged. A
// new duration field that Scaled forgets fails here.
func TestScaledCoversEveryDuration(t *testing.T) {
	orig := fillConfig(t)
	got := orig.Scaled(0.5)
	durations := 0
	compareFields("Config", reflect.ValueOf(got), reflect.ValueOf(orig), func(path string, g, o reflect.Value) {
		switch {
		case path == "Config.TimeScale":
			if want := o.Float() * 0.5; g.Float() != want {
				t.Errorf("%s = %v, want %v (the factor recorded)", path, g.Float(), want)
			}
		case g.Type() == reflect.TypeFor[time.Duration]():
			durations++
			if g.Int() != o.Int()/2 {
				t.Errorf("%s = %v, want %v: Scaled does not scale it", path, time.Duration(g.Int()), time.Duration(o.Int()/2))
			}
		default:
			if !reflect.DeepEqual(g.Interface(), o.Interface()) {
				t.Errorf("%s changed from %v to %v: only times scale", path, o.Interface(), g.Interface())
			}
		}
	})
	// TTFT, TPOT, PrefillPer1K, three of Jitter's, and for each of two
	// brownouts four and each of two failures five.
	if want := 3 + 3 + 2*4 + 2*5; durations != want {
		t.Errorf("checked %d durations, want %d; update the count when Config gains one", durations, want)
	}
}

func TestScaledDoesNotShareSlices(t *testing.T) {
	orig := Config{Brownouts: []Brownout{{Start: time.Second, End: 2 * time.Second, Multiplier: 2}},
		Failures: []Failure{{Kind: FailHang, Start: time.Second}}}
	_ = orig.Scaled(0.1)
	if orig.Brownouts[0].Start != time.Second || orig.Failures[0].Start != time.Second {
		t.Errorf("Scaled changed its receiver's windows: %+v %+v", orig.Brownouts, orig.Failures)
	}
}

func TestScaledEdges(t *testing.T) {
	c := Config{TTFT: 3, TPOT: time.Second}
	if got := c.Scaled(0.1); got.TTFT != 1 || got.TPOT != 100*time.Millisecond {
		t.Errorf("Scaled(0.1): ttft %v tpot %v; a positive time must stay positive (zero means unset)", got.TTFT, got.TPOT)
	}
	for _, bad := range []float64{0, -1} {
		if got := c.Scaled(bad); got.TTFT != c.TTFT || got.TimeScale != 0 {
			t.Errorf("Scaled(%v) changed the config: %+v", bad, got)
		}
	}
	if got := c.Scaled(0.5).Scaled(0.5); got.TimeScale != 0.25 || got.TPOT != 250*time.Millisecond {
		t.Errorf("Scaled twice: scale %v tpot %v, want 0.25 and 250ms", got.TimeScale, got.TPOT)
	}
}
