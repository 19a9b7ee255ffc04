package tokens

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/wire/tokens/tokenstest"
)

// requestCases are bodies of every shape Request documents, in both
// dialects. Each must be valid JSON without duplicate keys, so that the
// reference sees what the walker sees.
var requestCases = []struct {
	name      string
	anthropic bool
	body      string
}{
	// OpenAI chat completions.
	{"openai/strings", false, `{"model":"gpt-4o","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"tiktoken is great!"}],"temperature":0.2}`},
	{"openai/name", false, `{"messages":[{"role":"system","name":"example_user","content":"New synergies will help drive top-line growth."},{"role":"user","name":"alice","content":"hi"}]}`},
	{"openai/parts", false, `{"messages":[{"role":"user","content":[{"type":"text","text":"Look at this picture"},{"type":"image_url","image_url":{"url":"https://example.com/a.png","detail":"high"}},{"text":"and tell me what it shows","type":"text"},{"type":"input_audio","input_audio":{"data":"AAAA","format":"wav"}}]}]}`},
	{"openai/tool_calls", false, `{"messages":[{"role":"user","content":"Weather in Paris?"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_abc","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},{"role":"tool","tool_call_id":"call_abc","content":"18C and sunny"}],"tools":[{"type":"function","function":{"name":"get_weather","description":"Current weather for a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}],"tool_choice":"auto"}`},
	{"openai/functions", false, `{"messages":[{"role":"assistant","content":null,"function_call":{"name":"lookup","arguments":"{}"}},{"role":"function","name":"lookup","content":"42"}],"functions":[{"name":"lookup","parameters":{"type":"object"}}]}`},
	{"openai/escapes", false, `{"messages":[{"role":"user","content":"line one\nline \"two\"\t\u00e9t\u00e9 \ud83d\ude00 smile, lone \ud800 high, lone \udc00 low, \ud800\u0041 broken pair, \\ back\/slash \u0000 nul \b\f\r"}]}`},
	{"openai/escaped-keys", false, `{"mess\u0061ges":[{"r\u006fle":"user","cont\u0065nt":"hi there","n\u0061me":"bob"}],"t\u006fols":[{"x":1}]}`},
	{"openai/pretty", false, "{\n  \"messages\" : [\n    {\n      \"role\" : \"user\" ,\n      \"content\" : [ { \"type\" : \"text\" , \"text\" : \"spaced out\" } ]\n    }\n  ] ,\r\n\t\"tools\" : [ {\"a\" : [ 1 , 2 ] } ]\n}\n"},
	{"openai/unicode", false, `{"messages":[{"role":"user","content":"日本語のテキストを数えます。Привет, как дела? 你好，世界。नमस्ते दुनिया 🙂👍🏽 مرحبا بالعالم"}]}`},
	{"openai/wrong-types", false, `{"messages":[1,null,"s",[],{"role":"user","content":7},{"role":"user","content":{"text":"x"}},{"role":"user","content":[1,"two",null,{"type":3,"text":"t"},{"type":"text","text":5}],"weight":1.5,"flag":true}],"tools":null,"prompt":{"a":1},"instructions":["x"]}`},
	{"openai/messages-not-array", false, `{"messages":{"role":"user","content":"hi"}}`},
	{"openai/system-ignored", false, `{"system":"not counted for OpenAI","messages":[]}`},
	{"openai/empty", false, `{}`},
	{"openai/array", false, `[{"messages":[{"role":"user","content":"hi"}]}]`},
	{"openai/string", false, `"just a string"`},
	{"openai/deep-unknown", false, `{"metadata":{"a":[[[[{"b":"c"}]]]]},"messages":[{"role":"user","content":"hi","extra":{"nested":[{"deep":"x"}]}}]}`},
	// Completions and embeddings.
	{"prompt/string", false, `{"model":"gpt-3.5-turbo-instruct","prompt":"Say this is a test"}`},
	{"prompt/strings", false, `{"prompt":["Say this is a test","and this, too"]}`},
	{"prompt/tokens", false, `{"prompt":[1212,318,257,1332]}`},
	{"prompt/token-arrays", false, `{"prompt":[[1212,318],[257],[],[1332,-1,2.5e3,"x",[7]]]}`},
	{"prompt/mixed", false, `{"prompt":["text",17,[1,2],null,true,{"role":"user","content":"item"}]}`},
	{"embeddings/string", false, `{"model":"text-embedding-3-small","input":"The food was delicious and the waiter..."}`},
	{"embeddings/strings", false, `{"model":"text-embedding-3-small","input":["first document","second \u00fcber document"],"encoding_format":"float"}`},
	{"embeddings/tokens", false, `{"input":[[100,200,300],[400]]}`},
	// Responses API.
	{"responses/items", false, `{"model":"gpt-4o","instructions":"Be brief.","input":[{"role":"user","content":[{"type":"input_text","text":"hello"},{"type":"input_image","image_url":"https://x/y.png"}]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"hi there"}]}]}`},
	{"responses/string", false, `{"model":"gpt-4o","instructions":"Answer in French.","input":"What is the capital of France?"}`},
	// Anthropic Messages.
	{"anthropic/strings", true, `{"model":"claude-3-5-sonnet-20241022","max_tokens":1024,"system":"You are a careful assistant.","messages":[{"role":"user","content":"Hello, Claude"},{"role":"assistant","content":"Hello!"},{"role":"user","content":"Can you describe LLMs to me?"}]}`},
	{"anthropic/system-blocks", true, `{"system":[{"type":"text","text":"You are a poet.","cache_control":{"type":"ephemeral"}},{"type":"text","text":"Write in iambs."}],"messages":[{"role":"user","content":[{"type":"text","text":"A sonnet, please."}]}]}`},
	{"anthropic/tools", true, `{"tools":[{"name":"get_weather","description":"Get the current weather","input_schema":{"type":"object","properties":{"location":{"type":"string"}},"required":["location"]}}],"messages":[{"role":"user","content":"Weather in SF?"},{"role":"assistant","content":[{"type":"text","text":"Let me check."},{"type":"tool_use","id":"toolu_01","name":"get_weather","input":{"location":"San Francisco, CA","unit":"f"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01","content":"65 degrees"},{"content":[{"type":"text","text":"Also: fog."},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBOR"}}],"type":"tool_result","tool_use_id":"toolu_02","is_error":false}]}]}`},
	{"anthropic/tool_result-nested", true, `{"messages":[{"role":"user","content":[{"type":"tool_result","content":[{"type":"tool_result","content":"not searched"},{"type":"text","text":"inner","content":"ignored"},{"type":"tool_use","name":"n","input":[1,"two"]}]},{"type":"tool_result","content":null},{"type":"tool_result"},{"type":"tool_use","name":"no_input"}]}]}`},
	{"anthropic/image", true, `{"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://example.com/cat.jpg"}},{"type":"document","source":{"type":"text","media_type":"text/plain","data":"ignored text"}},{"type":"text","text":"What is this?"}]}]}`},
	{"anthropic/openai-only-fields", true, `{"instructions":"not counted","messages":[{"role":"user","name":"not counted","content":"counted"}]}`},
	{"anthropic/escapes", true, `{"system":"tab\there \ud83e\udd16 robot","messages":[{"role":"user","content":[{"type":"text","text":"quote \" backslash \\ \u2028 sep"}]}]}`},
	{"anthropic/legacy-prompt", true, `{"model":"claude-2","prompt":"\n\nHuman: Hello\n\nAssistant:"}`},
}

func TestRequestMatchesReference(t *testing.T) {
	c := NewCounter(0)
	for _, tc := range requestCases {
		t.Run(tc.name, func(t *testing.T) {
			body := []byte(tc.body)
			if !json.Valid(body) || duplicateKeys(body) {
				t.Fatal("case body is not valid JSON without duplicate keys")
			}
			for _, enc := range []Encoding{O200kBase, Cl100kBase} {
				want := refRequest(enc, tc.anthropic, body)
				for pass := range 2 { // the second pass answers from the cache
					got, _, err := c.Request(enc, tc.anthropic, body)
					if err != nil || got != want {
						t.Errorf("%s pass %d: Request = %d, %v; reference %d", enc, pass, got, err, want)
					}
				}
			}
		})
	}
}

// TestRequestCookbook checks the walker against usage.prompt_tokens as
// OpenAI's API reported it for the example conversation in OpenAI's
// cookbook "How to count tokens with tiktoken": 129 for the gpt-3.5-turbo
// and gpt-4 models (cl100k_base), 124 for gpt-4o and gpt-4o-mini
// (o200k_base).
func TestRequestCookbook(t *testing.T) {
	body := `{"model":"gpt-4o","messages":[
	{"role":"system","content":"You are a helpful, pattern-following assistant that translates corporate jargon into plain English."},
	{"role":"system","name":"example_user","content":"New synergies will help drive top-line growth."},
	{"role":"system","name":"example_assistant","content":"Things working well together will increase revenue."},
	{"role":"system","name":"example_user","content":"Let's circle back when we have more bandwidth to touch base on opportunities for increased leverage."},
	{"role":"system","name":"example_assistant","content":"Let's talk later when we're less busy about how to do better."},
	{"role":"user","content":"This late pivot means we don't have time to boil the ocean for the client deliverable."}]}`
	c := NewCounter(0)
	for enc, want := range map[Encoding]int{Cl100kBase: 129, O200kBase: 124} {
		if got, _, err := c.Request(enc, false, []byte(body)); err != nil || got != want {
			t.Errorf("%s: Request = %d, %v; the API counted %d", enc, got, err, want)
		}
	}
}

func TestRequestChat(t *testing.T) {
	c := NewCounter(0)
	ch := tokenstest.NewChat("gpt-4o", 1)
	for _, enc := range []Encoding{O200kBase, Cl100kBase} {
		want := refRequest(enc, false, ch.Body)
		if want < 1800 || want > 2200 {
			t.Errorf("%s: the benchmark chat has %d tokens, not about 2,000", enc, want)
		}
		for i := range uint64(3) {
			ch.Stamp(i * 12345679) // same length and count, new text
			if got, _, err := c.Request(enc, false, ch.Body); err != nil || got != want {
				t.Errorf("%s stamp %d: Request = %d, %v; want %d", enc, i, got, err, want)
			}
			ch.StampLast(i*7 + 1)
			if got, _, err := c.Request(enc, false, ch.Body); err != nil || got != want {
				t.Errorf("%s stamp last %d: Request = %d, %v; want %d", enc, i, got, err, want)
			}
		}
	}
}

// notJSON are bodies encoding/json refuses, each of which the scanner
// must refuse too; a few near misses that it accepts are mixed in, and
// the test asks json.Valid about every one.
var notJSON = []string{
	``, ` `, `{`, `}`, `[`, `{"messages":`, `{"messages":[`, `{"messages":[{`,
	`{"messages":[{"role":"user","content":"hi"}]`, `{"a":1}}`, `{"a":1} x`, `{"a":1}{}`,
	`{"a" 1}`, `{"a":}`, `{a:1}`, `{'a':1}`, `{"a":1,}`, `[1,]`, `[,1]`, `{,"a":1}`, `[1 2]`,
	`{"a":1 "b":2}`, `{"messages":[{"role":"user",}]}`, `{"messages":[{"content":"x"},]}`,
	`{"prompt":[1,]}`, `{"prompt":[[1,],2]}`, `{"input":[[1 2]]}`,
	`-`, `--1`, `01`, `-01`, `1.`, `.5`, `1e`, `1e+`, `1E-`, `+1`, `0x10`, `1.5e3`, `-0`, `-0.0e-0`, `1E+2`,
	`tru`, `nul`, `fals`, `truex`, `True`, `NULL`, `true`, `null`, `false`,
	`"abc`, `"a\"`, `"\x"`, `"\u12"`, `"\u12G4"`, `"\U1234"`, `"\'"`, "\"tab\there\"", "\"nl\nhere\"", "\"\x00\"",
	"\"\x7f del\"", "\"\xff\xfe invalid utf-8\"", `"\ud800"`, `"\/"`,
	"\ufeff{}", "{}\x00", "{\v}", "{\f}", "{\u00a0}", " {} ", "\t\r\n{}\n",
	`{"messages":[{"content":[{"type":"tool_result","content":[1,]}]}]}`,
	`{"messages":[{"content":[{"type":"tool_result","content":"x"]}]}`,
	`{"messages":[{"content":[{"type":"text","text":"x",}]}]}`,
	`{"system":[{"type":"text","text":"x"}],"messages":[{"content":[{"type":"tool_use","input":{"a":}}]}]}`,
	`{"tools":[{"a":[1,{"b":nul}]}]}`,
	`{"messages":[{"role":"user","content":"hi"}],"x":[[[[[[]]]]]]]}`,
	`{"messages":[{"role":"user","content":"hi"}],"x":{"y":{"z":[}}}`,
}

func TestRequestNotJSON(t *testing.T) {
	c := NewCounter(0)
	for _, body := range notJSON {
		for _, anthropic := range []bool{false, true} {
			n, _, err := c.Request(Cl100kBase, anthropic, []byte(body))
			if valid := json.Valid([]byte(body)); valid != (err == nil) {
				t.Errorf("%q anthropic=%v: json.Valid %v, Request = %d, %v", body, anthropic, valid, n, err)
			} else if err != nil && (!errors.Is(err, ErrNotJSON) || n != 0) {
				t.Errorf("%q: Request = %d, %v; want 0, ErrNotJSON", body, n, err)
			}
		}
	}
}

// TestRequestDepth checks encoding/json's nesting limit of 10,000 levels,
// reached through every path the walker takes before it skips.
func TestRequestDepth(t *testing.T) {
	wraps := []struct {
		name         string
		prefix, tail string
		levels       int // levels the wrapping itself opens
	}{
		{"top", "", "", 0},
		{"unknown field", `{"x":`, `}`, 1},
		{"messages", `{"messages":`, `}`, 1},
		{"message field", `{"messages":[{"role":"user","x":`, `}]}`, 3},
		{"content", `{"messages":[{"content":`, `}]}`, 3},
		{"part", `{"messages":[{"content":[`, `]}]}`, 4},
		{"part field", `{"messages":[{"content":[{"type":"text","x":`, `}]}]}`, 5},
		{"tool_result", `{"messages":[{"content":[{"type":"tool_result","content":`, `}]}]}`, 5},
		{"tool_result part", `{"messages":[{"content":[{"type":"tool_result","content":[`, `]}]}]}`, 6},
		{"tool_use input", `{"messages":[{"content":[{"type":"tool_use","input":`, `}]}]}`, 5},
		{"tools", `{"tools":`, `}`, 1},
		{"prompt", `{"prompt":`, `}`, 1},
		{"prompt item", `{"prompt":[`, `]}`, 2},
		{"prompt tokens", `{"prompt":[[`, `]]}`, 3},
		{"system", `{"system":`, `}`, 1},
	}
	c := NewCounter(0)
	for _, w := range wraps {
		for _, total := range []int{maxDepth, maxDepth + 1} {
			inner := total - w.levels
			for _, open := range []string{"[", `{"k":`} {
				closer := "]"
				if open != "[" {
					closer = "}"
				}
				body := []byte(w.prefix + strings.Repeat(open, inner) + "0" + strings.Repeat(closer, inner) + w.tail)
				valid := json.Valid(body)
				if valid != (total <= maxDepth) {
					t.Fatalf("%s %d: the test's depth is off (json.Valid %v)", w.name, total, valid)
				}
				for _, anthropic := range []bool{false, true} {
					if _, _, err := c.Request(Cl100kBase, anthropic, body); (err == nil) != valid {
						t.Errorf("%s, %d levels of %s, anthropic=%v: Request err %v, json.Valid %v", w.name, total, open, anthropic, err, valid)
					}
				}
			}
		}
	}
}

func TestRequestAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	c := NewCounter(0)
	ch := tokenstest.NewChat("gpt-4o", 2)
	if _, _, err := c.Request(O200kBase, false, ch.Body); err != nil {
		t.Fatal(err)
	}
	if a := testing.AllocsPerRun(100, func() { c.Request(O200kBase, false, ch.Body) }); a != 0 {
		t.Errorf("a request whose texts are all cached allocates %v times; want 0", a)
	}
	s := scanner{b: ch.Body}
	if a := testing.AllocsPerRun(100, func() { s = scanner{b: ch.Body}; s.skip() }); a != 0 || s.bad {
		t.Errorf("scanning allocates %v times (bad %v); want 0", a, s.bad)
	}
}

// FuzzRequest holds Request to its contract on any input: no panic,
// ErrNotJSON exactly when encoding/json.Valid says no, and for valid
// bodies a count that does not depend on the cache and, when the body
// has no duplicate keys, equals the reference's.
func FuzzRequest(f *testing.F) {
	for _, tc := range requestCases {
		f.Add([]byte(tc.body), tc.anthropic)
	}
	for _, body := range notJSON {
		f.Add([]byte(body), false)
	}
	f.Add([]byte(`{"messages":[{"role":"user","content":"\ud83d\ude00\ud83d"}]}`), true)
	f.Add([]byte("{\"prompt\":\"\xff\xfe\xed\xa0\x80 invalid utf-8\"}"), false)
	f.Add([]byte("{\"prompt\":\"\\u00e9\xc3\"}"), false)
	c := NewCounter(256) // small, so the fuzzer also drives eviction
	f.Fuzz(func(t *testing.T, body []byte, anthropic bool) {
		enc := Cl100kBase
		if len(body)%2 == 1 {
			enc = O200kBase
		}
		n, _, err := c.Request(enc, anthropic, body)
		if valid := json.Valid(body); !valid {
			if !errors.Is(err, ErrNotJSON) || n != 0 {
				t.Fatalf("invalid JSON: Request = %d, %v; want 0, ErrNotJSON", n, err)
			}
			return
		}
		if err != nil || n < 0 {
			t.Fatalf("valid JSON: Request = %d, %v", n, err)
		}
		if again, _, err := c.Request(enc, anthropic, body); again != n || err != nil {
			t.Fatalf("Request = %d, then %d, %v", n, again, err)
		}
		if !duplicateKeys(body) {
			// A piece longer than maxPiece is counted in chunks, a token
			// or so off per cut; no body that short has one.
			want, slack := refRequest(enc, anthropic, body), len(body)/maxPiece
			if n < want-slack || n > want+slack {
				t.Fatalf("Request = %d; reference %d", n, want)
			}
		}
	})
}

// TestRequestCap: a body's text beyond MaxExactBytes is estimated, not
// tokenized, and Request says so; below it nothing is estimated.
func TestRequestCap(t *testing.T) {
	c := NewCounter(0)
	ch := tokenstest.NewChat("gpt-4o", 1)
	if _, est, err := c.Request(O200kBase, false, ch.Body); est || err != nil {
		t.Fatalf("the chat: estimated %v, %v", est, err)
	}
	prose := tokenstest.Prose(5, 1000) + " "
	text := strings.Repeat(strings.ReplaceAll(prose, "\n", " "), MaxExactBytes/len(prose)+1) // just over the cap
	quote := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	exact := c.Count(O200kBase, text)
	for _, tc := range []struct {
		name  string
		body  string
		extra int // text bytes past the cap
	}{
		{"one text", `{"prompt":` + quote(text) + `}`, len(text) - MaxExactBytes},
		{"two texts", `{"prompt":[` + quote(text[:MaxExactBytes/2]) + `,` + quote(text) + `]}`, len(text) - MaxExactBytes/2},
	} {
		n, est, err := c.Request(O200kBase, false, []byte(tc.body))
		if err != nil || !est {
			t.Fatalf("%s: Request = %d, %v, %v; want an estimate", tc.name, n, est, err)
		}
		// The estimate is a third of a token per byte past the cap, where
		// this prose takes about a fifth: the count is high, by no more
		// than the estimate.
		lo, hi := exact, exact+estimate(tc.extra)
		if tc.name == "two texts" {
			lo += c.Count(O200kBase, text[:MaxExactBytes/2])
			hi = lo + estimate(tc.extra)
		}
		if n < lo || n > hi {
			t.Errorf("%s: Request = %d; want %d to %d", tc.name, n, lo, hi)
		}
		if again, est2, _ := c.Request(O200kBase, false, []byte(tc.body)); again != n || !est2 {
			t.Errorf("%s: again %d, %v; first %d", tc.name, again, est2, n)
		}
	}
}

// TestRequestHostile: bodies of the inputs that make the library's split
// quadratic cost time linear in their size.
func TestRequestHostile(t *testing.T) {
	c := NewCounter(0)
	size := 4 << 20
	if raceEnabled {
		size = 1 << 20
	}
	for _, unit := range []string{` \n`, ` `, `a`, `!`, `\n`, `\u00a0\n`, `\r\n \t`} {
		body := []byte(`{"prompt":"` + strings.Repeat(unit, size/len(unit)) + `"}`)
		start := time.Now()
		n, est, err := c.Request(Cl100kBase, false, body)
		if d := time.Since(start); err != nil || n <= 0 || d > 5*time.Second {
			t.Errorf("%q × %d: Request = %d, %v, %v in %v", unit, size/len(unit), n, est, err, d)
		}
	}
}
