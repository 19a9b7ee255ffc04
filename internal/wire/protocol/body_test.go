package protocol

import (
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

func TestParseBody(t *testing.T) {
	cases := []struct {
		name, body string
		model      string
		stream     bool
		err        string
	}{
		{"minimal", `{"model":"m"}`, "m", false, ""},
		{"stream", `{"stream":true,"model":"m"}`, "m", true, ""},
		{"nested model keys ignored", `{"meta":{"model":"x"},"model":"m"}`, "m", false, ""},
		{"whitespace", " \n{ \"model\" : \"m\" } \n", "m", false, ""},
		{"escaped name", `{"model":"a\"b"}`, `a"b`, false, ""},
		{"empty", ``, "", false, "not valid JSON"},
		{"array", `[]`, "", false, "JSON object"},
		{"truncated", `{"model":"m"`, "", false, "not valid JSON"},
		{"trailing data", `{"model":"m"} {}`, "", false, "after the JSON object"},
		{"missing model", `{"messages":[]}`, "", false, `"model" is required`},
		{"empty model", `{"model":""}`, "", false, `"model" is required`},
		{"model number", `{"model":1}`, "", false, "must be a string"},
		{"stream string", `{"model":"m","stream":"yes"}`, "", false, "true or false"},
		{"duplicate model", `{"model":"m","model":"x"}`, "", false, `"model" appears twice`},
		{"case-variant model", `{"model":"allowed","Model":"other"}`, "", false, `"Model" is not a field`},
		{"case-variant stream", `{"model":"m","STREAM":true}`, "", false, `the field is "stream"`},
		{"duplicate other key", `{"model":"m","temperature":1,"temperature":2}`, "", false, "appears twice"},
		{"unrouted keys keep their case", `{"model":"m","Temperature":1}`, "m", false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := ParseBody([]byte(c.body))
			if c.err != "" {
				if err == nil || !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want ErrMalformed mentioning %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.Model != c.model || b.Stream != c.stream {
				t.Fatalf("model %q stream %v", b.Model, b.Stream)
			}
		})
	}
}

func TestWithModelKeepsEveryOtherByte(t *testing.T) {
	in := `{ "z":1,"model" : "client-name" ,"x":{"model":"inner"},"u":"\u00e9"}`
	b, err := ParseBody([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	got := string(b.WithModel(`up"stream`))
	want := `{ "z":1,"model" : "up\"stream" ,"x":{"model":"inner"},"u":"\u00e9"}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// FuzzParseBody: whatever ParseBody accepts, WithModel turns into valid
// JSON whose model is the new name and whose other keys are unchanged;
// and a body the fast scan takes is read exactly as encoding/json's
// tokenizer reads it.
func FuzzParseBody(f *testing.F) {
	for _, s := range []string{`{"model":"m"}`, `{"a":[1,{"model":2}],"model":"m","stream":false}`, `{"model":"m","x":"\ud800"}`,
		` { "model" : "m\u00e9" , "stream" : true , "max_tokens" : 12 , "messages" : [ {"role":"user","content":"}]\""} ] , "n" : -1.5e3 } `,
		`{"model":"m","Stream":true}`, `{"model":"m","model":"n"}`, `{"model":"m","max_tokens":1,"max_output_tokens":2}`,
		`{"model":"m","stream":null,"max_tokens":null}`, `{"model":"é","tools":[],"response_format":{"type":"json_object"},"stream_options":{}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if fast, ok := scanBody(data); ok {
			ref, err := decodeBody(data)
			if err != nil {
				t.Fatalf("the fast scan took a body the decoder refuses (%v): %q", err, data)
			}
			if !reflect.DeepEqual(fast, ref) {
				t.Fatalf("the fast scan and the decoder disagree on %q:\n%+v\n%+v", data, *fast, *ref)
			}
		}
		b, err := ParseBody(data)
		if err != nil {
			return
		}
		out := b.WithModel("new")
		var before, after map[string]json.RawMessage
		if err := json.Unmarshal(data, &before); err != nil {
			return // duplicate keys and the like: encoding/json's view may differ
		}
		if err := json.Unmarshal(out, &after); err != nil {
			t.Fatalf("rewritten body is not JSON: %v\n%s", err, out)
		}
		if string(after["model"]) != `"new"` {
			t.Fatalf("model = %s", after["model"])
		}
		for k, v := range before {
			if k != "model" && string(after[k]) != string(v) {
				t.Fatalf("key %q changed: %s -> %s", k, v, after[k])
			}
		}
	})
}

func TestErrorShapes(t *testing.T) {
	for _, c := range []struct {
		d      Dialect
		k      Kind
		status int
		want   string
	}{
		{OpenAI, Overloaded, 503, `{"error":{"code":null,"message":"m","param":null,"type":"overloaded_error"}}`},
		{Anthropic, Overloaded, 529, `{"error":{"message":"m","type":"overloaded_error"},"type":"error"}`},
		{Anthropic, TooLarge, 413, `{"error":{"message":"m","type":"request_too_large"},"type":"error"}`},
		{OpenAI, Timeout, 504, `{"error":{"code":null,"message":"m","param":null,"type":"timeout_error"}}`},
	} {
		if got := c.d.Status(c.k); got != c.status {
			t.Errorf("%s status %d, want %d", c.d, got, c.status)
		}
		if got := string(c.d.ErrorBody(c.k, "m")); got != c.want {
			t.Errorf("%s body %s, want %s", c.d, got, c.want)
		}
	}
}

func TestBodyEdits(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		edit       Edit
		want       string
	}{
		{"model only", `{"model":"a","x":1}`, Edit{Model: "up"}, `{"model":"up","x":1}`},
		{"cap lowers max_tokens", `{"model":"a","max_tokens":900}`, Edit{Model: "up", MaxTokens: 100}, `{"model":"up","max_tokens":100}`},
		{"cap keeps a smaller one", `{"model":"a","max_completion_tokens":50}`, Edit{Model: "up", MaxTokens: 100}, `{"model":"up","max_completion_tokens":50}`},
		{"cap adds max_tokens", `{"model":"a"}`, Edit{Model: "up", MaxTokens: 100}, `{"max_tokens":100,"model":"up"}`},
		{"usage asked for", `{"model":"a","stream":true}`, Edit{Model: "up", IncludeUsage: true}, `{"stream_options":{"include_usage":true},"model":"up","stream":true}`},
		{"usage already set", `{"model":"a","stream_options":{"include_usage":false}}`, Edit{Model: "up", IncludeUsage: true}, `{"model":"up","stream_options":{"include_usage":false}}`},
		{"messages replaced", `{"messages":[1,2,3],"model":"a"}`, Edit{Model: "up", Messages: []byte(`[3]`)}, `{"messages":[3],"model":"up"}`},
		{"everything", ` {"messages":[1,2],"max_tokens":9,"model":"a"}`, Edit{Model: "up", MaxTokens: 5, IncludeUsage: true, Messages: []byte(`[2]`)},
			` {"max_tokens"`[:0] + `{"stream_options":{"include_usage":true},"messages":[2],"max_tokens":5,"model":"up"}`},
	} {
		b, err := ParseBody([]byte(tc.body))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got, _ := io.ReadAll(b.Reader(tc.edit))
		want := tc.want
		if strings.HasPrefix(tc.body, " ") {
			want = " " + want
		}
		if string(got) != want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, want)
		}
		if !json.Valid(got) {
			t.Errorf("%s: not JSON: %s", tc.name, got)
		}
	}
	if _, err := ParseBody([]byte(`{"model":"a","max_tokens":1,"max_completion_tokens":2}`)); err == nil {
		t.Error("both max_tokens and max_completion_tokens were accepted")
	}
	if _, err := ParseBody([]byte(`{"model":"a","max_tokens":"lots"}`)); err == nil {
		t.Error(`max_tokens "lots" was accepted`)
	}
}

// TestParseBodyAllocs: a body of the common shape costs two
// allocations, the Body and its model's name, however many fields it has.
func TestParseBodyAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector; .ci/run checks them without it")
	}
	raw := []byte(`{"model":"mock-gpt","messages":[{"role":"user","content":"hello"}],"max_tokens":64,"stream":false,"temperature":0.2,"tools":[]}`)
	if n := testing.AllocsPerRun(100, func() {
		if _, err := ParseBody(raw); err != nil {
			t.Fatal(err)
		}
	}); n > 2 {
		t.Errorf("%.0f allocations per body parsed, want at most 2 (the Body and the model's name)", n)
	}
}

func TestBodyReaderAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector; .ci/run checks them without it")
	}
	b, err := ParseBody([]byte(`{"model":"a","max_tokens":900,"messages":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	var buf [256]byte
	if n := testing.AllocsPerRun(100, func() {
		r := b.Reader(Edit{Model: "up"})
		for {
			if _, err := r.Read(buf[:]); err != nil {
				break
			}
		}
	}); n > 3 {
		t.Errorf("%.0f allocations per body read, want at most 3 (the reader, and quoting the model: the boxed string and its bytes)", n)
	}
}
