//go:build race

package usage

// raceEnabled: the race detector slows the year export tenfold, so it
// runs on fewer keys.
const raceEnabled = true
