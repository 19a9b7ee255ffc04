package scenario

import (
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/model/workload"
)

// The funnel applies the format's defaults before scaling, so a run at
// --time-scale 0.2 waits a fifth of the default base and cap too.
func TestRetryPolicyScalesDefaults(t *testing.T) {
	got := Retry{Strategy: "jittered"}.Policy(3*time.Second, 0.2)
	want := workload.Retry{Strategy: workload.Jittered, Base: 100 * time.Millisecond, Cap: 6 * time.Second, Patience: 3 * time.Second}
	if got != want {
		t.Errorf("policy %+v, want %+v", got, want)
	}
	got = Retry{Strategy: "backoff", MaxAttempts: 5, Base: time.Second, Cap: 4 * time.Second}.Policy(0, 1)
	want = workload.Retry{Strategy: workload.Backoff, MaxAttempts: 5, Base: time.Second, Cap: 4 * time.Second}
	if got != want {
		t.Errorf("policy %+v, want %+v", got, want)
	}
}

func TestClientsSchedule(t *testing.T) {
	c := Clients{Rate: []RateStep{{At: 0, RPS: 10}, {At: time.Second, RPS: 30, Ramp: time.Second}}, Arrivals: "poisson"}
	s := c.Schedule(2, 1)
	for at, want := range map[time.Duration]float64{0: 20, 1500 * time.Millisecond: 40, time.Hour: 60} {
		if got := s.Rate(at); got != want {
			t.Errorf("Rate(%v) = %v, want %v", at, got, want)
		}
	}
	if c.Spacing() != workload.Poisson || (Clients{}).Spacing() != workload.Even {
		t.Error("spacing not read from clients.arrivals")
	}
}
