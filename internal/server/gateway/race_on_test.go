//go:build race

package gateway_test

// raceEnabled: the race detector slows every byte a relay scans about
// tenfold, so byte-heavy tests carry less under it.
const raceEnabled = true
