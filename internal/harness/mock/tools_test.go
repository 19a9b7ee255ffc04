package mock

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

const (
	oaiTools = `"tools":[{"type":"function","function":{"name":"other","parameters":{}}},` +
		`{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"},"metric":{"type":"boolean"}}}}}]`
	antTools = `"tools":[{"name":"other","input_schema":{}},` +
		`{"name":"get_weather","input_schema":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"},"metric":{"type":"boolean"}}}}]`
	wantArgs = `{"city":"mock","days":1,"metric":true}`
)

func TestChatToolRoundTrip(t *testing.T) {
	_, url := startMock(t, instant())
	ctx := context.Background()
	call := `{"model":"m",` + oaiTools + `,"tool_choice":{"type":"function","function":{"name":"get_weather"}},"messages":[{"role":"user","content":"weather?"}]}`
	m := decode(t, postJSON(t, ctx, url+"/v1/chat/completions", call), http.StatusOK)
	if path(m, "choices", 0, "finish_reason") != "tool_calls" ||
		path(m, "choices", 0, "message", "tool_calls", 0, "function", "name") != "get_weather" ||
		path(m, "choices", 0, "message", "tool_calls", 0, "function", "arguments") != wantArgs ||
		!strings.HasPrefix(path(m, "choices", 0, "message", "tool_calls", 0, "id").(string), "call_") {
		t.Errorf("tool call answer %s", compact(t, m))
	}

	// Streamed: the call's head, its arguments, then the finish.
	resp := postJSON(t, ctx, url+"/v1/chat/completions", strings.Replace(call, `"model":"m"`, `"model":"m","stream":true`, 1))
	evs, err := newSSE(resp.Body).all()
	if err != nil || len(evs) < 4 {
		t.Fatalf("stream %v %v", evs, err)
	}
	head, args, fin := jsonOf(t, evs[len(evs)-4].data), jsonOf(t, evs[len(evs)-3].data), jsonOf(t, evs[len(evs)-2].data)
	if path(head, "choices", 0, "delta", "tool_calls", 0, "function", "name") != "get_weather" ||
		path(args, "choices", 0, "delta", "tool_calls", 0, "function", "arguments") != wantArgs ||
		path(args, "choices", 0, "delta", "tool_calls", 0, "index") != 0.0 ||
		path(fin, "choices", 0, "finish_reason") != "tool_calls" || evs[len(evs)-1].data != "[DONE]" {
		t.Errorf("stream tail %v", evs[len(evs)-4:])
	}

	// The result goes back: no call, and the answer reads it.
	result := `{"model":"m",` + oaiTools + `,"messages":[{"role":"user","content":"weather?"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},` +
		`{"role":"tool","tool_call_id":"call_1","content":"sunny, 21C"}]}`
	m = decode(t, postJSON(t, ctx, url+"/v1/chat/completions", result), http.StatusOK)
	if path(m, "choices", 0, "finish_reason") != "stop" || path(m, "choices", 0, "message", "tool_calls") != nil ||
		!strings.HasPrefix(path(m, "choices", 0, "message", "content").(string), "tool result: sunny, 21C") {
		t.Errorf("answer to a tool result %s", compact(t, m))
	}

	// tool_choice none, or max_tokens cutting the answer short: no call.
	for _, body := range []string{
		strings.Replace(call, `"tool_choice":{"type":"function","function":{"name":"get_weather"}}`, `"tool_choice":"none"`, 1),
		strings.Replace(call, `"model":"m"`, `"model":"m","max_tokens":1`, 1),
	} {
		m = decode(t, postJSON(t, ctx, url+"/v1/chat/completions", body, "X-Mock-Output-Tokens", "3"), http.StatusOK)
		if path(m, "choices", 0, "message", "tool_calls") != nil {
			t.Errorf("%s: called a tool: %s", body, compact(t, m))
		}
	}
}

func TestMessagesToolRoundTrip(t *testing.T) {
	_, url := startMock(t, instant())
	ctx := context.Background()
	call := `{"model":"c","max_tokens":100,` + antTools + `,"tool_choice":{"type":"tool","name":"get_weather"},"messages":[{"role":"user","content":"weather?"}]}`
	m := decode(t, postJSON(t, ctx, url+"/v1/messages", call), http.StatusOK)
	if m["stop_reason"] != "tool_use" || path(m, "content", 1, "type") != "tool_use" || path(m, "content", 1, "name") != "get_weather" ||
		compact(t, path(m, "content", 1, "input")) != wantArgs {
		t.Errorf("tool call answer %s", compact(t, m))
	}

	resp := postJSON(t, ctx, url+"/v1/messages", strings.Replace(call, `"max_tokens":100`, `"max_tokens":100,"stream":true`, 1))
	evs, err := newSSE(resp.Body).all()
	if err != nil || len(evs) < 6 {
		t.Fatalf("stream %v %v", evs, err)
	}
	tail := evs[len(evs)-6:]
	start, delta, stop := jsonOf(t, tail[1].data), jsonOf(t, tail[2].data), jsonOf(t, tail[3].data)
	if tail[0].name != "content_block_stop" || path(start, "content_block", "type") != "tool_use" || path(start, "index") != 1.0 ||
		path(delta, "delta", "partial_json") != wantArgs || path(stop, "index") != 1.0 ||
		path(jsonOf(t, tail[4].data), "delta", "stop_reason") != "tool_use" || tail[5].name != "message_stop" {
		t.Errorf("stream tail %v", tail)
	}

	result := `{"model":"c","max_tokens":100,` + antTools + `,"messages":[{"role":"user","content":"weather?"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"sunny, 21C"}]}]}]}`
	m = decode(t, postJSON(t, ctx, url+"/v1/messages", result), http.StatusOK)
	if m["stop_reason"] != "end_turn" || len(m["content"].([]any)) != 1 ||
		!strings.HasPrefix(path(m, "content", 0, "text").(string), "tool result: sunny, 21C") {
		t.Errorf("answer to a tool result %s", compact(t, m))
	}
}

func TestResponses(t *testing.T) {
	_, url := startMock(t, instant())
	ctx := context.Background()
	body := `{"model":"gpt-x","instructions":"Be brief.","input":[{"role":"user","content":[{"type":"input_text","text":"Hello there"}]}]}`
	m := decode(t, postJSON(t, ctx, url+"/v1/responses", body, "X-Mock-Output-Tokens", "4"), http.StatusOK)
	if m["object"] != "response" || m["status"] != "completed" || path(m, "output", 0, "content", 0, "type") != "output_text" ||
		strings.Count(path(m, "output", 0, "content", 0, "text").(string), " ") != 4 ||
		path(m, "usage", "input_tokens") != 5.0 || path(m, "usage", "output_tokens") != 4.0 {
		t.Errorf("response %s", compact(t, m))
	}
	m = decode(t, postJSON(t, ctx, url+"/v1/responses", `{"model":"m","input":"hi","max_output_tokens":2}`, "X-Mock-Output-Tokens", "4"), http.StatusOK)
	if m["status"] != "incomplete" || path(m, "incomplete_details", "reason") != "max_output_tokens" {
		t.Errorf("capped response %s", compact(t, m))
	}

	resp := postJSON(t, ctx, url+"/v1/responses", `{"model":"m","input":"hi","stream":true}`, "X-Mock-Output-Tokens", "3")
	evs, err := newSSE(resp.Body).all()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for i, ev := range evs {
		names = append(names, ev.name)
		d := jsonOf(t, ev.data)
		if d["type"] != ev.name || d["sequence_number"] != float64(i) || !strings.HasPrefix(ev.data, `{"type":"`) {
			t.Errorf("event %d: %s %s", i, ev.name, ev.data)
		}
	}
	want := "response.created response.in_progress response.output_item.added response.content_part.added " +
		"response.output_text.delta response.output_text.delta response.output_text.delta " +
		"response.output_text.done response.content_part.done response.output_item.done response.completed"
	if strings.Join(names, " ") != want {
		t.Errorf("events %v", names)
	}
	last := jsonOf(t, evs[len(evs)-1].data)
	if path(last, "response", "usage", "output_tokens") != 3.0 ||
		path(last, "response", "output", 0, "content", 0, "text") != path(jsonOf(t, evs[len(evs)-4].data), "text") {
		t.Errorf("completed %s", evs[len(evs)-1].data)
	}
}
