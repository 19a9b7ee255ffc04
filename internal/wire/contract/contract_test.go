package contract

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

const weather = `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`

func TestForRequestNothingAsked(t *testing.T) {
	for _, tc := range []struct {
		d         protocol.Dialect
		rf, tools string
	}{
		{protocol.OpenAI, "", ""},
		{protocol.OpenAI, `{"type":"text"}`, ""},
		{protocol.OpenAI, `null`, `[]`},
		{protocol.Anthropic, "", `[{"type":"web_search_20250305","name":"web_search"}]`},
	} {
		c, err := ForRequest(context.Background(), tc.d, []byte(tc.rf), []byte(tc.tools))
		if c != nil || err != nil {
			t.Errorf("%s %q %q: contract %v, error %v; want none", tc.d, tc.rf, tc.tools, c, err)
		}
	}
	// The hot path: a request that asks for nothing costs nothing.
	if n := testing.AllocsPerRun(100, func() { ForRequest(context.Background(), protocol.OpenAI, nil, nil) }); n != 0 {
		t.Errorf("ForRequest with nothing asked allocates %v times", n)
	}
}

func TestContractCheck(t *testing.T) {
	oa, err := ForRequest(context.Background(), protocol.OpenAI,
		[]byte(`{"type":"json_schema","json_schema":{"name":"p","schema":`+person+`}}`),
		[]byte(`[{"type":"function","function":{"name":"get_weather","parameters":`+weather+`}},{"type":"function","function":{"name":"noop"}}]`))
	if err != nil {
		t.Fatal(err)
	}
	call := func(name, args string) Choice { return Choice{Calls: []Call{{Name: name, Args: []byte(args)}}} }
	cases := []struct {
		name string
		a    Answer
		want string // "" valid
	}{
		{"valid text", Answer{Choices: []Choice{{Text: []byte(`{"name":"Ada","age":36}`)}}}, ""},
		{"text breaks schema", Answer{Choices: []Choice{{Text: []byte(`{"name":"Ada"}`)}}}, "missing property 'age'"},
		{"text not JSON", Answer{Choices: []Choice{{Text: []byte(`Ada is 36`)}}}, "not JSON"},
		{"two documents", Answer{Choices: []Choice{{Text: []byte(`{"name":"Ada","age":1} {}`)}}}, "not JSON"},
		{"empty text", Answer{Choices: []Choice{{}}}, "empty"},
		{"refusal", Answer{Choices: []Choice{{Refusal: "I can't help with that."}}}, "refused"},
		{"valid call", Answer{Choices: []Choice{call("get_weather", `{"city":"Oslo"}`)}}, ""},
		{"call without schema, empty arguments", Answer{Choices: []Choice{call("noop", ``)}}, ""},
		{"call args break schema", Answer{Choices: []Choice{call("get_weather", `{"town":"Oslo"}`)}}, "get_weather"},
		{"call args not an object", Answer{Choices: []Choice{call("noop", `[1]`)}}, "not a JSON object"},
		{"undeclared tool", Answer{Choices: []Choice{call("rm_rf", `{}`)}}, "did not declare"},
		{"second choice invalid", Answer{Choices: []Choice{{Text: []byte(`{"name":"Ada","age":1}`)}, {Text: []byte(`{}`)}}}, "choice 1"},
		{"no choices", Answer{}, "no choices"},
	}
	for _, tc := range cases {
		err := oa.Check(tc.a)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
	obj, _ := ForRequest(context.Background(), protocol.OpenAI, []byte(`{"type":"json_object"}`), nil)
	if obj.Check(Answer{Choices: []Choice{{Text: []byte(`{"a":1}`)}}}) != nil || obj.Check(Answer{Choices: []Choice{{Text: []byte(`"a"`)}}}) == nil {
		t.Error("json_object must take an object and only an object")
	}
}

func TestForRequestRefusals(t *testing.T) {
	big := `[{"type":"function","function":{"name":"t","parameters":{"description":"` + strings.Repeat("x", MaxSchemaBytes) + `"}}}]`
	many := "[" + strings.Repeat(`{"name":"t","input_schema":{}},`, MaxTools) + `{"name":"u"}]`
	for _, tc := range []struct {
		d         protocol.Dialect
		rf, tools string
		param     string
	}{
		{protocol.OpenAI, `{"type":"json_schema"}`, "", "response_format.json_schema"},
		{protocol.OpenAI, `{"type":"xml"}`, "", "response_format.type"},
		{protocol.OpenAI, `{"type":"json_schema","json_schema":{"schema":{"type":"nonsense"}}}`, "", "response_format.json_schema.schema"},
		{protocol.OpenAI, "", `[{"type":"function","function":{"name":"a","parameters":{"$ref":"https://example.invalid/x"}}}]`, "tools[0].function.parameters"},
		{protocol.Anthropic, "", `[{"name":"a","input_schema":{}},{"name":"b","input_schema":{"required":"city"}}]`, "tools[1].input_schema"},
		{protocol.Anthropic, "", `[{"input_schema":{}}]`, "tools[0]"},
		{protocol.OpenAI, "", big, "tools"},
		{protocol.Anthropic, "", many, "tools"},
	} {
		_, err := ForRequest(context.Background(), tc.d, []byte(tc.rf), []byte(tc.tools))
		var re *RequestError
		if !errors.As(err, &re) || re.Param != tc.param {
			t.Errorf("%s %.80s %.80s: got %v, want a RequestError at %s", tc.d, tc.rf, tc.tools, err, tc.param)
		}
	}
}

// The collector gathers text and tool arguments from either API's
// stream, in any cuts, and nothing past its bound.
func TestCollector(t *testing.T) {
	openAI := "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"{\\\"na\"}}]}\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"me\\\":1}\"}}]}\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"get_weather\",\"arguments\":\"\"}}]}}]}\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"city\\\":\"}}]}}]}\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"Oslo\\\"}\"}}]}}]}\n\n" +
		"data: [DONE]\n\n"
	anthropic := "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"{\\\"name\\\":1}\"}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"name\":\"get_weather\",\"input\":{}}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"city\\\":\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\\\"Oslo\\\"}\"}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	for _, tc := range []struct {
		d      protocol.Dialect
		stream string
	}{{protocol.OpenAI, openAI}, {protocol.Anthropic, anthropic}} {
		for _, cut := range []int{1, 7, 64, len(tc.stream)} {
			k := NewCollector(tc.d)
			for s := tc.stream; len(s) > 0; {
				n := min(cut, len(s))
				k.Write([]byte(s[:n]))
				s = s[n:]
			}
			a, err := k.Answer()
			if err != nil || len(a.Choices) != 1 {
				t.Fatalf("%s cut %d: %v, %d choices", tc.d, cut, err, len(a.Choices))
			}
			ch := a.Choices[0]
			if !strings.Contains(string(ch.Text), `":1}`) || len(ch.Calls) != 1 || ch.Calls[0].Name != "get_weather" || string(ch.Calls[0].Args) != `{"city":"Oslo"}` {
				t.Fatalf("%s cut %d: text %q calls %+v", tc.d, cut, ch.Text, ch.Calls)
			}
		}
	}
	k := NewCollector(protocol.OpenAI)
	chunk := []byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" + strings.Repeat("x", 64<<10) + "\"}}]}\n\n")
	for range MaxAnswerBytes/(64<<10) + 1 {
		k.Write(chunk)
	}
	if _, err := k.Answer(); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("an answer over MaxAnswerBytes: %v, want ErrTooLarge", err)
	}
	if len(k.choices) > 0 && len(k.choices[0].text) > MaxAnswerBytes {
		t.Fatalf("the collector held %d bytes, over its bound", len(k.choices[0].text))
	}
}

func TestParseAnswer(t *testing.T) {
	a, err := ParseAnswer(protocol.OpenAI, []byte(`{"choices":[{"message":{"content":[{"type":"text","text":"{\"a\""},{"type":"text","text":":1}"}],"tool_calls":[{"function":{"name":"f","arguments":"{}"}}]}}]}`))
	if err != nil || string(a.Choices[0].Text) != `{"a":1}` || a.Choices[0].Calls[0].Name != "f" {
		t.Fatalf("%+v %v", a, err)
	}
	a, err = ParseAnswer(protocol.Anthropic, []byte(`{"content":[{"type":"text","text":"hi"},{"type":"tool_use","name":"f","input":{"x":1}}]}`))
	if err != nil || string(a.Choices[0].Text) != "hi" || string(a.Choices[0].Calls[0].Args) != `{"x":1}` {
		t.Fatalf("%+v %v", a, err)
	}
}

func BenchmarkContract(b *testing.B) {
	rf := []byte(`{"type":"json_schema","json_schema":{"name":"p","schema":` + person + `}}`)
	ans := Answer{Choices: []Choice{{Text: []byte(`{"name":"Ada","age":36}`)}}}
	b.Run("compile", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ForRequest(context.Background(), protocol.OpenAI, rf, nil)
		}
	})
	b.Run("compile uncached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Compile([]byte(person))
		}
	})
	// The largest schema a request may send: MaxSchemaBytes of
	// properties, each with a pattern and bounds.
	var big strings.Builder
	big.WriteString(`{"type":"object","properties":{`)
	for i := 0; big.Len() < MaxSchemaBytes-200; i++ {
		if i > 0 {
			big.WriteByte(',')
		}
		fmt.Fprintf(&big, `"p%d":{"type":"string","pattern":"^[a-z]{1,8}$","maxLength":9}`, i)
	}
	big.WriteString(`}}`)
	b.Run("compile largest", func(b *testing.B) {
		for b.Loop() {
			Compile([]byte(big.String()))
		}
	})
	c, _ := ForRequest(context.Background(), protocol.OpenAI, rf, nil)
	b.Run("check", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c.Check(ans)
		}
	})
}
