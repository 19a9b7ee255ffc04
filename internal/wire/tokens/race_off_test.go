//go:build !race

package tokens

// raceEnabled: see race_on_test.go.
const raceEnabled = false
