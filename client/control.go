package client

import "github.com/sluice-gw/sluice/client/brake"

// The retry budget and the throttle are brake's, so that the simulator
// and sluice load model this package with its own code. The Transport
// serialises calls to them under Transport.mu.
type (
	budget   = brake.RetryBudget
	throttle = brake.Throttle
)
