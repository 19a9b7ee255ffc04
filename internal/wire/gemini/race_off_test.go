//go:build !race

package gemini

// raceEnabled: see race_on_test.go.
const raceEnabled = false
