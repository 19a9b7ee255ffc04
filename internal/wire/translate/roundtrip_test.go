package translate

import (
	"encoding/json"
	"reflect"
	"testing"
)

// An OpenAI request already in the form Sluice writes (system as a
// string, stop as an array, empty assistant content left out) survives
// OpenAI → Anthropic → OpenAI: messages, tools, tool_choice, stop,
// sampling and user. Only the cap's name changes, to the current one.
func TestRoundTripOpenAIRequest(t *testing.T) {
	in := `{
	  "model": "gpt-4o",
	  "messages": [
	    {"role": "system", "content": "Be brief."},
	    {"role": "user", "content": "Weather in Paris?"},
	    {"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
	    {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
	    {"role": "assistant", "content": "It is 18C."},
	    {"role": "user", "content": [{"type": "text", "text": "And this?"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}
	  ],
	  "max_tokens": 200,
	  "stop": ["END"],
	  "temperature": 0.3,
	  "top_p": 0.8,
	  "stream": true,
	  "stream_options": {"include_usage": true},
	  "tools": [{"type": "function", "function": {"name": "get_weather", "description": "d", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}],
	  "tool_choice": "required",
	  "parallel_tool_calls": false,
	  "user": "u1"
	}`
	an, err := RequestToAnthropic([]byte(in), Options{})
	if err != nil {
		t.Fatal(err)
	}
	back, err := RequestToOpenAI(an.Body, Options{LegacyMaxTokens: true})
	if err != nil {
		t.Fatal(err)
	}
	var want, got map[string]any
	_ = json.Unmarshal([]byte(in), &want)
	if err := json.Unmarshal(back.Body, &got); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"model", "messages", "max_tokens", "stop", "temperature", "top_p", "stream", "stream_options", "tools", "tool_choice", "parallel_tool_calls", "user"} {
		if !reflect.DeepEqual(got[k], want[k]) {
			t.Errorf("%s: got %v, want %v", k, got[k], want[k])
		}
	}
	if len(got) != len(want) {
		t.Errorf("got keys %v, want %v", keys(got), keys(want))
	}
}

// Likewise an Anthropic request in Sluice's form survives Anthropic →
// OpenAI → Anthropic.
func TestRoundTripAnthropicRequest(t *testing.T) {
	in := `{
	  "model": "claude-sonnet-4-5",
	  "system": "Be brief.",
	  "messages": [
	    {"role": "user", "content": "Weather in Paris?"},
	    {"role": "assistant", "content": [{"type": "text", "text": "Checking."}, {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}]},
	    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "18C"}, {"type": "text", "text": "Warm?"}]},
	    {"role": "assistant", "content": "Yes."},
	    {"role": "user", "content": [{"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}]}
	  ],
	  "max_tokens": 200,
	  "stop_sequences": ["END"],
	  "temperature": 0.3,
	  "top_p": 0.8,
	  "stream": true,
	  "tools": [{"name": "get_weather", "description": "d", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}],
	  "tool_choice": {"type": "tool", "name": "get_weather", "disable_parallel_tool_use": true},
	  "metadata": {"user_id": "u1"}
	}`
	oa, err := RequestToOpenAI([]byte(in), Options{})
	if err != nil {
		t.Fatal(err)
	}
	back, err := RequestToAnthropic(oa.Body, Options{})
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, back.Body, []byte(in))
}

func TestRoundTripResponses(t *testing.T) {
	t.Run("openai → anthropic → openai", func(t *testing.T) {
		in := `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"gpt-4o",
		  "choices":[{"index":0,"message":{"role":"assistant","content":"Let me look.","tool_calls":[
		    {"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},"logprobs":null,"finish_reason":"tool_calls"}],
		  "usage":{"prompt_tokens":100,"completion_tokens":20,"total_tokens":120,"prompt_tokens_details":{"cached_tokens":64}}}`
		an, err := ResponseToAnthropic([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		back, err := ResponseToOpenAI(an, 1700000000)
		if err != nil {
			t.Fatal(err)
		}
		sameJSON(t, back, []byte(in))
	})
	t.Run("anthropic → openai → anthropic", func(t *testing.T) {
		in := `{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5",
		  "content":[{"type":"text","text":"Sure."},{"type":"tool_use","id":"toolu_1","name":"f","input":{"a":[1,2]}}],
		  "stop_reason":"tool_use","stop_sequence":null,
		  "usage":{"input_tokens":30,"output_tokens":12,"cache_read_input_tokens":500}}`
		oa, err := ResponseToOpenAI([]byte(in), 1)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ResponseToAnthropic(oa)
		if err != nil {
			t.Fatal(err)
		}
		sameJSON(t, back, []byte(in))
	})
	// stop_reason values that OpenAI folds together come back as the
	// commonest of them.
	for _, tc := range []struct{ stop, finish, back string }{
		{"end_turn", "stop", "end_turn"},
		{"stop_sequence", "stop", "end_turn"},
		{"max_tokens", "length", "max_tokens"},
		{"tool_use", "tool_calls", "tool_use"},
		{"refusal", "content_filter", "refusal"},
		{"pause_turn", "stop", "end_turn"},
	} {
		if f := FinishReason(tc.stop); f != tc.finish {
			t.Errorf("FinishReason(%s) = %s, want %s", tc.stop, f, tc.finish)
		}
		if s := StopReason(tc.finish); s != tc.back {
			t.Errorf("StopReason(%s) = %s, want %s", tc.finish, s, tc.back)
		}
	}
}

// A stream crosses twice and comes back with the same text, tool calls,
// stop reason and usage.
func TestRoundTripStream(t *testing.T) {
	in := readGolden(t, "streams/to_openai/tool_use.in.sse")
	events, _ := ParseEvents(in)
	oa := feedAll(t, NewStreamToOpenAI(StreamConfig{IncludeUsage: true}), events)
	an := feedAll(t, NewStreamToAnthropic(), oa)
	want, got := assembleAnthropic(t, events), assembleAnthropic(t, an)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}

	in = readGolden(t, "streams/to_anthropic/tool_calls.in.sse")
	events, _ = ParseEvents(in)
	an = feedAll(t, NewStreamToAnthropic(), events)
	oa = feedAll(t, NewStreamToOpenAI(StreamConfig{IncludeUsage: true}), an)
	if w, g := assembleOpenAI(t, events), assembleOpenAI(t, oa); !reflect.DeepEqual(g, w) {
		t.Errorf("got %+v\nwant %+v", g, w)
	}
}

func keys(m map[string]any) []string {
	var k []string
	for key := range m {
		k = append(k, key)
	}
	return k
}
