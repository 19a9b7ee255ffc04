package dashboard

import (
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	healthy := Signals{RPS: 100, Upstream: 100, Use: 0.4}
	cases := []struct {
		name string
		s    Signals
		want string
		why  string // a phrase the evidence must hold
	}{
		{"idle", Signals{}, Calm, "req/s"},
		{"healthy traffic", healthy, Calm, ""},
		{"provider 429s", Signals{RPS: 100, Upstream: 100, Throttled: 20, ThrottledProvider: "openai", Use: 0.5}, ProviderLimits, "20% of upstream answers are 429"},
		{"a few 429s are pacing, not pressure", Signals{RPS: 100, Upstream: 100, Throttled: 2, ThrottledProvider: "openai"}, Calm, ""},
		{"brownout", Signals{RPS: 80, Upstream: 80, SlowRate: 0.8, SlowProvider: "primary", Rescues: 10, Open: []string{"primary open"}}, SlowGenerations, "80% of primary's calls are slow"},
		{"brownout with a full limit is the provider's doing", Signals{RPS: 80, Upstream: 80, SlowRate: 0.5, SlowProvider: "primary", Use: 1, Queued: 40, OldestWaitMS: 900}, SlowGenerations, ""},
		{"retry storm", Signals{RPS: 100, Upstream: 160, Retries: 40, Hedges: 10}, RetryStorm, "50% of requests"},
		{"second calls refused by their budgets", Signals{RPS: 100, Upstream: 110, Retries: 10, Refused: 30}, RetryStorm, "turned down 30.0/s"},
		{"local saturation", Signals{RPS: 200, Upstream: 150, Use: 1, Queued: 60, OldestWaitMS: 800, Shed: 20}, LocalSaturation, "providers healthy"},
		{"full but nobody waits", Signals{RPS: 100, Upstream: 100, Use: 0.95}, Calm, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := Classify(c.s)
			if v.Kind != c.want {
				t.Fatalf("kind %s, want %s; scores %v, why %q", v.Kind, c.want, v.Scores, v.Why)
			}
			if len(v.Why) == 0 || v.Summary == "" {
				t.Fatalf("a verdict must say why: %+v", v)
			}
			if c.why != "" && !strings.Contains(strings.Join(v.Why, "\n"), c.why) {
				t.Errorf("why %q does not mention %q", v.Why, c.why)
			}
		})
	}
}

func TestSignalsFromAveragesAndTakesTheWorstProvider(t *testing.T) {
	ss := []Sample{
		{RPS: 100, Queue: map[string]int{"interactive": 10}, Sheds: map[string]float64{"queue_full/background": 4},
			Providers: []Provider{{Name: "a", SlowRate: 0.1, Calls: 50, Throttled: 5, State: "closed"}, {Name: "b", SlowRate: 0.6, Calls: 50, State: "closed"}}},
		{RPS: 50, Queue: map[string]int{"interactive": 0}, Limit: 100, InFlight: 100,
			Providers: []Provider{{Name: "a", SlowRate: 0.2, Calls: 50, State: "closed"}, {Name: "b", SlowRate: 0.3, Calls: 0, State: "open"}}},
	}
	s := SignalsFrom(ss, 5)
	if s.RPS != 75 || s.Queued != 5 || s.Shed != 2 || s.Upstream != 75 || s.Throttled != 2.5 {
		t.Errorf("means: %+v", s)
	}
	if s.SlowRate != 0.6 || s.SlowProvider != "b" || s.ThrottledProvider != "a" {
		t.Errorf("worst provider: %+v", s)
	}
	if s.Use != 0.5 || len(s.Open) != 1 || s.Open[0] != "b open" {
		t.Errorf("use %v, open %v", s.Use, s.Open)
	}
	if got := SignalsFrom(ss, 1); got.RPS != 50 {
		t.Errorf("the last 1 sample: rps %v", got.RPS)
	}
}
