//go:build !race

package bedrock

// raceEnabled: see race_on_test.go.
const raceEnabled = false
