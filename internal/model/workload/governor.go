package workload

import (
	"time"

	"github.com/sluice-gw/sluice/client/brake"
)

// The retry budget and the throttle are the client package's own
// (client/brake): the hosts that model the Sluice client run its code.
type (
	RetryBudget = brake.RetryBudget
	Throttle    = brake.Throttle
)

// Defaults of the client's brakes, as client/brake applies them.
const (
	DefaultRetryBudget    = brake.DefaultRetryBudget
	DefaultBudgetBurst    = brake.DefaultBudgetBurst
	DefaultThrottleK      = brake.DefaultThrottleK
	DefaultThrottleWindow = brake.DefaultThrottleWindow
	DefaultThrottleBucket = brake.DefaultThrottleBucket
)

// Governor is one client process's pair of brakes, shared by all its
// requests: the hosts that model the Sluice client (the simulator, sluice
// load) keep one per traffic stream. It is not safe for concurrent use.
type Governor struct {
	Budget   *RetryBudget
	Throttle *Throttle
}

// NewGovernor returns the client package's default brakes.
func NewGovernor() *Governor {
	return &Governor{Budget: brake.NewRetryBudget(0, 0), Throttle: brake.NewThrottle(0, 0, 0)}
}

// Admit is a new request at now with draw u: it earns its retry credit
// and may be shed locally (false).
func (g *Governor) Admit(now time.Time, u float64) bool {
	g.Budget.Earn()
	shed, _, _, _ := g.Throttle.Shed(now, u)
	return !shed
}

// Accepted reports whether an attempt's answer counts as accepted by the
// server for throttling, as the client judges it (brake.Accepted).
func Accepted(status int) bool { return brake.Accepted(status) }
