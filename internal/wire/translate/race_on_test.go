//go:build race

package translate_test

// raceEnabled: the race detector's instrumentation allocates more, so
// allocation bounds are doubled under it.
const raceEnabled = true
