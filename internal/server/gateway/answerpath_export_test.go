package gateway

import "testing"

// EncodeAnswerAs writes a JSON answer again in one of encodeAs's forms,
// for the relay's tests.
func EncodeAnswerAs(t testing.TB, answer []byte, form string) []byte {
	return encodeAs(t, answer, form)
}

// MaxAnswerToken is how long one token of a large answer may be.
const MaxAnswerToken = maxAnswerToken
