package contract

import (
	"errors"
	"fmt"
	"time"
)

// A schema comes from the client, and checking an answer against it can
// cost far more than its size suggests: the checker backtracks without
// memory, so anyOf, oneOf or allOf branches that each recurse through
// the same $ref are tried again at every level of the answer, and a
// 400-byte schema with four such branches takes seconds on an answer
// nested eight deep (exponential in the depth). No size bound catches
// that, and the checker cannot be interrupted. So a check is contained
// instead of bounded:
//
//   - it runs in one of the schema slots a compile uses (half the CPUs),
//     so however many costly checks run at once, the other half of the
//     CPUs keeps serving everyone;
//   - the request waits for its verdict at most MaxCheckTime, slot wait
//     included, and past it gets ErrCostly, an answer that was not
//     judged, instead of waiting on the checker (which runs on to its
//     end in its slot, unseen).
//
// A costly schema can therefore leave other clients' answers unjudged
// while its checks hold the slots, but never slower or unanswered.

// MaxCheckTime bounds how long a request waits for its answer's verdict.
// Real schemas take microseconds to a few milliseconds.
const MaxCheckTime = 250 * time.Millisecond

// ErrCostly: the answer was not judged, because checking it took longer
// than MaxCheckTime (or no schema slot came free in that time).
var ErrCostly = fmt.Errorf("checking the answer against the request's schemas took over %s, so it was not judged; schemas whose anyOf, oneOf or allOf branches recurse through the same $ref cost time exponential in the answer's depth", MaxCheckTime)

// checkBudget is MaxCheckTime; tests shorten it.
var checkBudget = MaxCheckTime

// checkContained checks v against s in a schema slot, waiting at most
// checkBudget for the verdict.
func checkContained(s *Schema, v any) error {
	timer := time.NewTimer(checkBudget)
	defer timer.Stop()
	select {
	case compileSlots <- struct{}{}:
	case <-timer.C:
		return ErrCostly
	}
	verdict := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				verdict <- fmt.Errorf("the schema checker failed: %v", p)
			}
			<-compileSlots
		}()
		verdict <- s.CheckValue(v)
	}()
	select {
	case err := <-verdict:
		return err
	case <-timer.C:
		return ErrCostly
	}
}

// IsCostly reports whether err says an answer was not judged (ErrCostly).
func IsCostly(err error) bool { return errors.Is(err, ErrCostly) }
