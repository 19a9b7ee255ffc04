//go:build !linux

package tokens

import "time"

// onCPU runs f and returns the wall time it took; only Linux measures
// the thread's own CPU time.
func onCPU(f func()) time.Duration { return wall(f) }
