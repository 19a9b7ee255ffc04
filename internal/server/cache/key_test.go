package cache

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

const chat = "/v1/chat/completions"

func keyOf(t *testing.T, scope, endpoint, body string) (Key, Facts) {
	t.Helper()
	k, f, err := KeyOf(Request{Scope: scope, Endpoint: endpoint, Model: "m", Body: []byte(body)})
	if err != nil {
		t.Fatalf("KeyOf(%s): %v", body, err)
	}
	return k, f
}

// Requests that mean the same have one key: however they are written,
// however they are delivered, whoever they say they are for.
func TestKeySameMeaning(t *testing.T) {
	for _, c := range []struct {
		name, endpoint, a, b string
	}{
		{"key order", chat, `{"model":"m","temperature":0,"messages":[{"role":"user","content":"hi"}]}`,
			`{"messages":[{"content":"hi","role":"user"}],"temperature":0,"model":"m"}`},
		{"whitespace", chat, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
			"{ \"model\" : \"m\",\n\t\"messages\" : [ { \"role\":\"user\" , \"content\":\"hi\" } ] }"},
		{"escapes", chat, `{"model":"m","messages":[{"role":"user","content":"héllo /"}]}`,
			`{"model":"m","messages":[{"role":"\u0075ser","content":"h\u00e9llo \/"}]}`},
		{"number spelling", chat, `{"model":"m","temperature":0,"top_p":0.5,"seed":10}`,
			`{"model":"m","temperature":0.0e3,"top_p":5E-1,"seed":1.0e1}`},
		{"negative zero", chat, `{"model":"m","temperature":0}`, `{"model":"m","temperature":-0.0}`},
		{"stream and its options", chat, `{"model":"m","messages":[]}`,
			`{"model":"m","messages":[],"stream":true,"stream_options":{"include_usage":true}}`},
		{"who asks", chat, `{"model":"m","messages":[]}`,
			`{"model":"m","messages":[],"user":"u-1","metadata":{"a":"b"},"store":true,"safety_identifier":"x","prompt_cache_key":"k"}`},
		{"anthropic stream and metadata", "/v1/messages", `{"model":"m","max_tokens":10,"messages":[]}`,
			`{"model":"m","max_tokens":10,"messages":[],"stream":true,"metadata":{"user_id":"u"}}`},
		{"anthropic prompt-cache marks", "/v1/messages",
			`{"model":"m","system":[{"type":"text","text":"s"}],"tools":[{"name":"t","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":[{"type":"text","text":"q"},{"type":"tool_result","tool_use_id":"x","content":[{"type":"text","text":"r"}]}]}]}`,
			`{"model":"m","system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],"tools":[{"name":"t","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":[{"type":"text","text":"q","cache_control":{"type":"ephemeral","ttl":"1h"}},{"type":"tool_result","tool_use_id":"x","content":[{"type":"text","text":"r","cache_control":{"type":"ephemeral"}}]}]}]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			ka, _ := keyOf(t, "tenant:a", c.endpoint, c.a)
			kb, _ := keyOf(t, "tenant:a", c.endpoint, c.b)
			if ka != kb {
				t.Errorf("two spellings of one request have two keys:\n%s\n%s", c.a, c.b)
			}
		})
	}
}

// Requests that may be answered otherwise never share a key: a crafted
// request cannot take, or poison, another's entry.
func TestKeyDifferentMeaning(t *testing.T) {
	base := `{"model":"m","temperature":0,"messages":[{"role":"user","content":"hi"}]}`
	for _, c := range []struct {
		name, endpoint, body, scope string
	}{
		{"another tenant", chat, base, "tenant:b"},
		{"anonymous", chat, base, "anonymous"},
		{"another endpoint", "/v1/messages", base, ""},
		{"another temperature", chat, `{"model":"m","temperature":0.5,"messages":[{"role":"user","content":"hi"}]}`, ""},
		{"another word", chat, `{"model":"m","temperature":0,"messages":[{"role":"user","content":"hi!"}]}`, ""},
		{"a string for a number", chat, `{"model":"m","temperature":"0","messages":[{"role":"user","content":"hi"}]}`, ""},
		{"null for absent", chat, `{"model":"m","temperature":0,"messages":[{"role":"user","content":"hi"}],"tools":null}`, ""},
		{"an unknown field", chat, `{"model":"m","temperature":0,"messages":[{"role":"user","content":"hi"}],"x_vendor":1}`, ""},
		{"a field's case", chat, `{"model":"m","Temperature":0,"messages":[{"role":"user","content":"hi"}]}`, ""},
		{"the seed past a float's precision", chat, `{"model":"m","temperature":0,"seed":9007199254740993,"messages":[{"role":"user","content":"hi"}]}`, ""},
		{"messages in another order", chat, `{"model":"m","temperature":0,"messages":[{"role":"assistant","content":"hi"},{"role":"user","content":"hi"}]}`, ""},
		{"a name moved into the text", chat, `{"model":"m","temperature":0,"messages":[{"role":"user","content":"hi\",\"x\":\"y"}]}`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			scope := c.scope
			if scope == "" {
				scope = "tenant:a"
			}
			ka, _ := keyOf(t, "tenant:a", chat, base)
			kb, _ := keyOf(t, scope, c.endpoint, c.body)
			if ka == kb {
				t.Errorf("different requests share a key:\n%s\n%s", base, c.body)
			}
		})
	}
	// The seed that only a float's rounding would merge.
	a, _ := keyOf(t, "s", chat, `{"model":"m","seed":9007199254740992}`)
	b, _ := keyOf(t, "s", chat, `{"model":"m","seed":9007199254740993}`)
	if a == b {
		t.Error("two seeds a float cannot tell apart share a key")
	}
	// cache_control is left out where Anthropic reads it as a prompt-cache
	// mark, and nowhere else: a tool schema's property of that name is
	// part of the request.
	x, _ := keyOf(t, "s", "/v1/messages", `{"model":"m","tools":[{"name":"t","input_schema":{"type":"object","properties":{}}}]}`)
	y, _ := keyOf(t, "s", "/v1/messages", `{"model":"m","tools":[{"name":"t","input_schema":{"type":"object","properties":{"cache_control":{"type":"string"}}}}]}`)
	if x == y {
		t.Error("a schema property named cache_control was left out of the key")
	}
	// Headers that reach the provider are part of the key, in any order.
	h1, _, _ := KeyOf(Request{Scope: "s", Endpoint: chat, Model: "m", Body: []byte(base), Headers: [][2]string{{"anthropic-beta", "a"}, {"x-b", "1"}}})
	h2, _, _ := KeyOf(Request{Scope: "s", Endpoint: chat, Model: "m", Body: []byte(base), Headers: [][2]string{{"x-b", "1"}, {"anthropic-beta", "a"}}})
	h3, _, _ := KeyOf(Request{Scope: "s", Endpoint: chat, Model: "m", Body: []byte(base), Headers: [][2]string{{"anthropic-beta", "b"}, {"x-b", "1"}}})
	if h1 != h2 || h1 == h3 {
		t.Error("forwarded headers: order must not matter, values must")
	}
	// The scope is length-prefixed: no shift of bytes between scope and
	// endpoint makes two keys one.
	s1, _, _ := KeyOf(Request{Scope: "ab", Endpoint: "c", Model: "m", Body: []byte(`{}`)})
	s2, _, _ := KeyOf(Request{Scope: "a", Endpoint: "bc", Model: "m", Body: []byte(`{}`)})
	if s1 == s2 {
		t.Error("scope and endpoint run together")
	}
}

func TestKeyFacts(t *testing.T) {
	for body, sampled := range map[string]bool{
		`{"model":"m"}`:                       true, // the provider's default temperature
		`{"model":"m","temperature":0}`:       false,
		`{"model":"m","temperature":0.0}`:     false,
		`{"model":"m","temperature":0.1}`:     true,
		`{"model":"m","temperature":"0"}`:     true,
		`{"model":"m","temperature":null}`:    true,
		`{"model":"m","x":{"temperature":0}}`: true, // only the top level's
	} {
		if _, f := keyOf(t, "s", chat, body); f.Sampled != sampled {
			t.Errorf("%s: sampled %v; want %v", body, f.Sampled, sampled)
		}
	}
}

// A body the key cannot read by its meaning is never cached: a
// provider might read a repeated name or a broken string otherwise.
func TestKeyUnreadable(t *testing.T) {
	for _, body := range []string{
		``, `[]`, `"x"`, `{`, `{"model":"m"} {}`,
		`{"model":"m","temperature":0,"temperature":1}`,
		`{"model":"m","messages":[{"role":"user","role":"system"}]}`,
		"{\"model\":\"m\",\"messages\":\"\xff\"}",
	} {
		if _, _, err := KeyOf(Request{Scope: "s", Endpoint: chat, Model: "m", Body: []byte(body)}); err == nil {
			t.Errorf("%q: read", body)
		}
	}
}

func TestCanonNumber(t *testing.T) {
	for raw, want := range map[string]string{
		"0": "0", "-0": "0", "0.000": "0", "0e10": "0",
		"1": "1e0", "1.0": "1e0", "1e0": "1e0", "10e-1": "1e0", "0.1e1": "1e0", "1E+0": "1e0",
		"100": "1e2", "0.25": "25e-2", "-2.50": "-25e-1", "12345678901234567890": "1234567890123456789e1",
		"1e999999999999": "1e999999999999", // too long to add to: kept as written
	} {
		if got := canonNumber(raw); got != want {
			t.Errorf("canonNumber(%s) = %s; want %s", raw, got, want)
		}
	}
}

// FuzzKeyEquivalentForms: any legal re-encoding of a request (its
// objects' names shuffled, whitespace anywhere, characters escaped,
// numbers respelled, stream and user added) has the request's key.
func FuzzKeyEquivalentForms(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","temperature":0,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","temperature":0.25,"top_p":1,"seed":42,"messages":[{"role":"system","content":"Be brief. \"Quote\" \\ / é 😀"},{"role":"user","content":[{"type":"text","text":"a\nb"}]}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"x":{"type":"number","minimum":-1.5e3}}}}}],"response_format":{"type":"json_object"}}`,
		`{"model":"m","max_tokens":100,"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":[{"type":"text","text":"q"}]}],"stop_sequences":["\u0000","</x>"]}`,
	} {
		f.Add([]byte(s), uint64(1))
	}
	f.Fuzz(func(t *testing.T, body []byte, seed uint64) {
		k, facts, err := KeyOf(Request{Scope: "s", Endpoint: chat, Model: "m", Body: body})
		if err != nil {
			return
		}
		var v any
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		if dec.Decode(&v) != nil {
			return
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return
		}
		rnd := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		obj["stream"] = rnd.IntN(2) == 0
		obj["user"] = fmt.Sprint(rnd.Int())
		var b bytes.Buffer
		reencode(&b, obj, rnd)
		k2, facts2, err := KeyOf(Request{Scope: "s", Endpoint: chat, Model: "m", Body: b.Bytes()})
		if err != nil {
			t.Fatalf("the re-encoding is unreadable: %v\n%s", err, b.Bytes())
		}
		if k != k2 || facts != facts2 {
			t.Fatalf("a re-encoding changed the key:\n%s\n%s", body, b.Bytes())
		}
	})
}

// reencode writes v as JSON in a random legal way.
func reencode(b *bytes.Buffer, v any, rnd *rand.Rand) {
	space := func() {
		for range rnd.IntN(3) {
			b.WriteByte(" \t\n\r"[rnd.IntN(4)])
		}
	}
	space()
	switch x := v.(type) {
	case map[string]any:
		names := make([]string, 0, len(x))
		for n := range x {
			names = append(names, n)
		}
		slices.Sort(names)
		rnd.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
		b.WriteByte('{')
		for i, n := range names {
			if i > 0 {
				b.WriteByte(',')
			}
			space()
			writeEscaped(b, n, rnd)
			space()
			b.WriteByte(':')
			reencode(b, x[n], rnd)
		}
		space()
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			reencode(b, e, rnd)
		}
		space()
		b.WriteByte(']')
	case string:
		writeEscaped(b, x, rnd)
	case json.Number:
		b.WriteString(respell(string(x), rnd))
	case bool:
		fmt.Fprint(b, x)
	case nil:
		b.WriteString("null")
	}
	space()
}

// writeEscaped writes s as a JSON string, each character escaped or not
// at random.
func writeEscaped(b *bytes.Buffer, s string, rnd *rand.Rand) {
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || rnd.IntN(4) == 0:
			if r > 0xffff {
				r1, r2 := utf16Pair(r)
				fmt.Fprintf(b, `\u%04x\u%04X`, r1, r2)
			} else {
				fmt.Fprintf(b, `\u%04x`, r)
			}
		case r == '/' && rnd.IntN(2) == 0:
			b.WriteString(`\/`)
		case r == utf8.RuneError:
			b.WriteString(`\ufffd`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}

func utf16Pair(r rune) (rune, rune) {
	r -= 0x10000
	return 0xd800 + (r>>10)&0x3ff, 0xdc00 + r&0x3ff
}

// respell writes a number another way with the same value.
func respell(n string, rnd *rand.Rand) string {
	hasExp := strings.ContainsAny(n, "eE")
	switch rnd.IntN(4) {
	case 0:
		return n
	case 1:
		if hasExp {
			return n
		}
		if strings.Contains(n, ".") {
			return n + "0"
		}
		return n + ".0"
	case 2:
		if hasExp {
			return n
		}
		return n + "e0"
	}
	if hasExp {
		return n
	}
	return n + "E+00"
}

// BenchmarkKeyOf reads a long conversation (200 messages, about 90
// KiB) into its key.
func BenchmarkKeyOf(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"model":"m","temperature":0,"messages":[`)
	for i := range 200 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"role":"user","content":"Message %d: %s"}`, i, strings.Repeat("lorem ipsum dolor sit amet ", 16))
	}
	sb.WriteString(`]}`)
	body := []byte(sb.String())
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := KeyOf(Request{Scope: "s", Endpoint: chat, Model: "m", Body: body}); err != nil {
			b.Fatal(err)
		}
	}
}
