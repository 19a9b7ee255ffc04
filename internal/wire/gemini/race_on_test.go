//go:build race

package gemini

// raceEnabled: the race detector slows decoding several times over, so
// CPU bounds are scaled under it.
const raceEnabled = true
