//go:build !unix

package gemini

import "time"

var start = time.Now()

// processCPU stands in with wall time where rusage is not there.
func processCPU() time.Duration { return time.Since(start) }
