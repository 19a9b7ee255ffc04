package mock

import (
	"encoding/json"
	"math/rand/v2"
)

// words are the mock's vocabulary: one word is one output token, which
// keeps token counts and text length trivially consistent.
var words = [...]string{
	"lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing",
	"elit", "sed", "do", "eiusmod", "tempor", "incididunt", "ut", "labore",
	"et", "dolore", "magna", "aliqua", "enim", "ad", "minim", "veniam",
	"quis", "nostrud", "exercitation", "ullamco", "laboris", "nisi",
	"aliquip", "ex", "ea", "commodo", "consequat", "duis", "aute", "irure",
	"in", "reprehenderit", "voluptate", "velit", "esse", "cillum", "fugiat",
	"nulla", "pariatur", "excepteur", "sint", "occaecat", "cupidatat", "non",
	"proident", "sunt", "culpa", "qui", "officia", "deserunt", "mollit",
	"anim", "id", "est", "laborum", "brevis", "sluice",
}

// word is one output token, with the leading space real tokenizers keep.
func word(rng *rand.Rand) string {
	return " " + words[rng.IntN(len(words))]
}

// CharsPerToken is the rule of thumb the mock counts a prompt's tokens
// by, and sluice load sizes its prompts by (one character is one byte in
// the text it sends): EstimateTokens(CharsPerToken·n) is n.
const CharsPerToken = 4

// EstimateTokens estimates the tokens of a text of n bytes as a quarter
// of them, rounded up: the usual rule of thumb for English, and cheap to
// predict in tests. Prefill and the usage the mock reports both use it.
func EstimateTokens(bytes int) int {
	return (bytes + CharsPerToken - 1) / CharsPerToken
}

func tokensFor(bytes int) int { return EstimateTokens(bytes) }

// contentBytes counts the text in a message content, which is either a
// string or a list of parts, each a string or an object with "text".
// Other parts (images, tool calls) carry no text and count nothing.
func contentBytes(raw json.RawMessage) int {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return len(s)
	}
	var parts []json.RawMessage
	if json.Unmarshal(raw, &parts) != nil {
		return 0
	}
	n := 0
	for _, p := range parts {
		var part struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(p, &s) == nil {
			n += len(s)
		} else if json.Unmarshal(p, &part) == nil {
			n += len(part.Text)
		}
	}
	return n
}

// messagesBytes sums contentBytes over a message list.
func messagesBytes(msgs []message) int {
	n := 0
	for _, m := range msgs {
		n += contentBytes(m.Content)
	}
	return n
}

type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}
