package gateway

import "testing"

// LimitHeldAnswer makes a whole answer past n bytes too large to hold
// (and so to cut), for t's length; it must be called before t starts a
// gateway.
func LimitHeldAnswer(t testing.TB, n int64) {
	was := maxHeldAnswer
	maxHeldAnswer = n
	t.Cleanup(func() { maxHeldAnswer = was })
}
