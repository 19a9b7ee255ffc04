package gateway

import "testing"

// EncodeAnswerAs writes a JSON answer again in one of encodeAs's forms,
// for the relay's tests.
func EncodeAnswerAs(t testing.TB, answer []byte, form string) []byte {
	return encodeAs(t, answer, form)
}

// LimitAnswerToken makes one token of a large answer longer than n
// bytes too long, for t's length; it must be called before t starts a
// gateway.
func LimitAnswerToken(t testing.TB, n int64) {
	was := maxAnswerToken
	maxAnswerToken = n
	t.Cleanup(func() { maxAnswerToken = was })
}
