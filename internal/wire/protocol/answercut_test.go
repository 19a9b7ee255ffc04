package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/internal/wire/tokens"
)

// wordCutter counts a token a word, with the space before it, and cuts
// between words: the tests' own tokenizer.
type wordCutter struct{}

func (wordCutter) Prefix(text string, most int) (string, int) {
	n := 0
	for i := 0; i < len(text); {
		j := i
		for j < len(text) && text[j] == ' ' {
			j++
		}
		for j < len(text) && text[j] != ' ' {
			j++
		}
		if n+1 > most {
			return text[:i], n
		}
		n, i = n+1, j
	}
	return text, n
}

// words is n words of text, each a token to wordCutter.
func words(from, n int) string {
	var b strings.Builder
	for i := from; i < from+n; i++ {
		fmt.Fprintf(&b, " w%d", i)
	}
	return b.String()
}

func logprobsOf(text string) string {
	var parts []string
	for _, w := range strings.Fields(text) {
		parts = append(parts, fmt.Sprintf(`{"token":%q,"logprob":-0.1,"bytes":null,"top_logprobs":[]}`, " "+w))
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func chatAnswer(texts ...string) string {
	var chs []string
	for i, t := range texts {
		chs = append(chs, fmt.Sprintf(`{"index":%d,"message":{"role":"assistant","content":%q,"refusal":null},"logprobs":{"content":%s,"refusal":null},"finish_reason":"stop"}`, i, t, logprobsOf(t)))
	}
	return `{"id":"chatcmpl-1","object":"chat.completion","created":7,"model":"m","choices":[` + strings.Join(chs, ",") +
		`],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8,"completion_tokens_details":{"reasoning_tokens":900}},"system_fingerprint":"fp"}`
}

// reencodings are the answer in compact form and in many others: the
// same meaning, other bytes (spaces, newlines, key order, escapes).
func reencodings(t *testing.T, answer string) [][]byte {
	t.Helper()
	if !json.Valid([]byte(answer)) {
		t.Fatalf("fixture is not JSON: %s", answer)
	}
	out := [][]byte{[]byte(answer)}
	for seed := range uint64(24) {
		dec := json.NewDecoder(strings.NewReader(answer))
		dec.UseNumber()
		n, err := readNode(dec)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		newReencoder(seed).node(&b, n, 0)
		out = append(out, []byte(b.String()))
	}
	return out
}

func decodeAny(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("the cut answer is not JSON (%v): %s", err, b)
	}
	return v
}

// cutEvery cuts each encoding of answer and checks that all come out
// the same by meaning, valid JSON; it returns the first, decoded, and
// the output counted.
func cutEvery(t *testing.T, ep Endpoint, answer string, limit int64) (map[string]any, int64) {
	t.Helper()
	var first map[string]any
	var firstOut int64
	for i, b := range reencodings(t, answer) {
		out, n, cut := CutAnswer(ep, b, limit, wordCutter{})
		if !cut {
			t.Fatalf("encoding %d was not cut: %s", i, b)
		}
		got := decodeAny(t, out)
		if i == 0 {
			first, firstOut = got, n
			continue
		}
		if n != firstOut || !reflect.DeepEqual(got, first) {
			t.Fatalf("encoding %d cuts otherwise (%d, %d tokens):\n%s\n%v\n%v", i, n, firstOut, b, got, first)
		}
	}
	return first, firstOut
}

// An answer within its limit is the provider's own, byte for byte, in
// whatever encoding it came.
func TestCutAnswerLeavesAnAnswerWithinItsLimit(t *testing.T) {
	for _, c := range []struct {
		ep     Endpoint
		answer string
		limit  int64
	}{
		{Endpoints[0], chatAnswer(words(0, 40), words(100, 40)), 80},
		{Endpoints[3], anthropicAnswer(words(0, 80)), 80},
		{Responses, responsesAnswer(words(0, 80)), 85}, // 4 of reasoning, 80 of text, a call's {}
		{Endpoints[1], completionAnswer(words(0, 80)), 80},
	} {
		for _, b := range reencodings(t, c.answer) {
			if out, _, cut := CutAnswer(c.ep, b, c.limit, wordCutter{}); cut || !bytes.Equal(out, b) {
				t.Fatalf("%s: an answer of 80 tokens was changed at a limit of 80:\n%s\n%s", c.ep.Name, b, out)
			}
		}
	}
}

func TestCutAnswerChat(t *testing.T) {
	v, n := cutEvery(t, Endpoints[0], chatAnswer(words(0, 300)), 50)
	ch := v["choices"].([]any)[0].(map[string]any)
	msg := ch["message"].(map[string]any)
	if n != 50 || msg["content"] != words(0, 50) || ch["finish_reason"] != "length" || msg["refusal"] != nil {
		t.Errorf("cut to %d tokens, finish %v: %q", n, ch["finish_reason"], msg["content"])
	}
	if lp := ch["logprobs"].(map[string]any)["content"].([]any); len(lp) != 50 {
		t.Errorf("%d logprobs kept for 50 tokens", len(lp))
	}
	u := v["usage"].(map[string]any)
	if u["completion_tokens"] != 50.0 || u["total_tokens"] != 55.0 || u["prompt_tokens"] != 5.0 ||
		u["completion_tokens_details"].(map[string]any)["reasoning_tokens"] != 50.0 {
		t.Errorf("usage %v, want 50 completion tokens of 55, no detail past 50", u)
	}
	if v["system_fingerprint"] != "fp" || v["id"] != "chatcmpl-1" {
		t.Errorf("the answer's other fields changed: %v", v)
	}
}

// n answers share the limit: each an equal part, and what a short one
// leaves goes to the long ones.
func TestCutAnswerChoicesShareTheLimit(t *testing.T) {
	v, n := cutEvery(t, Endpoints[0], chatAnswer(words(0, 300), words(1000, 10), words(2000, 300)), 101)
	chs := v["choices"].([]any)
	want := []struct {
		text   string
		finish string
	}{{words(0, 46), "length"}, {words(1000, 10), "stop"}, {words(2000, 45), "length"}}
	for i, w := range want {
		ch := chs[i].(map[string]any)
		if got := ch["message"].(map[string]any)["content"]; got != w.text || ch["finish_reason"] != w.finish {
			t.Errorf("choice %d: %d words, finish %v; want %d, %s", i, len(strings.Fields(got.(string))), ch["finish_reason"], len(strings.Fields(w.text)), w.finish)
		}
	}
	if n != 101 {
		t.Errorf("kept %d tokens, want 101", n)
	}
}

// A call is relayed whole or not at all; reasoning counts first.
func TestCutAnswerChatCalls(t *testing.T) {
	args := func(from int) string { return fmt.Sprintf(`{"q":%q}`, words(from, 20)) }
	answer := fmt.Sprintf(`{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","reasoning_content":%q,"content":%q,`+
		`"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":%q}},{"id":"b","type":"function","function":{"name":"f","arguments":%q}}]},"finish_reason":"tool_calls"}],`+
		`"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`, words(0, 10), words(100, 10), args(200), args(300))
	for _, c := range []struct {
		limit int64
		calls int
		kept  int64
	}{{41, 1, 41}, {60, 1, 41}, {20, 0, 20}, {15, 0, 15}} {
		v, n := cutEvery(t, Endpoints[0], answer, c.limit)
		ch := v["choices"].([]any)[0].(map[string]any)
		msg := ch["message"].(map[string]any)
		calls, _ := msg["tool_calls"].([]any)
		if len(calls) != c.calls || n != c.kept || ch["finish_reason"] != "length" {
			t.Errorf("limit %d: %d calls, %d tokens, finish %v; want %d, %d, length", c.limit, len(calls), n, ch["finish_reason"], c.calls, c.kept)
		}
		if c.calls == 0 && msg["tool_calls"] != nil {
			t.Errorf("limit %d: an empty tool_calls is left: %v", c.limit, msg)
		}
		if c.limit == 15 && (msg["reasoning_content"] != words(0, 10) || msg["content"] != words(100, 5)) {
			t.Errorf("limit 15: reasoning %q, content %q", msg["reasoning_content"], msg["content"])
		}
		for _, call := range calls {
			a := call.(map[string]any)["function"].(map[string]any)["arguments"].(string)
			if !json.Valid([]byte(a)) {
				t.Errorf("a call's arguments were cut: %s", a)
			}
		}
	}
}

func completionAnswer(text string) string {
	var toks, lps, offs []string
	off := 0
	for _, w := range strings.Fields(text) {
		toks, lps, offs = append(toks, fmt.Sprintf("%q", " "+w)), append(lps, "-0.5"), append(offs, fmt.Sprint(off))
		off += len(w) + 1
	}
	return fmt.Sprintf(`{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"text":%q,"index":0,`+
		`"logprobs":{"tokens":[%s],"token_logprobs":[%s],"top_logprobs":null,"text_offset":[%s]},"finish_reason":"stop"}],`+
		`"usage":{"prompt_tokens":2,"completion_tokens":9,"total_tokens":11}}`, text, strings.Join(toks, ","), strings.Join(lps, ","), strings.Join(offs, ","))
}

func TestCutAnswerCompletion(t *testing.T) {
	v, n := cutEvery(t, Endpoints[1], completionAnswer(words(0, 200)), 30)
	ch := v["choices"].([]any)[0].(map[string]any)
	lp := ch["logprobs"].(map[string]any)
	if n != 30 || ch["text"] != words(0, 30) || ch["finish_reason"] != "length" ||
		len(lp["tokens"].([]any)) != 30 || len(lp["token_logprobs"].([]any)) != 30 || len(lp["text_offset"].([]any)) != 30 {
		t.Errorf("cut to %d: %q, %v, logprobs %v", n, ch["text"], ch["finish_reason"], lp)
	}
	if u := v["usage"].(map[string]any); u["completion_tokens"] != 30.0 || u["total_tokens"] != 32.0 {
		t.Errorf("usage %v", u)
	}
}

func anthropicAnswer(text string) string {
	return fmt.Sprintf(`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":%q}],`+
		`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":2}}`, text)
}

func TestCutAnswerMessages(t *testing.T) {
	v, n := cutEvery(t, Endpoints[3], anthropicAnswer(words(0, 300)), 216)
	blocks := v["content"].([]any)
	if n != 216 || len(blocks) != 1 || blocks[0].(map[string]any)["text"] != words(0, 216) || v["stop_reason"] != "max_tokens" {
		t.Errorf("cut to %d, stop %v: %v", n, v["stop_reason"], blocks)
	}
	if u := v["usage"].(map[string]any); u["output_tokens"] != 216.0 || u["input_tokens"] != 5.0 {
		t.Errorf("usage %v", u)
	}

	// Thinking (signed) and tool_use are whole or gone; a server
	// tool's result counts nothing; a text block cut to nothing goes.
	answer := fmt.Sprintf(`{"id":"msg_2","type":"message","role":"assistant","model":"m","content":[`+
		`{"type":"thinking","thinking":%q,"signature":"sig"},`+
		`{"type":"server_tool_use","id":"s","name":"web_search","input":{"query":%q}},`+
		`{"type":"web_search_tool_result","tool_use_id":"s","content":[]},`+
		`{"type":"text","text":%q},`+
		`{"type":"tool_use","id":"t","name":"f","input":{"a":%q}}],`+
		`"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":2}}`, words(0, 10), words(50, 3), words(100, 10), words(200, 10))
	for _, c := range []struct {
		limit int64
		types string
		kept  int64
	}{
		// thinking 10 tokens, the search's input 4 ({"query":" and
		// three words), the text 10, the call's input 10.
		{5, "", 0},
		{12, "thinking", 10},
		{14, "thinking server_tool_use web_search_tool_result", 14},
		{16, "thinking server_tool_use web_search_tool_result text", 16},
		{33, "thinking server_tool_use web_search_tool_result text", 24},
	} {
		v, n := cutEvery(t, Endpoints[3], answer, c.limit)
		var types []string
		for _, b := range v["content"].([]any) {
			types = append(types, b.(map[string]any)["type"].(string))
		}
		if strings.Join(types, " ") != c.types || n != c.kept || v["stop_reason"] != "max_tokens" {
			t.Errorf("limit %d: blocks %v, %d tokens, stop %v; want %s, %d", c.limit, types, n, v["stop_reason"], c.types, c.kept)
		}
	}
}

func responsesAnswer(text string) string {
	return fmt.Sprintf(`{"id":"resp_1","object":"response","created_at":1,"status":"completed","incomplete_details":null,"model":"m","output":[`+
		`{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":%q}]},`+
		`{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":%q,"annotations":[],"logprobs":%s}]},`+
		`{"type":"function_call","id":"fc_1","call_id":"c","name":"f","arguments":"{}","status":"completed"}],`+
		`"usage":{"input_tokens":4,"output_tokens":3,"total_tokens":7,"output_tokens_details":{"reasoning_tokens":3}}}`, words(900, 4), text, logprobsOf(text))
}

func TestCutAnswerResponses(t *testing.T) {
	v, n := cutEvery(t, Responses, responsesAnswer(words(0, 300)), 54)
	out := v["output"].([]any)
	if len(out) != 2 {
		t.Fatalf("%d output items, want the reasoning and the message: %v", len(out), out)
	}
	msg := out[1].(map[string]any)
	part := msg["content"].([]any)[0].(map[string]any)
	if n != 54 || part["text"] != words(0, 50) || msg["status"] != "incomplete" || len(part["logprobs"].([]any)) != 50 {
		t.Errorf("cut to %d: %q, status %v", n, part["text"], msg["status"])
	}
	if v["status"] != "incomplete" || v["incomplete_details"].(map[string]any)["reason"] != "max_output_tokens" {
		t.Errorf("status %v, details %v", v["status"], v["incomplete_details"])
	}
	if u := v["usage"].(map[string]any); u["output_tokens"] != 54.0 || u["total_tokens"] != 58.0 ||
		u["output_tokens_details"].(map[string]any)["reasoning_tokens"] != 3.0 {
		t.Errorf("usage %v", u)
	}
	// Cut before any text: the message goes.
	v, _ = cutEvery(t, Responses, responsesAnswer(words(0, 300)), 4)
	if out := v["output"].([]any); len(out) != 1 || out[0].(map[string]any)["type"] != "reasoning" {
		t.Errorf("at 4 tokens, output %v; want the reasoning alone", out)
	}
}

// Keys a decoder matches without regard to case, and the last of a
// repeated key, are read as encoding/json reads them.
func TestCutAnswerReadsKeysAsTheDecoder(t *testing.T) {
	answer := fmt.Sprintf(`{"Choices":[{"message":{"content":"decoy","CONTENT":%q},"finish_reason":"stop","Finish_Reason":"stop"}],"usage":{"completion_tokens":1}}`, words(0, 100))
	out, n, cut := CutAnswer(Endpoints[0], []byte(answer), 20, wordCutter{})
	var v struct {
		Choices []struct {
			Message struct {
				Content string
			}
			FinishReason string `json:"finish_reason"`
		}
	}
	if err := json.Unmarshal(out, &v); err != nil || !cut || n != 20 || len(v.Choices) != 1 ||
		v.Choices[0].Message.Content != words(0, 20) || v.Choices[0].FinishReason != "length" {
		t.Fatalf("cut %v to %d (%v): %s", cut, n, err, out)
	}
}

// Whatever well-formed JSON comes as an answer, of whatever shape,
// CutAnswer returns it untouched or cut to valid JSON within the limit;
// given other bytes (against its precondition) it never panics, and
// returns JSON when it cuts.
func FuzzCutAnswer(f *testing.F) {
	for _, a := range []string{chatAnswer(words(0, 50), words(60, 9)), completionAnswer(words(0, 40)), anthropicAnswer(words(0, 40)), responsesAnswer(words(0, 40)),
		`{"choices":[{"message":{"content":["x"],"tool_calls":{"a":1}}},null,7],"usage":"no"}`, `{"content":[{"type":"text"},{"type":"tool_use","input":[1,{"a":"b c d"}]}]}`,
		`{"output":[{"type":"message","content":[{"type":"output_text","text":" a b c","logprobs":[{"token":7}]}]}]}`,
		`{"choices":[{"message":{"content":"a \\\" b c d e f g h i j k l m n o p q r s t u v w x y z"`, `{"choices":[,,{"text":" a b c d e f g h i j k l m n o p q r s t u v"}]}`} {
		for i := range 4 {
			f.Add([]byte(a), uint8(i), uint8(7))
		}
	}
	f.Fuzz(func(t *testing.T, body []byte, ep, limit uint8) {
		e := []Endpoint{Endpoints[0], Endpoints[1], Endpoints[3], Responses}[int(ep)%4]
		out, n, cut := CutAnswer(e, body, int64(limit%64)+1, wordCutter{})
		if !json.Valid(body) {
			if cut && !json.Valid(out) {
				t.Fatalf("a cut of bytes that are not JSON is not JSON: %q", out)
			}
			return
		}
		switch {
		case !cut && !bytes.Equal(out, body):
			t.Fatalf("an answer left uncut was changed:\n%s\n%s", body, out)
		case cut && !json.Valid(out):
			t.Fatalf("the cut answer is not JSON: %s", out)
		case cut && n > int64(limit%64)+1:
			t.Fatalf("cut to %d tokens past the limit %d", n, int64(limit%64)+1)
		}
	})
}

// What checking an answer against its limit costs, in the encodings
// tokens.Output counts in: an answer within it (its bytes over the
// limit, so it is read and counted), and one cut.
func BenchmarkCutAnswer(b *testing.B) {
	prose := func(n int) string {
		vocab := strings.Fields("the gateway relays what the model wrote and counts it as the provider would")
		var s strings.Builder
		for i := range n {
			s.WriteString(" " + vocab[i%len(vocab)])
		}
		return s.String()
	}
	plain := func(text string) string {
		return fmt.Sprintf(`{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":%q},`+
			`"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":9,"total_tokens":14}}`, text)
	}
	c := tokens.NewCounter(0)
	for _, k := range []struct {
		name     string
		words    int
		limit    int64
		logprobs bool
	}{
		{"1k words within 4096", 1000, 4096, false},
		{"10k words within 40960", 10_000, 40960, false},
		{"10k words cut at 216", 10_000, 216, false},
		{"1k words and logprobs cut at 216", 1000, 216, true},
	} {
		for _, model := range []string{"gpt-4o", "mock-claude"} {
			body := []byte(plain(prose(k.words)))
			if k.logprobs {
				body = []byte(chatAnswer(prose(k.words)))
			}
			b.Run(k.name+", "+model, func(b *testing.B) {
				b.SetBytes(int64(len(body)))
				for b.Loop() {
					o := c.Output(model, BytesPerToken)
					CutAnswer(Endpoints[0], body, k.limit, o)
					o.Close()
				}
			})
		}
	}
}
