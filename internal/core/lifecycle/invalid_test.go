package lifecycle

import (
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/core/breaker"
)

// An answer that broke its request's declared schema is an answer to
// limits and latency, an error to the breaker only when the model says
// so, and retryable while nothing has reached the client.
func TestInvalidAnswerOutcome(t *testing.T) {
	t0 := time.Unix(0, 0)
	invalid := Outcome{Kind: OK, Status: 200, Invalid: true}
	cases := []struct {
		name         string
		o            Outcome
		invalidFails bool
		want         breaker.Kind
	}{
		{"valid", Outcome{Kind: OK, Status: 200}, true, breaker.OK},
		{"invalid, not counted", invalid, false, breaker.OK},
		{"invalid, counted", invalid, true, breaker.Error},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := breakerOutcome(Total, t0, time.Time{}, t0.Add(time.Second), tc.o, tc.invalidFails)
			if got.Kind != tc.want {
				t.Fatalf("breaker outcome %v, want %v", got.Kind, tc.want)
			}
		})
	}
	if !retryable(invalid) || retryable(Outcome{Kind: OK, Status: 200}) {
		t.Fatal("an invalid answer must be retryable, a valid one not")
	}
}
