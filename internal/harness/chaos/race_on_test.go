//go:build race

package chaos

// raceEnabled: the smoke run skips under the race detector, which would
// slow the harness's thousands of clients and find nothing in the
// processes it drives (they are built without it); CI runs it without.
const raceEnabled = true
