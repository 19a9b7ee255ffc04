//go:build race

package tokens

// raceEnabled: the race detector changes allocation counts and slows
// tokenizing several times over, so allocation assertions are skipped
// and long inputs are shortened under it.
const raceEnabled = true
