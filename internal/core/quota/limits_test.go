package quota

import "testing"

func TestEffectiveBurst(t *testing.T) {
	for _, c := range []struct {
		l    Limit
		want int64
	}{{Limit{}, 0}, {Limit{PerMinute: 600}, 600}, {Limit{PerMinute: 600, Burst: 100}, 100}, {Limit{PerMinute: 1, Burst: 5000}, 5000}} {
		if got := c.l.EffectiveBurst(); got != c.want {
			t.Errorf("%+v: %d, want %d", c.l, got, c.want)
		}
	}
}

func TestDivide(t *testing.T) {
	l := Limits{Requests: {PerMinute: 600, Burst: 100}, OutputTokens: {PerMinute: 1000}}
	for _, c := range []struct {
		n    int
		want Limits
	}{
		{0, l},
		{1, l},
		{3, Limits{Requests: {PerMinute: 200, Burst: 33}, OutputTokens: {PerMinute: 333, Burst: 333}}},
		{7, Limits{Requests: {PerMinute: 85, Burst: 14}, OutputTokens: {PerMinute: 142, Burst: 142}}},
		{2000, Limits{Requests: {PerMinute: 1, Burst: 1}, OutputTokens: {PerMinute: 1, Burst: 1}}},
	} {
		got := l.Divide(c.n)
		if got != c.want {
			t.Errorf("Divide(%d) = %+v, want %+v", c.n, got, c.want)
		}
		if err := got.Validate(); err != nil {
			t.Errorf("Divide(%d): %v", c.n, err)
		}
	}
}
