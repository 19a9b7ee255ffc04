//go:build !race

package translate_test

// raceEnabled: see race_on_test.go.
const raceEnabled = false
