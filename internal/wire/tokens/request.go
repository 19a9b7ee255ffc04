package tokens

import (
	"errors"
)

// ErrNotJSON is Request's error for a body that is not well-formed JSON.
var ErrNotJSON = errors.New("tokens: request body is not JSON")

// OpenAI's framing of a chat conversation, from its cookbook "How to
// count tokens with tiktoken": each message costs 3 tokens beyond the
// text of its fields, a name 1 more, and every reply is primed with 3
// (<|start|>assistant<|message|>). These hold for the gpt-3.5-turbo,
// gpt-4 and gpt-4o families the cookbook checks against the API's
// usage.prompt_tokens.
const (
	tokensPerMessage = 3
	tokensPerName    = 1
	replyPriming     = 3
)

// Request returns the input tokens of a whole request body in enc:
// anthropic selects Anthropic's Messages API, otherwise the body is
// OpenAI's. What counts:
//
//   - chat messages (OpenAI and Anthropic): a content string, or the
//     text of each text part ("text", and the Responses API's
//     "input_text" and "output_text"); Anthropic's tool_use blocks (their
//     name and input JSON) and tool_result blocks (their content);
//   - OpenAI messages: also every other string field (role, name,
//     tool_call_id, ...) and the JSON text of tool_calls and
//     function_call, plus the cookbook's framing above;
//   - Anthropic's system, a string or text blocks. Anthropic publishes no
//     per-message framing, so none is added: a count for Claude is low by
//     whatever that framing is;
//   - tools (and the legacy functions): their JSON text as sent. OpenAI
//     renders tool definitions into a prompt format of its own, so this
//     is an estimate even for OpenAI's models;
//   - prompt (/v1/completions) and input (/v1/embeddings): a string, an
//     array of strings, or token arrays, whose numbers count one each;
//     input items that are objects (the Responses API) count as messages
//     without framing; and the Responses API's instructions.
//
// Images, audio, files and documents are not counted: their token cost
// depends on the model's own rules (an image's size and detail, audio's
// duration), which a text tokenizer cannot see. Nor are fields that
// shape the answer (response_format, tool_choice, ...).
//
// At most MaxExactBytes of a body's text are tokenized (held against
// the texts' lengths as they stand in the body, in the order they come);
// the text beyond is estimated at a token per 3 bytes, rounded up, and
// estimated is true. So counting costs CPU linear in the body and at
// most that of 1 MiB of text, whatever the body holds.
//
// The only error is ErrNotJSON. A well-formed body of another shape
// counts what it has of the above, possibly nothing; a field of an
// unexpected type is skipped.
func (c *Counter) Request(enc Encoding, anthropic bool, body []byte) (n int, estimated bool, err error) {
	w := walker{c: c, enc: enc.index(), anthropic: anthropic, s: scanner{b: body}, left: MaxExactBytes}
	if w.s.peek() == '{' {
		w.body()
	} else {
		w.s.skip()
	}
	if w.memo != nil {
		memos.Put(w.memo)
	}
	if w.s.peek(); w.s.bad || w.s.i != len(body) {
		return 0, false, ErrNotJSON
	}
	return w.n, w.estimated, nil
}

// MaxExactBytes is how many bytes of a body's text Request tokenizes.
const MaxExactBytes = 1 << 20

// walker counts one body as its scanner steps through it. Each method
// consumes exactly one JSON value, skipping what it does not count.
type walker struct {
	c         *Counter
	enc       encIndex
	anthropic bool
	s         scanner
	n         int
	left      int  // bytes of text still to tokenize exactly
	estimated bool // some text was estimated
	memo      *memo
}

// count counts a text of the body (see countRaw) against the bytes left.
func (w *walker) count(raw []byte, escaped bool) {
	n, est := w.c.countRaw(w.enc, raw, escaped, w.left, &w.memo)
	w.n += n
	w.left = max(w.left-len(raw), 0)
	w.estimated = w.estimated || est
}

// str counts a JSON string's text.
func (w *walker) str(sp span) {
	w.count(w.s.b[sp.start:sp.end], sp.esc)
}

// json counts the next value's JSON text as written.
func (w *walker) json() {
	w.count(w.s.value(), false)
}

// text counts the next value if it is a string, and skips it otherwise.
func (w *walker) text() {
	if w.s.peek() == '"' {
		w.str(w.s.str())
	} else {
		w.s.skip()
	}
}

// keyIs reports whether a key (or a short string value) is lit. A key
// spelled with escapes is decoded first, as encoding/json would.
func (w *walker) keyIs(k span, lit string) bool {
	raw := w.s.b[k.start:k.end]
	if k.esc {
		return string(unquote(raw)) == lit
	}
	return string(raw) == lit
}

func (w *walker) body() {
	s := &w.s
	s.open('{')
	for first := true; s.more('}', &first); {
		k := s.key()
		switch {
		case w.keyIs(k, "messages"):
			w.messages()
		case w.keyIs(k, "system") && w.anthropic:
			w.content(false)
		case w.keyIs(k, "tools"), w.keyIs(k, "functions"):
			w.json()
		case w.keyIs(k, "prompt"), w.keyIs(k, "input"):
			w.prompt()
		case w.keyIs(k, "instructions") && !w.anthropic:
			w.text()
		default:
			s.skip()
		}
	}
}

func (w *walker) messages() {
	s := &w.s
	if !s.open('[') {
		s.skip()
		return
	}
	for first := true; s.more(']', &first); {
		w.message(!w.anthropic)
	}
	if !w.anthropic {
		w.n += replyPriming
	}
}

// message counts one message; framed adds OpenAI's per-message framing.
func (w *walker) message(framed bool) {
	s := &w.s
	if !s.open('{') {
		s.skip()
		return
	}
	if framed {
		w.n += tokensPerMessage
	}
	for first := true; s.more('}', &first); {
		k := s.key()
		switch {
		case w.keyIs(k, "content"):
			w.content(false)
		case w.anthropic:
			s.skip() // role: the framing Anthropic does not publish
		default:
			// OpenAI counts the text of every field (the cookbook
			// encodes each value of the message).
			switch s.peek() {
			case '"':
				w.str(s.str())
				if w.keyIs(k, "name") {
					w.n += tokensPerName
				}
			case '{', '[':
				w.json() // tool_calls, function_call
			default:
				s.skip()
			}
		}
	}
}

// content counts a message's content: a string, or an array of parts.
// inResult is set inside a tool_result, whose content is not searched
// for further tool results.
func (w *walker) content(inResult bool) {
	s := &w.s
	switch s.peek() {
	case '"':
		w.str(s.str())
	case '[':
		s.open('[')
		for first := true; s.more(']', &first); {
			w.part(inResult)
		}
	default:
		s.skip()
	}
}

// part counts one content part. Its type may come after its text, so the
// fields are noted first and counted once the type is known.
func (w *walker) part(inResult bool) {
	s := &w.s
	if !s.open('{') {
		s.skip()
		return
	}
	var typ, text, name span
	var input []byte
	content := -1 // where a tool_result's content starts
	for first := true; s.more('}', &first); {
		k := s.key()
		switch {
		case w.keyIs(k, "type"), w.keyIs(k, "text"), w.keyIs(k, "name"):
			if s.peek() != '"' {
				s.skip()
				break
			}
			v := s.str()
			switch {
			case w.keyIs(k, "type"):
				typ = v
			case w.keyIs(k, "text"):
				text = v
			default:
				name = v
			}
		case w.keyIs(k, "input"):
			input = s.value()
		case w.keyIs(k, "content") && !inResult:
			content = s.i
			s.skip()
		default:
			s.skip()
		}
	}
	switch {
	case w.keyIs(typ, "text"), w.keyIs(typ, "input_text"), w.keyIs(typ, "output_text"):
		w.str(text)
	case w.keyIs(typ, "tool_use"):
		w.str(name)
		w.count(input, false)
	case w.keyIs(typ, "tool_result") && content >= 0 && !s.bad:
		// Scan the content again, now that it is known to count: it was
		// valid the first time, so this cannot fail.
		end, depth := s.i, s.depth
		s.i = content
		w.content(true)
		s.i, s.depth = end, depth
	}
}

// prompt counts a completion prompt or an embedding input: a string, or
// an array of strings, token numbers, token arrays or (Responses API)
// message items.
func (w *walker) prompt() {
	s := &w.s
	switch s.peek() {
	case '"':
		w.str(s.str())
		return
	case '[':
	default:
		s.skip()
		return
	}
	s.open('[')
	for first := true; s.more(']', &first); {
		switch c := s.peek(); {
		case c == '"':
			w.str(s.str())
		case c == '-' || isDigit(c):
			s.number()
			w.n++
		case c == '[':
			s.open('[')
			for first := true; s.more(']', &first); {
				if c := s.peek(); c == '-' || isDigit(c) {
					s.number()
					w.n++
				} else {
					s.skip()
				}
			}
		case c == '{':
			w.message(false)
		default:
			s.skip()
		}
	}
}
