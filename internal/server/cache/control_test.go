package cache

import (
	"testing"
	"time"
)

func TestParseControl(t *testing.T) {
	for _, c := range []struct {
		name   string
		values []string
		want   Control
	}{
		{"none", nil, Control{}},
		{"no-cache", []string{"no-cache"}, Control{NoCache: true}},
		{"no-store", []string{"No-Store"}, Control{NoStore: true}},
		{"both, two lines", []string{"no-cache", " no-store "}, Control{NoCache: true, NoStore: true}},
		{"max-age", []string{"max-age=60"}, Control{MaxAge: time.Minute, HasMaxAge: true}},
		{"quoted", []string{`max-age="30"`}, Control{MaxAge: 30 * time.Second, HasMaxAge: true}},
		{"zero", []string{"max-age=0"}, Control{HasMaxAge: true}},
		{"s-maxage wins", []string{"s-maxage=5, max-age=600"}, Control{MaxAge: 5 * time.Second, HasMaxAge: true}},
		{"not a number reads as 0", []string{"max-age=soon"}, Control{HasMaxAge: true}},
		{"negative reads as 0", []string{"max-age=-1"}, Control{HasMaxAge: true}},
		{"huge is capped", []string{"max-age=99999999999999999999"}, Control{MaxAge: maxDeltaSeconds * time.Second, HasMaxAge: true}},
		{"a comma inside quotes", []string{`private="a,no-store", max-age=9`}, Control{MaxAge: 9 * time.Second, HasMaxAge: true}},
		{"unknown directives", []string{"only-if-cached, must-revalidate, x=1"}, Control{}},
	} {
		if got := ParseControl(c.values); got != c.want {
			t.Errorf("%s: %+v; want %+v", c.name, got, c.want)
		}
	}
}
