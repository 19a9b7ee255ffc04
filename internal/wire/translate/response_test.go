package translate

import (
	"errors"
	"testing"
)

func TestUntranslatableResponses(t *testing.T) {
	toOpenAI := map[string]string{
		"not JSON":          `{"id":`,
		"an error body":     `{"type":"error","error":{"type":"api_error","message":"boom"}}`,
		"not a message":     `{"type":"completion"}`,
		"a server tool use": `{"type":"message","content":[{"type":"server_tool_use","id":"s","name":"web_search","input":{}}],"stop_reason":"end_turn"}`,
	}
	for name, body := range toOpenAI {
		if _, err := ResponseToOpenAI([]byte(body), 1); !errors.Is(err, ErrResponse) {
			t.Errorf("to OpenAI, %s: err = %v, want ErrResponse", name, err)
		}
	}
	toAnthropic := map[string]string{
		"not JSON":           `[`,
		"no choices":         `{"id":"c","choices":[]}`,
		"two choices":        `{"id":"c","choices":[{"index":0,"message":{"content":"a"}},{"index":1,"message":{"content":"b"}}]}`,
		"arguments not JSON": `{"id":"c","choices":[{"index":0,"message":{"tool_calls":[{"id":"x","type":"function","function":{"name":"f","arguments":"{nope"}}]},"finish_reason":"tool_calls"}]}`,
	}
	for name, body := range toAnthropic {
		if _, err := ResponseToAnthropic([]byte(body)); !errors.Is(err, ErrResponse) {
			t.Errorf("to Anthropic, %s: err = %v, want ErrResponse", name, err)
		}
	}
}

func TestResponseRefusalAndEmpty(t *testing.T) {
	out, err := ResponseToAnthropic([]byte(`{"id":"c","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't."},"finish_reason":"stop"}],"usage":{"prompt_tokens":4,"completion_tokens":3}}`))
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, out, []byte(`{"id":"c","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"I can't."}],
		"stop_reason":"refusal","stop_sequence":null,"usage":{"input_tokens":4,"output_tokens":3}}`))

	// An answer with no blocks at all still has content: "" in OpenAI's shape.
	out, err = ResponseToOpenAI([]byte(`{"id":"m","type":"message","model":"x","content":[],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":0}}`), 5)
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, out, []byte(`{"id":"m","object":"chat.completion","created":5,"model":"x","choices":[{"index":0,"message":{"role":"assistant","content":""},"logprobs":null,"finish_reason":"stop"}],
		"usage":{"prompt_tokens":1,"completion_tokens":0,"total_tokens":1}}`))
}
