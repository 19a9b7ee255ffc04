package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf16"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// answerRead is what a reading of a whole answer says of it.
type answerRead struct {
	Valid  bool
	Tokens int
	Found  bool
	Finish string
	Input  protocol.Input
}

// readByPath reads answer as relayLarge does, its decoder fed one byte a
// read when oneByte.
func readByPath(answer []byte, oneByte bool) answerRead {
	src := bytes.NewReader(answer)
	dec := jsontext.NewDecoder(src, answerDecoding...)
	if oneByte {
		dec = jsontext.NewDecoder(iotest.OneByteReader(src), answerDecoding...)
	}
	var u answerPath
	if u.read(dec) != nil {
		return answerRead{}
	}
	r := answerRead{Valid: true}
	r.Tokens, r.Found, r.Finish, r.Input = u.result()
	return r
}

// readHeld reads answer as the protocol package reads one held whole:
// OutputTokens, InputOf and CachedOf.
func readHeld(answer []byte) answerRead {
	var r answerRead
	r.Tokens, r.Found, r.Valid, r.Finish = protocol.OutputTokens(answer)
	if !r.Valid {
		return answerRead{}
	}
	if n, found := protocol.InputOf(answer); found {
		r.Input = protocol.Input{Tokens: n, Found: true, Cached: protocol.CachedOf(answer)}
	}
	return r
}

// readAnswerUsage reads answer with AnswerUsage, relayWhole's reading.
func readAnswerUsage(answer []byte) answerRead {
	var r answerRead
	r.Tokens, r.Found, r.Valid, r.Finish, r.Input = protocol.AnswerUsage(answer)
	if !r.Valid {
		return answerRead{}
	}
	return r
}

// pathAnswers are whole answers of every dialect, small enough to hold,
// with the decoys and odd shapes AnswerUsage has rules for.
var pathAnswers = map[string]string{
	"openai":                 `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hi \"there\""},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":7,"total_tokens":19,"prompt_tokens_details":{"cached_tokens":4}}}`,
	"openai tool call decoy": `{"choices":[{"message":{"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"completion_tokens\":999,\"finish_reason\":\"x\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":5,"completion_tokens":11}}`,
	"openai usage first":     `{"usage":{"completion_tokens":3,"prompt_tokens":2},"choices":[{"finish_reason":"length","message":{"content":"usage"}}]}`,
	"openai two choices":     `{"choices":[{"finish_reason":"stop"},{"finish_reason":"length","usage":{"completion_tokens":1}}],"usage":{"completion_tokens":9}}`,
	"anthropic tool_use decoy": `{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"ok"},{"type":"tool_use","id":"t","name":"f","input":{"output_tokens":999,"usage":{"output_tokens":5,"input_tokens":77},"stop_reason":"bogus","choices":[{"finish_reason":"no"}]}}],` +
		`"stop_reason":"tool_use","usage":{"input_tokens":10,"cache_creation_input_tokens":3,"cache_read_input_tokens":4,"output_tokens":42}}`,
	"anthropic usage first": `{"usage":{"output_tokens":8,"input_tokens":1},"stop_reason":"end_turn","content":[{"type":"tool_use","input":{"usage":{"output_tokens":1}}}]}`,
	"responses": `{"id":"resp_1","object":"response","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[{"type":"message","content":[{"type":"output_text","text":"hi"}]}],` +
		`"usage":{"input_tokens":9,"input_tokens_details":{"cached_tokens":2},"output_tokens":30,"output_tokens_details":{"reasoning_tokens":10},"total_tokens":39}}`,
	"embeddings":          `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,-0.2]}],"model":"e","usage":{"prompt_tokens":4096,"total_tokens":4096}}`,
	"no usage":            `{"choices":[{"finish_reason":"stop"}]}`,
	"usage a string":      `{"usage":"none","choices":[{"finish_reason":"stop"}]}`,
	"count a fraction":    `{"usage":{"completion_tokens":1.5,"prompt_tokens":3}}`,
	"count an exponent":   `{"usage":{"output_tokens":1e2}}`,
	"count a string":      `{"usage":{"completion_tokens":"7"}}`,
	"count overflows":     `{"usage":{"completion_tokens":99999999999999999999}}`,
	"count out of range":  `{"usage":{"completion_tokens":100000000,"output_tokens":5,"prompt_tokens":-1,"input_tokens":6}}`,
	"count null":          `{"usage":{"completion_tokens":null,"output_tokens":4}}`,
	"input a string":      `{"usage":{"prompt_tokens":"3","input_tokens":5,"cache_read_input_tokens":2,"output_tokens":1}}`,
	"details of a number": `{"usage":{"prompt_tokens":10,"prompt_tokens_details":5,"completion_tokens":1}}`,
	"details null":        `{"usage":{"prompt_tokens":10,"prompt_tokens_details":null,"input_tokens_details":{"cached_tokens":3},"completion_tokens":1}}`,
	"cached past input":   `{"usage":{"prompt_tokens":10,"prompt_tokens_details":{"cached_tokens":50},"completion_tokens":1}}`,
	"choices an object":   `{"choices":{"finish_reason":"stop"},"usage":{"completion_tokens":1}}`,
	"choices empty":       `{"choices":[],"stop_reason":"end_turn","usage":{"output_tokens":2}}`,
	"choices null":        `{"choices":null,"stop_reason":"end_turn"}`,
	"choice a number":     `{"choices":[1],"usage":{"completion_tokens":1}}`,
	"choice null":         `{"choices":[null,{"finish_reason":"x"}],"usage":{"completion_tokens":1}}`,
	"finish a number":     `{"choices":[{"finish_reason":1}],"usage":{"completion_tokens":1}}`,
	"finish null":         `{"choices":[{"finish_reason":null}],"stop_reason":"s","usage":{"completion_tokens":1}}`,
	"finish too long":     `{"choices":[{"finish_reason":"a reason far longer than any real one"}],"usage":{"completion_tokens":1}}`,
	"finish escaped":      `{"choices":[{"finish_reason":"st\u006fp"}],"usage":{"completion_tokens":1}}`,
	"finish non-ascii":    `{"stop_reason":"fin ☃","usage":{"output_tokens":1}}`,
	"key cased":           `{"Usage":{"Completion_Tokens":6,"PROMPT_TOKENS":2},"Choices":[{"Finish_Reason":"stop"}]}`,
	"key folded":          `{"uſage":{"output_tokens":6},"stop_reaſon":"end_turn"}`,
	"top array":           `[{"usage":{"completion_tokens":1}}]`,
	"top string":          `"usage"`,
	"top null":            `null`,
	"empty object":        `{}`,
	"usage null":          `{"usage":null,"stop_reason":"end_turn"}`,
	"usage array":         `{"usage":[{"completion_tokens":1}]}`,
}

// repeatedAnswers repeat a key, so they are not shuffled.
var repeatedAnswers = map[string]string{
	"usage twice":        `{"usage":{"completion_tokens":5,"prompt_tokens":3},"usage":{"completion_tokens":6}}`,
	"usage then null":    `{"usage":{"completion_tokens":5},"usage":null}`,
	"count then null":    `{"usage":{"completion_tokens":5,"completion_tokens":null,"output_tokens":2}}`,
	"details twice":      `{"usage":{"prompt_tokens":9,"prompt_tokens_details":{"cached_tokens":4},"prompt_tokens_details":{},"completion_tokens":1}}`,
	"choices twice":      `{"choices":[{"finish_reason":"stop"}],"choices":[{}],"usage":{"completion_tokens":1}}`,
	"choices then empty": `{"choices":[{"finish_reason":"stop"}],"choices":[],"usage":{"completion_tokens":1}}`,
	"stop twice":         `{"stop_reason":"a","stop_reason":"b","usage":{"output_tokens":1}}`,
}

// malformedAnswers are refused by both readings.
var malformedAnswers = []string{
	`{"usage":{"completion_tokens":5}`,
	`{"usage":{"completion_tokens":5}}}`,
	`{"usage":{"completion_tokens":5}} {}`,
	`{"usage":{"completion_tokens":05}}`,
	`{"usage":{"completion_tokens":5,}}`,
	"{\"a\":\"\x01\"}",
	`{"a":"\u00"}`,
	`{"a" 1}`,
	`{'a':1}`,
	``,
	` `,
}

// TestAnswerPathAgreesWithAnswerUsage: a large answer, read by path as it
// is relayed, and a small one, read whole, are read alike. The same
// answers, written compact, spaced, pretty, with keys shuffled, in
// capitals or \u-escaped, read by path whole or fed a byte at a time,
// give what the protocol package's readers of whole answers give for
// that form, and for the compact one.
//
// AnswerUsage, relayWhole's reading, is those readers in one pass but
// for one rule: an answer without an output count that its fast scan
// leaves to encoding/json (an escaped or capitalised key) has no input
// either (usage.go: "if found"), where InputOf, and its own fast scan,
// read one. That difference is allowed below, and only that one.
func TestAnswerPathAgreesWithAnswerUsage(t *testing.T) {
	check := func(t *testing.T, name string, forms []string, answer string) {
		compact := readHeld(encodeAs(t, []byte(answer), "compact"))
		if !compact.Valid {
			t.Fatalf("%s: the protocol package refuses it", name)
		}
		for _, form := range forms {
			enc := encodeAs(t, []byte(answer), form)
			want := readHeld(enc)
			if want != compact {
				t.Errorf("%s, %s: the protocol package reads this form %+v, the compact one %+v", name, form, want, compact)
			}
			for _, oneByte := range []bool{false, true} {
				if got := readByPath(enc, oneByte); got != want {
					t.Errorf("%s, %s (one byte a read %v): by path %+v, held whole %+v\n%s", name, form, oneByte, got, want, enc)
				}
			}
			au := readAnswerUsage(enc)
			if !au.Found && !au.Input.Found {
				au.Input = want.Input
			}
			if au != want {
				t.Errorf("%s, %s: AnswerUsage %+v, held whole %+v", name, form, au, want)
			}
		}
	}
	all := []string{"compact", "spaced", "pretty", "shuffled", "escaped", "upper"}
	for name, answer := range pathAnswers {
		check(t, name, all, answer)
	}
	for name, answer := range repeatedAnswers {
		check(t, name, []string{"compact", "spaced", "pretty", "escaped"}, answer)
	}
	for _, answer := range malformedAnswers {
		for _, oneByte := range []bool{false, true} {
			if got := readByPath([]byte(answer), oneByte); got.Valid || readHeld([]byte(answer)).Valid {
				t.Errorf("%q: by path %+v, AnswerUsage valid %v; want both to refuse it", answer, got, readHeld([]byte(answer)).Valid)
			}
		}
	}
}

// TestAnswerPathOnItsOwn pins what the path reading says of the answers
// the relay meets most, apart from AnswerUsage: a count inside a tool's
// input or a choice past the first is never read.
func TestAnswerPathOnItsOwn(t *testing.T) {
	for _, c := range []struct {
		name string
		want answerRead
	}{
		{"anthropic tool_use decoy", answerRead{true, 42, true, "tool_use", protocol.Input{Tokens: 17, Found: true, Cached: 4}}},
		{"openai tool call decoy", answerRead{true, 11, true, "tool_calls", protocol.Input{Tokens: 5, Found: true}}},
		{"openai two choices", answerRead{true, 9, true, "stop", protocol.Input{}}},
		{"responses", answerRead{true, 30, true, "", protocol.Input{Tokens: 9, Found: true, Cached: 2}}},
		{"key folded", answerRead{true, 6, true, "end_turn", protocol.Input{}}},
		{"count a fraction", answerRead{Valid: true}},
	} {
		for _, form := range []string{"compact", "pretty", "escaped"} {
			if got := readByPath(encodeAs(t, []byte(pathAnswers[c.name]), form), true); got != c.want {
				t.Errorf("%s, %s: %+v, want %+v", c.name, form, got, c.want)
			}
		}
	}
}

// FuzzAnswerPath: whatever the bytes, the path reading refuses what
// encoding/json refuses, and of what it accepts says what OutputTokens
// and InputOf say of it.
func FuzzAnswerPath(f *testing.F) {
	for _, a := range pathAnswers {
		f.Add([]byte(a))
	}
	for _, a := range repeatedAnswers {
		f.Add([]byte(a))
	}
	for _, a := range malformedAnswers {
		f.Add([]byte(a))
	}
	f.Fuzz(func(t *testing.T, answer []byte) {
		got := readByPath(answer, false)
		if got.Valid != json.Valid(answer) {
			t.Fatalf("by path valid %v, encoding/json %v", got.Valid, json.Valid(answer))
		}
		if !got.Valid {
			return
		}
		if want := readHeld(answer); got != want {
			t.Fatalf("by path %+v, held whole %+v", got, want)
		}
	})
}

// jnode is a JSON value as read, to be written again in another form.
type jnode struct {
	kind  jsontext.Kind
	raw   []byte // a number, true, false or null as written
	str   string // a string's value
	keys  []string
	elems []*jnode
}

func parseNode(dec *jsontext.Decoder) (*jnode, error) {
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, err
	}
	n := &jnode{kind: tok.Kind()}
	switch n.kind {
	case '{', '[':
		end := jsontext.Kind('}')
		if n.kind == '[' {
			end = ']'
		}
		for dec.PeekKind() != end {
			if n.kind == '{' {
				k, err := dec.ReadToken()
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, k.String())
			}
			e, err := parseNode(dec)
			if err != nil {
				return nil, err
			}
			n.elems = append(n.elems, e)
		}
		_, err = dec.ReadToken()
	case '"':
		n.str = tok.String()
	default:
		n.raw = []byte(tok.String()) // a number as written
	}
	return n, err
}

// encodeAs writes the JSON value answer holds again: compact, spaced
// (", " and ": ", as Python writes), pretty (indented lines), shuffled
// (keys in another order), escaped (every string's characters as \u
// escapes) or upper (keys in capitals).
func encodeAs(t testing.TB, answer []byte, form string) []byte {
	dec := jsontext.NewDecoder(bytes.NewReader(answer), answerDecoding...)
	n, err := parseNode(dec)
	if err != nil {
		t.Fatalf("encodeAs %q: %v", answer, err)
	}
	var b strings.Builder
	rng := rand.New(rand.NewPCG(uint64(len(answer)), 29))
	n.write(&b, form, 0, rng)
	return []byte(b.String())
}

func (n *jnode) write(b *strings.Builder, form string, depth int, rng *rand.Rand) {
	comma, colon := ",", ":"
	if form == "spaced" {
		comma, colon = ", ", ": "
	}
	line := func(d int) {
		if form == "pretty" {
			b.WriteString("\n" + strings.Repeat("  ", d))
		}
	}
	switch n.kind {
	case '{', '[':
		open, end := "{", "}"
		if n.kind == '[' {
			open, end = "[", "]"
		}
		b.WriteString(open)
		order := make([]int, len(n.elems))
		for i := range order {
			order[i] = i
		}
		if form == "shuffled" && n.kind == '{' {
			rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		}
		for i, at := range order {
			if i > 0 {
				b.WriteString(comma)
			}
			line(depth + 1)
			if n.kind == '{' {
				key := n.keys[at]
				if form == "upper" {
					key = strings.ToUpper(key)
				}
				writeString(b, key, form)
				b.WriteString(colon)
			}
			n.elems[at].write(b, form, depth+1, rng)
		}
		if len(order) > 0 {
			line(depth)
		}
		b.WriteString(end)
	case '"':
		writeString(b, n.str, form)
	default:
		b.Write(n.raw)
	}
}

func writeString(b *strings.Builder, s, form string) {
	if form != "escaped" {
		q, _ := jsontext.AppendQuote(nil, s)
		b.Write(q)
		return
	}
	b.WriteByte('"')
	for _, r := range s {
		for _, u := range utf16.Encode([]rune{r}) {
			fmt.Fprintf(b, `\u%04x`, u)
		}
	}
	b.WriteByte('"')
}

// TestAnswerPathHoldsOneToken: reading a large answer by path allocates
// what the decoder's buffer needs for the longest token, never the
// answer, and nothing a token.
func TestAnswerPathHoldsOneToken(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(`{"object":"list","data":[`)
	for i := range 1500 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"object":"embedding","index":%d,"embedding":[%s0.5]}`, i, strings.Repeat("-0.012345678,", 200))
	}
	b.WriteString(`],"usage":{"prompt_tokens":4096,"total_tokens":4096}}`)
	answer := b.Bytes()
	var got answerRead
	allocs := testing.AllocsPerRun(1, func() {
		got = readByPath(answer, false)
	})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	readByPath(answer, false)
	runtime.ReadMemStats(&after)
	held := after.TotalAlloc - before.TotalAlloc
	t.Logf("a %d MiB answer of about %d JSON tokens: %.0f allocations, %d KiB", len(answer)>>20, 1500*205, allocs, held>>10)
	if want := (answerRead{Valid: true, Input: protocol.Input{Tokens: 4096, Found: true}}); got != want {
		t.Fatalf("read %+v, want %+v", got, want)
	}
	if allocs > 50 || held > 256<<10 {
		t.Errorf("%.0f allocations, %d KiB for a %d KiB answer; want the decoder's buffer only", allocs, held>>10, len(answer)>>10)
	}
}
