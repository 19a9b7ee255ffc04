// Package wait holds the one context-aware sleep that the gateway, the
// fake provider and the load generator share.
package wait

import (
	"context"
	"time"
)

// Sleep waits d, or until ctx ends, whichever comes first, and reports
// whether the whole wait passed with ctx still live. A d of zero or less
// does not wait. A cancelled wait returns within a timer tick, so a
// cancelled call stops at once rather than after its whole planned delay.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
