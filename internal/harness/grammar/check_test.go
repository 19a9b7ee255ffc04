package grammar

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// Streams built event by event: each planted violation is a valid
// stream with one thing wrong, and must fail with the rule it breaks,
// at the event that breaks it.

// sse is one event: named when name is not empty.
func sse(name, data string) string {
	if name == "" {
		return "data: " + data + "\n\n"
	}
	return "event: " + name + "\ndata: " + data + "\n\n"
}

// chunk is an OpenAI chat chunk with the given choices (a JSON array's
// inside) and extra top-level fields.
func chunk(choices string, extra ...string) string {
	s := `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1733570000,"model":"gpt-4o-mini","choices":[` + choices + `]`
	for _, e := range extra {
		s += "," + e
	}
	return sse("", s+"}")
}

func delta(d string) string { return `{"index":0,"delta":{` + d + `},"finish_reason":null}` }

func finish(reason string) string { return `{"index":0,"delta":{},"finish_reason":"` + reason + `"}` }

var (
	oaiRole   = chunk(delta(`"role":"assistant","content":""`))
	oaiText   = chunk(delta(`"content":"Hi"`))
	oaiFinish = chunk(finish("stop"))
	oaiUsage  = chunk("", `"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}`)
	oaiDone   = sse("", "[DONE]")
	oaiError  = sse("", `{"error":{"message":"overloaded","type":"server_error","param":null,"code":null}}`)
	oaiCall0  = chunk(delta(`"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]`))
	oaiArgs0  = chunk(delta(`"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":\"Oslo\"}"}}]`))
	oaiCall1  = chunk(delta(`"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"get_time","arguments":"{}"}}]`))
	oaiTools  = chunk(finish("tool_calls"))
	verdict   = sse("sluice.validation", `{"type":"sluice.validation","valid":true}`)
)

func ant(typ, fields string) string {
	data := `{"type":"` + typ + `"`
	if fields != "" {
		data += "," + fields
	}
	return sse(typ, data+"}")
}

var (
	antStart     = ant("message_start", `"message":{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1}}`)
	antText0     = ant("content_block_start", `"index":0,"content_block":{"type":"text","text":""}`)
	antPing      = ant("ping", "")
	antDelta0    = ant("content_block_delta", `"index":0,"delta":{"type":"text_delta","text":"Hi"}`)
	antStop0     = ant("content_block_stop", `"index":0`)
	antTool1     = ant("content_block_start", `"index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}`)
	antJSON1     = ant("content_block_delta", `"index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\":\"Oslo\"}"}`)
	antStop1     = ant("content_block_stop", `"index":1`)
	antThink0    = ant("content_block_start", `"index":0,"content_block":{"type":"thinking","thinking":"","signature":""}`)
	antThinkD0   = ant("content_block_delta", `"index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}`)
	antSig0      = ant("content_block_delta", `"index":0,"delta":{"type":"signature_delta","signature":"c2ln"}`)
	antText1     = ant("content_block_start", `"index":1,"content_block":{"type":"text","text":""}`)
	antDelta1    = ant("content_block_delta", `"index":1,"delta":{"type":"text_delta","text":"Hi"}`)
	antMsgDelta  = ant("message_delta", `"delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":1}`)
	antMsgStop   = ant("message_stop", "")
	antError     = ant("error", `"error":{"type":"overloaded_error","message":"Overloaded"}`)
	antWholeText = antStart + antText0 + antPing + antDelta0 + antStop0 + antMsgDelta + antMsgStop
)

// rsp is a Responses API event with its sequence number.
func rsp(typ string, seq int, fields string) string {
	data := fmt.Sprintf(`{"type":%q,"sequence_number":%d`, typ, seq)
	if fields != "" {
		data += "," + fields
	}
	return sse(typ, data+"}")
}

const (
	rspObject = `"response":{"id":"resp_1","object":"response","status":"in_progress","model":"gpt-4.1","output":[]}`
	rspDone   = `"response":{"id":"resp_1","object":"response","status":"completed","model":"gpt-4.1","output":[]}`
	rspItem   = `"output_index":0,"item":{"type":"message","id":"msg_1","status":"in_progress","role":"assistant","content":[]}`
	rspPart   = `"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}`
	rspDelta  = `"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi"`
	rspText   = `"item_id":"msg_1","output_index":0,"content_index":0,"text":"Hi"`
)

// rspWhole is a whole Responses stream, one event per string, numbered
// from 0.
func rspWhole() []string {
	return []string{
		rsp("response.created", 0, rspObject),
		rsp("response.in_progress", 1, rspObject),
		rsp("response.output_item.added", 2, rspItem),
		rsp("response.content_part.added", 3, rspPart),
		rsp("response.output_text.delta", 4, rspDelta),
		rsp("response.output_text.done", 5, rspText),
		rsp("response.content_part.done", 6, rspPart),
		rsp("response.output_item.done", 7, rspItem),
		rsp("response.completed", 8, rspDone),
	}
}

func joined(evs ...string) string { return strings.Join(evs, "") }

// with returns rspWhole with events i.. replaced by evs (to its end
// when cut).
func rspWith(i int, cut bool, evs ...string) string {
	w := rspWhole()
	rest := w[min(i+len(evs), len(w)):]
	if cut {
		rest = nil
	}
	return joined(append(append(w[:i:i], evs...), rest...)...)
}

// Valid streams: each of the dialects' legal forms passes.
func TestGrammarValidStreams(t *testing.T) {
	for _, c := range []struct {
		name   string
		d      Dialect
		stream string
	}{
		{"openai text with usage", OpenAIChat, oaiRole + oaiText + oaiFinish + oaiUsage + oaiDone},
		{"openai text without usage", OpenAIChat, oaiRole + oaiText + oaiFinish + oaiDone},
		{"openai usage inline on the finish", OpenAIChat, oaiRole + oaiText + chunk(finish("stop"), `"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}`) + oaiDone},
		{"openai two tool calls", OpenAIChat, oaiRole + oaiCall0 + oaiArgs0 + oaiCall1 + oaiTools + oaiUsage + oaiDone},
		{"openai two choices", OpenAIChat, chunk(delta(`"content":"a"`)+`,{"index":1,"delta":{"content":"b"},"finish_reason":null}`) +
			chunk(`{"index":1,"delta":{},"finish_reason":"length"}`) + chunk(finish("stop")) + oaiDone},
		{"openai error mid-stream", OpenAIChat, oaiRole + oaiText + oaiError},
		{"openai error first", OpenAIChat, oaiError},
		{"openai comments and ids", OpenAIChat, ": hi\n\nid: 1\n" + oaiRole + "retry: 5\n" + oaiFinish + oaiDone},
		{"anthropic text", Anthropic, antWholeText},
		{"anthropic text, then a tool", Anthropic, antStart + antText0 + antDelta0 + antStop0 + antTool1 + antPing + antJSON1 + antStop1 + antMsgDelta + antMsgStop},
		{"anthropic thinking, then text", Anthropic, antStart + antThink0 + antThinkD0 + antSig0 + antStop0 + antText1 + antDelta1 + antStop1 + antMsgDelta + antMsgStop},
		{"anthropic no blocks", Anthropic, antStart + antMsgDelta + antMsgStop},
		{"anthropic error mid-block", Anthropic, antStart + antText0 + antDelta0 + antError},
		{"anthropic error first", Anthropic, antError},
		{"responses text", Responses, joined(rspWhole()...)},
		{"responses incomplete with an item open", Responses, rspWith(5, true, rsp("response.incomplete", 9, rspDone))},
		{"responses error mid-stream", Responses, rspWith(5, true, rsp("error", 5, `"code":"server_error","message":"boom","param":null`))},
		{"responses function call", Responses, joined(
			rsp("response.created", 0, rspObject),
			rsp("response.output_item.added", 1, `"output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"f","arguments":""}`),
			rsp("response.function_call_arguments.delta", 2, `"item_id":"fc_1","output_index":0,"delta":"{}"`),
			rsp("response.function_call_arguments.done", 3, `"item_id":"fc_1","output_index":0,"arguments":"{}"`),
			rsp("response.output_item.done", 4, `"output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"f","arguments":"{}"}`),
			rsp("response.completed", 6, rspDone))},
	} {
		if err := Check(c.d, []byte(c.stream)); err != nil {
			t.Errorf("%s: %v\n%s", c.name, err, c.stream)
		}
	}
}

// Each rule, broken once: the violation names the event's index and the
// rule.
func TestGrammarPlantedViolations(t *testing.T) {
	badCall := func(call string) string {
		return oaiRole + chunk(delta(`"tool_calls":[`+call+`]`)) + oaiTools + oaiDone
	}
	for _, c := range []struct {
		name   string
		d      Dialect
		stream string
		index  int
		rule   Rule
	}{
		// OpenAI chat.
		{"openai event: message", OpenAIChat, oaiRole + "event: message\n" + oaiText + oaiFinish + oaiDone, 1, RuleNoEventField},
		{"openai a named chunk", OpenAIChat, sse("chunk", `{}`) + oaiDone, 0, RuleNoEventField},
		{"openai data not JSON", OpenAIChat, oaiRole + sse("", `{"id":`) + oaiFinish + oaiDone, 1, RuleJSON},
		{"openai data two values", OpenAIChat, oaiRole + sse("", `{} {}`) + oaiDone, 1, RuleJSON},
		{"openai data an array", OpenAIChat, sse("", `[1]`) + oaiDone, 0, RuleJSON},
		{"openai object of a whole answer", OpenAIChat, oaiRole + strings.Replace(oaiText, ".chunk", "", 1) + oaiFinish + oaiDone, 1, RuleShape},
		{"openai no id", OpenAIChat, strings.Replace(oaiRole, `"id":"chatcmpl-1",`, "", 1) + oaiFinish + oaiDone, 0, RuleShape},
		{"openai created a string", OpenAIChat, strings.Replace(oaiRole, `1733570000`, `"now"`, 1) + oaiFinish + oaiDone, 0, RuleShape},
		{"openai no model", OpenAIChat, strings.Replace(oaiRole, `"model":"gpt-4o-mini",`, "", 1) + oaiFinish + oaiDone, 0, RuleShape},
		{"openai choice without delta", OpenAIChat, oaiRole + chunk(`{"index":0,"finish_reason":null}`) + oaiFinish + oaiDone, 1, RuleShape},
		{"openai choice without index", OpenAIChat, oaiRole + chunk(`{"delta":{},"finish_reason":null}`) + oaiFinish + oaiDone, 1, RuleShape},
		{"openai unknown finish reason", OpenAIChat, oaiRole + chunk(finish("done")) + oaiDone, 1, RuleShape},
		{"openai no choices, no usage", OpenAIChat, oaiRole + oaiFinish + chunk("") + oaiDone, 2, RuleShape},
		{"openai finish twice", OpenAIChat, oaiRole + oaiFinish + oaiFinish + oaiDone, 2, RuleFinishOnce},
		{"openai text after the finish", OpenAIChat, oaiRole + oaiFinish + oaiText + oaiDone, 2, RuleAfterFinish},
		{"openai usage before the finish", OpenAIChat, oaiRole + oaiText + oaiUsage + oaiFinish + oaiDone, 2, RuleUsageChunk},
		{"openai usage first", OpenAIChat, oaiUsage + oaiDone, 0, RuleUsageChunk},
		{"openai a chunk after the usage", OpenAIChat, oaiRole + oaiFinish + oaiUsage + chunk(`{"index":1,"delta":{},"finish_reason":"stop"}`) + oaiDone, 3, RuleUsageChunk},
		{"openai tool call without index", OpenAIChat, badCall(`{"id":"call_1","type":"function","function":{"name":"f","arguments":""}}`), 1, RuleToolCall},
		{"openai tool call without id", OpenAIChat, badCall(`{"index":0,"type":"function","function":{"name":"f","arguments":""}}`), 1, RuleToolCall},
		{"openai tool call without type", OpenAIChat, badCall(`{"index":0,"id":"call_1","function":{"name":"f","arguments":""}}`), 1, RuleToolCall},
		{"openai tool call without name", OpenAIChat, badCall(`{"index":0,"id":"call_1","type":"function","function":{"arguments":""}}`), 1, RuleToolCall},
		{"openai tool call arguments an object", OpenAIChat, badCall(`{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":{}}}`), 1, RuleToolCall},
		{"openai second call's head missing", OpenAIChat, oaiRole + oaiCall0 + chunk(delta(`"tool_calls":[{"index":1,"function":{"arguments":"{}"}}]`)) + oaiTools + oaiDone, 2, RuleToolCall},
		{"openai [DONE] before the finish", OpenAIChat, oaiRole + oaiText + oaiDone, 2, RuleDoneAfterFinish},
		{"openai [DONE] alone", OpenAIChat, oaiDone, 0, RuleDoneAfterFinish},
		{"openai a chunk after [DONE]", OpenAIChat, oaiRole + oaiFinish + oaiDone + oaiText, 3, RuleAfterEnd},
		{"openai a verdict event after [DONE]", OpenAIChat, oaiRole + oaiFinish + oaiDone + verdict, 3, RuleAfterEnd},
		{"openai [DONE] after the error", OpenAIChat, oaiRole + oaiError + oaiDone, 2, RuleAfterEnd},
		{"openai error not an object", OpenAIChat, oaiRole + sse("", `{"error":"busy"}`), 1, RuleShape},
		{"openai no [DONE]", OpenAIChat, oaiRole + oaiText + oaiFinish + oaiUsage, 4, RuleTerminator},
		{"openai [DONE] without its blank line", OpenAIChat, oaiRole + oaiFinish + "data: [DONE]\n", 2, RuleFraming},

		// Anthropic.
		{"anthropic no event: field", Anthropic, antStart + strings.TrimPrefix(antText0, "event: content_block_start\n") + antDelta0 + antStop0 + antMsgDelta + antMsgStop, 1, RuleEventName},
		{"anthropic event: differs from type", Anthropic, antStart + antText0 + strings.Replace(antDelta0, "event: content_block_delta", "event: content_block_start", 1) + antStop0 + antMsgDelta + antMsgStop, 2, RuleEventName},
		{"anthropic data without type", Anthropic, antStart + sse("ping", `{}`) + antMsgDelta + antMsgStop, 1, RuleShape},
		{"anthropic unknown type", Anthropic, antStart + ant("message_pause", "") + antMsgDelta + antMsgStop, 1, RuleKnownType},
		{"anthropic not JSON", Anthropic, antStart + sse("ping", `{"type":"ping"`) + antMsgDelta + antMsgStop, 1, RuleJSON},
		{"anthropic ping first", Anthropic, antPing + antWholeText, 0, RuleFirst},
		{"anthropic a block first", Anthropic, antText0 + antStop0 + antMsgDelta + antMsgStop, 0, RuleFirst},
		{"anthropic two message_start", Anthropic, antStart + antStart + antMsgDelta + antMsgStop, 1, RuleFirst},
		{"anthropic message_start without message", Anthropic, ant("message_start", "") + antMsgDelta + antMsgStop, 0, RuleShape},
		{"anthropic first block index 1", Anthropic, antStart + antText1 + antDelta1 + antStop1 + antMsgDelta + antMsgStop, 1, RuleBlocks},
		{"anthropic a block skipped", Anthropic, antStart + antText0 + antStop0 + ant("content_block_start", `"index":2,"content_block":{"type":"text","text":""}`), 3, RuleBlocks},
		{"anthropic two blocks open", Anthropic, antStart + antText0 + antTool1 + antStop1 + antStop0 + antMsgDelta + antMsgStop, 2, RuleBlocks},
		{"anthropic delta for another block", Anthropic, antStart + antText0 + antDelta1 + antStop0 + antMsgDelta + antMsgStop, 2, RuleBlocks},
		{"anthropic delta with no block open", Anthropic, antStart + antText0 + antStop0 + antDelta0 + antMsgDelta + antMsgStop, 3, RuleBlocks},
		{"anthropic stop of another block", Anthropic, antStart + antText0 + antStop1 + antMsgDelta + antMsgStop, 2, RuleBlocks},
		{"anthropic stop with no block open", Anthropic, antStart + antText0 + antStop0 + antStop0 + antMsgDelta + antMsgStop, 3, RuleBlocks},
		{"anthropic a block after message_delta", Anthropic, antStart + antText0 + antStop0 + antMsgDelta + antTool1 + antStop1 + antMsgStop, 4, RuleBlocks},
		{"anthropic unknown block type", Anthropic, antStart + ant("content_block_start", `"index":0,"content_block":{"type":"image"}`) + antStop0 + antMsgDelta + antMsgStop, 1, RuleKnownType},
		{"anthropic tool_use without name", Anthropic, antStart + ant("content_block_start", `"index":0,"content_block":{"type":"tool_use","id":"toolu_1","input":{}}`) + antStop0 + antMsgDelta + antMsgStop, 1, RuleShape},
		{"anthropic input_json_delta on text", Anthropic, antStart + antText0 + ant("content_block_delta", `"index":0,"delta":{"type":"input_json_delta","partial_json":"{}"}`) + antStop0 + antMsgDelta + antMsgStop, 2, RuleDeltaFits},
		{"anthropic text_delta on tool_use", Anthropic, antStart + antText0 + antStop0 + antTool1 + antDelta1 + antStop1 + antMsgDelta + antMsgStop, 4, RuleDeltaFits},
		{"anthropic thinking_delta on text", Anthropic, antStart + antText0 + antThinkD0 + antStop0 + antMsgDelta + antMsgStop, 2, RuleDeltaFits},
		{"anthropic text_delta on thinking", Anthropic, antStart + antThink0 + antDelta0 + antStop0 + antMsgDelta + antMsgStop, 2, RuleDeltaFits},
		{"anthropic unknown delta type", Anthropic, antStart + antText0 + ant("content_block_delta", `"index":0,"delta":{"type":"image_delta"}`) + antStop0 + antMsgDelta + antMsgStop, 2, RuleKnownType},
		{"anthropic text_delta without text", Anthropic, antStart + antText0 + ant("content_block_delta", `"index":0,"delta":{"type":"text_delta"}`) + antStop0 + antMsgDelta + antMsgStop, 2, RuleShape},
		{"anthropic message_delta with a block open", Anthropic, antStart + antText0 + antDelta0 + antMsgDelta + antStop0 + antMsgStop, 3, RuleMessageDelta},
		{"anthropic two message_delta", Anthropic, antStart + antMsgDelta + antMsgDelta + antMsgStop, 2, RuleMessageDelta},
		{"anthropic message_delta without usage", Anthropic, antStart + ant("message_delta", `"delta":{"stop_reason":"end_turn"}`) + antMsgStop, 1, RuleShape},
		{"anthropic message_stop without message_delta", Anthropic, antStart + antText0 + antDelta0 + antStop0 + antMsgStop, 4, RuleMessageDelta},
		{"anthropic message_stop with a block open", Anthropic, antStart + antText0 + antDelta0 + antMsgStop, 3, RuleMessageDelta},
		{"anthropic an event after message_stop", Anthropic, antWholeText + antPing, 7, RuleAfterEnd},
		{"anthropic a verdict event after message_stop", Anthropic, antWholeText + verdict, 7, RuleAfterEnd},
		{"anthropic an event after the error", Anthropic, antStart + antError + antMsgStop, 2, RuleAfterEnd},
		{"anthropic error without message", Anthropic, antStart + ant("error", `"error":{"type":"api_error"}`), 1, RuleShape},
		{"anthropic no message_stop", Anthropic, antStart + antText0 + antDelta0 + antStop0 + antMsgDelta, 5, RuleTerminator},
		{"anthropic OpenAI's error shape", Anthropic, antStart + antText0 + oaiError, 2, RuleShape},

		// Responses.
		{"responses no event: field", Responses, rspWith(4, false, strings.TrimPrefix(rsp("response.output_text.delta", 4, rspDelta), "event: response.output_text.delta\n")), 4, RuleEventName},
		{"responses event: differs from type", Responses, rspWith(4, false, strings.Replace(rsp("response.output_text.delta", 4, rspDelta), "event: response.output_text.delta", "event: response.output_text", 1)), 4, RuleEventName},
		{"responses unknown type", Responses, rspWith(4, false, rsp("response.output_text.deltas", 4, rspDelta)), 4, RuleKnownType},
		{"responses a chat chunk", Responses, rspWith(4, false, oaiText), 4, RuleShape},
		{"responses [DONE]", Responses, joined(rspWhole()...) + oaiDone, 9, RuleAfterEnd},
		{"responses no sequence_number", Responses, rspWith(4, false, strings.Replace(rsp("response.output_text.delta", 4, rspDelta), `"sequence_number":4,`, "", 1)), 4, RuleSequence},
		{"responses sequence_number repeated", Responses, rspWith(4, false, rsp("response.output_text.delta", 3, rspDelta)), 4, RuleSequence},
		{"responses sequence_number a string", Responses, rspWith(4, false, strings.Replace(rsp("response.output_text.delta", 4, rspDelta), `"sequence_number":4`, `"sequence_number":"4"`, 1)), 4, RuleSequence},
		{"responses in_progress first", Responses, joined(rspWhole()[1:]...), 0, RuleFirst},
		{"responses two created", Responses, rspWith(1, false, rsp("response.created", 1, rspObject)), 1, RuleFirst},
		{"responses created without response", Responses, rspWith(0, false, rsp("response.created", 0, "")), 0, RuleShape},
		{"responses delta before its item", Responses, joined(rsp("response.created", 0, rspObject), rsp("response.output_text.delta", 1, rspDelta)), 1, RuleItems},
		{"responses delta before its part", Responses, rspWith(3, true, rsp("response.output_text.delta", 3, rspDelta)), 3, RuleItems},
		{"responses delta after its part", Responses, rspWith(7, true, rsp("response.output_text.delta", 7, rspDelta)), 7, RuleItems},
		{"responses delta after its item", Responses, rspWith(8, true, rsp("response.output_text.delta", 8, rspDelta)), 8, RuleItems},
		{"responses item added twice", Responses, rspWith(3, true, rsp("response.output_item.added", 3, rspItem)), 3, RuleItems},
		{"responses item done with a part open", Responses, rspWith(6, true, rsp("response.output_item.done", 6, rspItem)), 6, RuleItems},
		{"responses another item's id", Responses, rspWith(4, false, rsp("response.output_text.delta", 4, strings.Replace(rspDelta, "msg_1", "msg_2", 1))), 4, RuleItems},
		{"responses completed with an item open", Responses, rspWith(7, true, rsp("response.completed", 7, rspDone)), 7, RuleItems},
		{"responses an event after completed", Responses, joined(rspWhole()...) + rsp("response.in_progress", 9, rspObject), 9, RuleAfterEnd},
		{"responses a verdict event after completed", Responses, joined(rspWhole()...) + verdict, 9, RuleAfterEnd},
		{"responses an event after the error", Responses, rspWith(5, true, rsp("error", 5, `"code":"server_error","message":"boom","param":null`), rsp("response.failed", 6, rspDone)), 6, RuleAfterEnd},
		{"responses OpenAI chat's error shape", Responses, rspWith(5, true, oaiError), 5, RuleShape},
		{"responses no terminal event", Responses, joined(rspWhole()[:8]...), 8, RuleTerminator},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := Check(c.d, []byte(c.stream))
			var v *Violation
			if !errors.As(err, &v) {
				t.Fatalf("Check = %v; want a %s violation at event %d\n%s", err, c.rule, c.index, c.stream)
			}
			if v.Rule != c.rule || v.Index != c.index || v.Dialect != c.d {
				t.Fatalf("Check = %v\nwant rule %s at event %d\n%s", err, c.rule, c.index, c.stream)
			}
			msg := err.Error()
			if !strings.Contains(msg, fmt.Sprintf("event %d", c.index)) || !strings.Contains(msg, string(c.rule)) || !strings.Contains(msg, c.d.String()) {
				t.Errorf("message %q does not name the dialect, event %d and rule %s", msg, c.index, c.rule)
			}
		})
	}
}
