package admission

import (
	"errors"
	"fmt"
	"time"
)

// ErrRejected is the sentinel every *Rejection matches with errors.Is.
var ErrRejected = errors.New("admission: rejected")

// Rejection is the error a host returns when admission refuses a request
// (runner.Runner's Acquire and Check do). It carries what the answer
// needs: why, for which class, and when to come back.
type Rejection struct {
	Reason     Reason
	Priority   Priority
	RetryAfter time.Duration
	// Dimension names the budget dimension that refused ("requests",
	// "input_tokens", "output_tokens") when Reason is a budget's.
	Dimension string
	// TooLarge: the request is larger than that budget's burst, so no
	// wait lets it through; the answer says so instead of Retry-After.
	TooLarge bool
	// Futile: a retry is more likely refused than served now (see
	// Refusal.Futile); the answer says x-should-retry: false.
	Futile bool
}

func (r *Rejection) Error() string {
	return fmt.Sprintf("admission: rejected %s request: %s (retry after %s)", r.Priority, r.Reason, r.RetryAfter)
}

// Is makes errors.Is(err, ErrRejected) true for every Rejection.
func (r *Rejection) Is(target error) bool { return target == ErrRejected }
