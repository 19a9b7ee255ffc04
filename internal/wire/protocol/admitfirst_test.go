package protocol

import (
	"errors"
	"strings"
	"testing"
)

// messagesBody is a chat body of n one-character messages.
func messagesBody(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"model":"m","messages":[`)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(`{"role":"user","content":"a"}`)
	}
	b.WriteString(` ]}`)
	return []byte(b.String())
}

func TestParseBodyWithinLimits(t *testing.T) {
	lim := Limits{MaxMessages: 3, MaxDepth: 5}
	deep := func(n int) []byte {
		return []byte(`{"model":"m","x":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}`)
	}
	cases := []struct {
		name string
		body []byte
		want error // nil: accepted
	}{
		{"three messages", messagesBody(3), nil},
		{"four messages", messagesBody(4), ErrTooManyMessages},
		{"no messages", []byte(`{"model":"m","messages":[]}`), nil},
		{"messages not an array", []byte(`{"model":"m","messages":"[1,2,3,4]"}`), nil},
		{"brackets inside strings do not nest", []byte(`{"model":"m","x":"[[[[[[[[[[{{{{{{"}`), nil},
		{"depth 5 (body object and 4 arrays)", deep(4), nil},
		{"depth 6", deep(5), ErrTooDeep},
		// decodeBody's path (an escaped key) is held to the same limits.
		{"escaped key, four messages", append([]byte(`{"\u006dodel":"m",`), messagesBody(4)[len(`{"model":"m",`):]...), ErrTooManyMessages},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseBodyWithin(c.body, lim)
			switch {
			case c.want == nil && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != nil && !errors.Is(err, c.want):
				t.Fatalf("got %v, want %v", err, c.want)
			case c.want != nil && !errors.Is(err, ErrMalformed):
				t.Fatalf("%v does not wrap ErrMalformed", err)
			}
		})
	}
	// The message names the count, the limit and the setting.
	_, err := ParseBodyWithin(messagesBody(7), lim)
	if msg := err.Error(); !strings.Contains(msg, "has 7 messages") || !strings.Contains(msg, "at most 3 (server.max_messages)") {
		t.Fatalf("message does not say what to fix: %s", msg)
	}
}

// The checks are linear and allocate nothing beyond ParseBody's own.
func TestParseBodyWithinAllocs(t *testing.T) {
	body := messagesBody(10_000)
	base := testing.AllocsPerRun(5, func() { _, _ = ParseBody(body) })
	with := testing.AllocsPerRun(5, func() {
		_, _ = ParseBodyWithin(body, Limits{MaxMessages: DefaultMaxMessages, MaxDepth: DefaultMaxDepth})
	})
	if with > base {
		t.Fatalf("limits cost %v allocations, ParseBody alone %v", with, base)
	}
}
