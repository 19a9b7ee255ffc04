package tokenstest

import (
	"bytes"
	"runtime"
	"strconv"
)

// Shape is a body of many small elements at one level of the request
// (or the answer): the kind of body whose cost, per byte, is highest
// when some step does work or allocates per element rather than per byte.
type Shape struct {
	Name string
	// Dialect is the API the body is in: "openai" (chat completions),
	// "anthropic" (messages), "responses" (the Responses API), or
	// "answer" (an OpenAI chat completion whose text is JSON).
	Dialect string
	Body    []byte
}

// Shapes makes one body of each shape, each about size bytes: every
// element as small as its API allows, repeated until the body is full.
// The keys shape is one message of many keys its API does not have,
// which a translation drops or refuses.
func Shapes(size int) []Shape {
	var out []Shape
	add := func(name, dialect, head, tail string, elem func(i int) string) {
		var b bytes.Buffer
		b.Grow(size + 256)
		b.WriteString(head)
		for i := 0; b.Len() < size; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(elem(i))
		}
		b.WriteString(tail)
		out = append(out, Shape{Name: name, Dialect: dialect, Body: bytes.Clone(b.Bytes())})
	}
	n := strconv.Itoa
	alternate := func(i int) string {
		if i%2 == 0 {
			return `{"role":"user","content":"a"}`
		}
		return `{"role":"assistant","content":"b"}`
	}
	// OpenAI chat completions.
	add("messages", "openai", `{"model":"m","messages":[`, `]}`, alternate)
	add("content-parts", "openai", `{"model":"m","messages":[{"role":"user","content":[`, `]}]}`,
		func(int) string { return `{"type":"text","text":"a"}` })
	add("tool-calls", "openai", `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","tool_calls":[`, `]}]}`,
		func(i int) string {
			return `{"id":"c` + n(i) + `","type":"function","function":{"name":"f","arguments":"{}"}}`
		})
	add("tool-results", "openai", `{"model":"m","messages":[{"role":"user","content":"a"},`, `]}`,
		func(i int) string { return `{"role":"tool","tool_call_id":"c` + n(i) + `","content":"a"}` })
	add("tools", "openai", `{"model":"m","messages":[{"role":"user","content":"a"}],"tools":[`, `]}`,
		func(i int) string {
			return `{"type":"function","function":{"name":"f` + n(i) + `","parameters":{"type":"object"}}}`
		})
	add("keys", "openai", `{"model":"m","messages":[{"role":"user","content":"a",`, `}]}`,
		func(i int) string { return `"k` + n(i) + `":1` })
	add("tool-arguments", "openai", `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\":[`,
		`]}"}}]}]}`, func(int) string { return `1` })
	add("nesting", "openai", `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\":[`,
		`]}"}}]}]}`, func(int) string { return `{\"b\":[{\"c\":[[[1]]]}]}` })
	// Anthropic messages.
	add("messages", "anthropic", `{"model":"m","max_tokens":1,"messages":[`, `]}`, alternate)
	add("content-blocks", "anthropic", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[`, `]}]}`,
		func(int) string { return `{"type":"text","text":"a"}` })
	add("tool-use", "anthropic", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"a"},{"role":"assistant","content":[`, `]}]}`,
		func(i int) string { return `{"type":"tool_use","id":"t` + n(i) + `","name":"f","input":{}}` })
	add("tool-results", "anthropic", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[`, `]}]}`,
		func(i int) string { return `{"type":"tool_result","tool_use_id":"t` + n(i) + `","content":"a"}` })
	add("tools", "anthropic", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"a"}],"tools":[`, `]}`,
		func(i int) string { return `{"name":"f` + n(i) + `","input_schema":{"type":"object"}}` })
	add("nesting", "anthropic", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{"a":[`,
		`]}}]}]}`, func(int) string { return `{"b":[{"c":[[[1]]]}]}` })
	// The Responses API.
	add("input-items", "responses", `{"model":"m","input":[`, `]}`,
		func(int) string { return `{"role":"user","content":"a"}` })
	add("input-parts", "responses", `{"model":"m","input":[{"role":"user","content":[`, `]}]}`,
		func(int) string { return `{"type":"input_text","text":"a"}` })
	// Answers whose text is JSON, for validation.
	answer := func(name, open, close, elem string) {
		add(name, "answer", `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"`+open,
			close+`"}}]}`, func(int) string { return elem })
	}
	answer("json-array", `{\"a\":[`, `]}`, `1`)
	answer("json-objects", `{\"a\":[`, `]}`, `{\"a\":1}`)
	answer("json-nesting", `{\"a\":[`, `]}`, `[[[[[[[[1]]]]]]]]`)
	return out
}

// AllocatedPerByte is what one run of f allocates, per byte of an input
// of n bytes. The caller runs f once before, so that pools and caches
// it fills are not counted.
func AllocatedPerByte(n int, f func()) float64 {
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	f()
	runtime.ReadMemStats(&ms1)
	return float64(ms1.TotalAlloc-ms0.TotalAlloc) / float64(n)
}
