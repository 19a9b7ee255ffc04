//go:build race

package sim

// raceEnabled: the race detector makes the simulator's single goroutine
// about ten times slower and can find nothing in it.
const raceEnabled = true
