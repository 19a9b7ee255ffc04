package grammar

import "strings"

// responses holds a Responses API stream to its grammar.
type responses struct {
	started bool
	ended   bool
	endType string
	seq     int64
	hasSeq  bool
	items   map[int64]*responseItem
	order   []int64 // output indexes in the order they were added
}

type responseItem struct {
	id    string
	done  bool
	parts map[int64]bool // content index: done
}

// The event types of the Responses API's stream, as OpenAI documents
// them (and its SDKs' stream event union lists them).
var responsesTypes = func() map[string]bool {
	m := map[string]bool{"error": true}
	for _, t := range []string{
		"created", "in_progress", "queued", "completed", "incomplete", "failed",
		"output_item.added", "output_item.done", "content_part.added", "content_part.done",
		"output_text.delta", "output_text.done", "output_text.annotation.added",
		"refusal.delta", "refusal.done",
		"function_call_arguments.delta", "function_call_arguments.done",
		"custom_tool_call_input.delta", "custom_tool_call_input.done",
		"reasoning_summary_part.added", "reasoning_summary_part.done",
		"reasoning_summary_text.delta", "reasoning_summary_text.done",
		"reasoning_text.delta", "reasoning_text.done",
		"audio.delta", "audio.done", "audio.transcript.delta", "audio.transcript.done",
		"web_search_call.in_progress", "web_search_call.searching", "web_search_call.completed",
		"file_search_call.in_progress", "file_search_call.searching", "file_search_call.completed",
		"code_interpreter_call.in_progress", "code_interpreter_call.interpreting", "code_interpreter_call.completed",
		"code_interpreter_call_code.delta", "code_interpreter_call_code.done",
		"image_generation_call.in_progress", "image_generation_call.generating",
		"image_generation_call.partial_image", "image_generation_call.completed",
		"mcp_call.in_progress", "mcp_call.completed", "mcp_call.failed",
		"mcp_call_arguments.delta", "mcp_call_arguments.done",
		"mcp_list_tools.in_progress", "mcp_list_tools.completed", "mcp_list_tools.failed",
		"shell_call_command.added", "shell_call_command.delta", "shell_call_command.done",
		"shell_call_output_content.delta", "shell_call_output_content.done",
		"compaction.compacting",
	} {
		m["response."+t] = true
	}
	return m
}()

// The events whose data carries the whole response object.
var responsesLifecycle = map[string]bool{
	"response.created": true, "response.in_progress": true, "response.queued": true,
	"response.completed": true, "response.incomplete": true, "response.failed": true,
}

// The events of a content part: they come between the part's added and
// done.
var responsesPartEvents = map[string]bool{
	"response.output_text.delta": true, "response.output_text.done": true, "response.output_text.annotation.added": true,
	"response.refusal.delta": true, "response.refusal.done": true,
}

func (c *responses) event(ev Event) *Violation {
	if c.ended {
		return violate(RuleAfterEnd, "", "an event after %s, which is the stream's last", c.endType)
	}
	o, typ, v := typed(ev, func(t string) bool { return responsesTypes[t] }, "the Responses API", " by its type")
	if v != nil {
		return v
	}
	seq, ok := o.integer("sequence_number")
	switch {
	case !ok:
		return violate(RuleSequence, typ, "sequence_number is %s, want an integer", o.describe("sequence_number"))
	case c.hasSeq && seq <= c.seq:
		return violate(RuleSequence, typ, "sequence_number %d after %d; it strictly increases", seq, c.seq)
	}
	c.seq, c.hasSeq = seq, true
	if typ == "error" {
		if _, ok := o.str("message"); !ok {
			return violate(RuleShape, typ, "message is %s, want a string", o.describe("message"))
		}
		c.ended, c.endType = true, typ
		return nil
	}
	if !c.started && typ != "response.created" {
		return violate(RuleFirst, typ, "%s before response.created, which comes first", typ)
	}
	if responsesLifecycle[typ] {
		r, ok := o.obj("response")
		if !ok {
			return violate(RuleShape, typ, "response is %s, want an object", o.describe("response"))
		}
		if id, _ := r.str("id"); id == "" {
			return violate(RuleShape, typ, "response.id is %s, want a string", r.describe("id"))
		}
		if _, ok := r.str("status"); !ok {
			return violate(RuleShape, typ, "response.status is %s, want a string", r.describe("status"))
		}
	}
	switch typ {
	case "response.created":
		if c.started {
			return violate(RuleFirst, typ, "a second response.created")
		}
		c.started, c.items = true, map[int64]*responseItem{}
		return nil
	case "response.completed":
		for _, i := range c.order {
			if !c.items[i].done {
				return violate(RuleItems, typ, "response.completed while output item %d is not done", i)
			}
		}
		fallthrough
	case "response.incomplete", "response.failed":
		c.ended, c.endType = true, typ
		return nil
	case "response.in_progress", "response.queued":
		return nil
	case "response.audio.delta", "response.audio.done", "response.audio.transcript.delta", "response.audio.transcript.done":
		// The audio events name no output item.
		return nil
	case "response.output_item.added":
		i, v := c.outputIndex(o, typ)
		if v != nil {
			return v
		}
		item, ok := o.obj("item")
		if !ok {
			return violate(RuleShape, typ, "item is %s, want an object", o.describe("item"))
		}
		if _, ok := item.str("type"); !ok {
			return violate(RuleShape, typ, "item.type is %s, want a string", item.describe("type"))
		}
		if c.items[i] != nil {
			return violate(RuleItems, typ, "output item %d added a second time", i)
		}
		id, _ := item.str("id")
		c.items[i] = &responseItem{id: id, parts: map[int64]bool{}}
		c.order = append(c.order, i)
		return nil
	}
	// Every other event belongs to an output item that is open.
	i, v := c.outputIndex(o, typ)
	if v != nil {
		return v
	}
	it := c.items[i]
	switch {
	case it == nil:
		return violate(RuleItems, typ, "output item %d before its response.output_item.added", i)
	case it.done:
		return violate(RuleItems, typ, "output item %d after its response.output_item.done", i)
	}
	if id, ok := o.str("item_id"); ok && it.id != "" && id != it.id {
		return violate(RuleItems, typ, "item_id %q, but output item %d is %q", id, i, it.id)
	}
	switch {
	case typ == "response.output_item.done":
		for ci, done := range it.parts {
			if !done {
				return violate(RuleItems, typ, "output item %d done while its content part %d is not", i, ci)
			}
		}
		it.done = true
	case typ == "response.content_part.added", typ == "response.content_part.done", responsesPartEvents[typ]:
		ci, ok := o.integer("content_index")
		if !ok || ci < 0 {
			return violate(RuleShape, typ, "content_index is %s, want an integer from 0", o.describe("content_index"))
		}
		done, added := it.parts[ci]
		switch {
		case typ == "response.content_part.added" && added:
			return violate(RuleItems, typ, "content part %d of output item %d added a second time", ci, i)
		case typ == "response.content_part.added":
			it.parts[ci] = false
		case !added:
			return violate(RuleItems, typ, "content part %d of output item %d before its response.content_part.added", ci, i)
		case done:
			return violate(RuleItems, typ, "content part %d of output item %d after its response.content_part.done", ci, i)
		case typ == "response.content_part.done":
			it.parts[ci] = true
		}
		if strings.HasSuffix(typ, ".delta") {
			if _, ok := o.str("delta"); !ok {
				return violate(RuleShape, typ, "delta is %s, want a string", o.describe("delta"))
			}
		}
	}
	return nil
}

func (c *responses) outputIndex(o object, typ string) (int64, *Violation) {
	i, ok := o.integer("output_index")
	if !ok || i < 0 {
		return 0, violate(RuleShape, typ, "output_index is %s, want an integer from 0", o.describe("output_index"))
	}
	return i, nil
}

func (c *responses) end() *Violation {
	if c.ended {
		return nil
	}
	return violate(RuleTerminator, "", "the stream ends without response.completed, .incomplete or .failed (or an error event)")
}
