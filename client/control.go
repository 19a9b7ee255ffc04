package client

import "github.com/sluice-gw/sluice/internal/model/workload"

// The retry budget and the throttle are workload's, so that the simulator
// and sluice load model this package with its own code. The Transport
// serialises calls to them under Transport.mu.
type (
	budget   = workload.RetryBudget
	throttle = workload.Throttle
)
