package dashboard

import (
	"strings"
	"testing"
)

// A provider whose breaker is not closed carries little or nothing, so
// its slow and error rates read low: the headline still names it,
// whatever the verdict. Before, a half-open primary carrying nothing
// read "Calm".
func TestHeadlineNamesProvidersNotClosed(t *testing.T) {
	healthy := Signals{RPS: 80, Upstream: 80, Use: 0.3}
	for _, tc := range []struct {
		name string
		s    Signals
		kind string
	}{
		{"half-open, carrying nothing", withOpen(healthy, "primary half_open"), ProviderOut},
		{"recovering", withOpen(healthy, "primary recovering"), ProviderOut},
		{"two out", withOpen(healthy, "primary open", "backup half_open"), ProviderOut},
		{"open in a brownout", withOpen(Signals{RPS: 80, Upstream: 80, SlowRate: 0.8, SlowProvider: "primary"}, "primary open"), SlowGenerations},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Classify(tc.s)
			if v.Kind != tc.kind {
				t.Fatalf("kind %s, want %s: %+v", v.Kind, tc.kind, v)
			}
			for _, o := range tc.s.Open {
				if !strings.Contains(v.Summary, o) {
					t.Errorf("headline %q does not name %q", v.Summary, o)
				}
			}
		})
	}
	if v := Classify(healthy); v.Kind != Calm || strings.Contains(v.Summary, "not closed") {
		t.Errorf("every breaker closed: %+v", v)
	}
	// From samples, as the recorder builds them.
	s := SignalsFrom([]Sample{{RPS: 80, Providers: []Provider{{Name: "primary", State: "half_open"}, {Name: "backup", Calls: 80, State: "closed"}}}}, 5)
	if v := Classify(s); v.Kind != ProviderOut || !strings.Contains(v.Summary, "primary half_open") {
		t.Errorf("a half-open primary from samples: %+v", v)
	}
}

func withOpen(s Signals, open ...string) Signals {
	s.Open = open
	return s
}
