//go:build race

package protocol

// raceEnabled: the race detector's instrumentation moves some values to
// the heap, so allocation counts are only meaningful without it.
const raceEnabled = true
