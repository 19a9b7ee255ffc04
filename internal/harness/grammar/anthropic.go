package grammar

// anthropic holds a Messages stream to its grammar.
type anthropic struct {
	started  bool
	open     int64  // the open block's index, -1 when none is
	openType string // its type
	next     int64  // the next block's index
	msgDelta bool   // message_delta has come
	stopped  bool   // message_stop has come
	failed   bool   // an error event has come
}

var anthropicTypes = map[string]bool{
	"message_start": true, "content_block_start": true, "content_block_delta": true, "content_block_stop": true,
	"message_delta": true, "message_stop": true, "ping": true, "error": true,
}

// The content blocks a stream may start, each with the deltas it takes
// (none: the block comes whole in its start).
var anthropicBlocks = map[string][]string{
	"text":                                   {"text_delta", "citations_delta"},
	"tool_use":                               {"input_json_delta"},
	"server_tool_use":                        {"input_json_delta"},
	"mcp_tool_use":                           {"input_json_delta"},
	"thinking":                               {"thinking_delta", "signature_delta"},
	"redacted_thinking":                      nil,
	"web_search_tool_result":                 nil,
	"web_fetch_tool_result":                  nil,
	"code_execution_tool_result":             nil,
	"bash_code_execution_tool_result":        nil,
	"text_editor_code_execution_tool_result": nil,
	"tool_search_tool_result":                nil,
	"mcp_tool_result":                        nil,
	"container_upload":                       nil,
}

// The field each delta type carries, and its JSON kind.
var anthropicDeltaField = map[string][2]string{
	"text_delta":       {"text", "string"},
	"input_json_delta": {"partial_json", "string"},
	"thinking_delta":   {"thinking", "string"},
	"signature_delta":  {"signature", "string"},
	"citations_delta":  {"citation", "object"},
}

func (c *anthropic) event(ev Event) *Violation {
	switch {
	case c.stopped:
		return violate(RuleAfterEnd, "", "an event after message_stop, which is the stream's last")
	case c.failed:
		return violate(RuleAfterEnd, "", "an event after the error event, which ends the stream")
	}
	o, typ, v := typed(ev, func(t string) bool { return anthropicTypes[t] }, "Anthropic", ", and its SDKs skip an unnamed one: its text is lost")
	if v != nil {
		return v
	}
	if typ == "error" {
		e, ok := o.obj("error")
		if !ok {
			return violate(RuleShape, typ, "error is %s, want an object", o.describe("error"))
		}
		for _, k := range []string{"type", "message"} {
			if _, ok := e.str(k); !ok {
				return violate(RuleShape, typ, "error.%s is %s, want a string", k, e.describe(k))
			}
		}
		c.failed = true
		return nil
	}
	if !c.started && typ != "message_start" {
		return violate(RuleFirst, typ, "%s before message_start, which comes first", typ)
	}
	switch typ {
	case "message_start":
		if c.started {
			return violate(RuleFirst, typ, "a second message_start")
		}
		m, ok := o.obj("message")
		if !ok {
			return violate(RuleShape, typ, "message is %s, want an object", o.describe("message"))
		}
		if id, ok := m.str("id"); !ok || id == "" {
			return violate(RuleShape, typ, "message.id is %s, want a string", m.describe("id"))
		}
		if m["type"] != "message" || m["role"] != "assistant" {
			return violate(RuleShape, typ, "message.type is %s and role %s, want \"message\" and \"assistant\"", m.describe("type"), m.describe("role"))
		}
		if _, ok := m.arr("content"); !ok {
			return violate(RuleShape, typ, "message.content is %s, want an array", m.describe("content"))
		}
		if _, ok := m.obj("usage"); !ok {
			return violate(RuleShape, typ, "message.usage is %s, want an object", m.describe("usage"))
		}
		c.started = true
	case "content_block_start":
		return c.blockStart(o)
	case "content_block_delta":
		return c.blockDelta(o)
	case "content_block_stop":
		i, v := c.index(o, typ)
		if v != nil {
			return v
		}
		if c.open < 0 {
			return violate(RuleBlocks, typ, "stop of block %d, but no block is open", i)
		}
		if i != c.open {
			return violate(RuleBlocks, typ, "stop of block %d while block %d is open", i, c.open)
		}
		c.open = -1
	case "message_delta":
		switch {
		case c.msgDelta:
			return violate(RuleMessageDelta, typ, "a second message_delta")
		case c.open >= 0:
			return violate(RuleMessageDelta, typ, "message_delta while block %d is open; it comes after the last block's stop", c.open)
		}
		d, ok := o.obj("delta")
		if !ok {
			return violate(RuleShape, typ, "delta is %s, want an object", o.describe("delta"))
		}
		if r, ok := d["stop_reason"]; !ok || (r != nil && kind(r) != "string") {
			return violate(RuleShape, typ, "delta.stop_reason is %s, want a string or null", d.describe("stop_reason"))
		}
		if _, ok := o.obj("usage"); !ok {
			return violate(RuleShape, typ, "usage is %s, want an object (the SDKs read its output_tokens)", o.describe("usage"))
		}
		c.msgDelta = true
	case "message_stop":
		if !c.msgDelta {
			if c.open >= 0 {
				return violate(RuleMessageDelta, typ, "message_stop while block %d is open, with no message_delta before it", c.open)
			}
			return violate(RuleMessageDelta, typ, "message_stop with no message_delta before it")
		}
		c.stopped = true
	}
	return nil
}

// index reads an event's block index.
func (c *anthropic) index(o object, typ string) (int64, *Violation) {
	i, ok := o.integer("index")
	if !ok || i < 0 {
		return 0, violate(RuleShape, typ, "index is %s, want an integer from 0", o.describe("index"))
	}
	return i, nil
}

func (c *anthropic) blockStart(o object) *Violation {
	const typ = "content_block_start"
	i, v := c.index(o, typ)
	if v != nil {
		return v
	}
	switch {
	case c.msgDelta:
		return violate(RuleBlocks, typ, "block %d starts after message_delta", i)
	case c.open >= 0:
		return violate(RuleBlocks, typ, "block %d starts while block %d is open; one is open at a time", i, c.open)
	case i != c.next:
		return violate(RuleBlocks, typ, "block %d starts where block %d comes next; blocks go 0, 1, 2 in order", i, c.next)
	}
	b, ok := o.obj("content_block")
	if !ok {
		return violate(RuleShape, typ, "content_block is %s, want an object", o.describe("content_block"))
	}
	bt, _ := b.str("type")
	if _, known := anthropicBlocks[bt]; !known {
		return violate(RuleKnownType, typ, "block %d: content block type %s is not one of Anthropic's", i, b.describe("type"))
	}
	if bt == "tool_use" || bt == "server_tool_use" || bt == "mcp_tool_use" {
		for _, k := range []string{"id", "name"} {
			if s, _ := b.str(k); s == "" {
				return violate(RuleShape, typ, "block %d: a %s block's %s is %s, want a string", i, bt, k, b.describe(k))
			}
		}
	}
	c.open, c.openType, c.next = i, bt, i+1
	return nil
}

func (c *anthropic) blockDelta(o object) *Violation {
	const typ = "content_block_delta"
	i, v := c.index(o, typ)
	if v != nil {
		return v
	}
	switch {
	case c.open < 0:
		return violate(RuleBlocks, typ, "delta for block %d, but no block is open", i)
	case i != c.open:
		return violate(RuleBlocks, typ, "delta for block %d while block %d is open", i, c.open)
	}
	d, ok := o.obj("delta")
	if !ok {
		return violate(RuleShape, typ, "delta is %s, want an object", o.describe("delta"))
	}
	dt, _ := d.str("type")
	field, known := anthropicDeltaField[dt]
	if !known {
		return violate(RuleKnownType, typ, "block %d: delta type %s is not one of Anthropic's", i, d.describe("type"))
	}
	fits := false
	for _, t := range anthropicBlocks[c.openType] {
		fits = fits || t == dt
	}
	if !fits {
		return violate(RuleDeltaFits, typ, "block %d is a %s block, which takes no %s", i, c.openType, dt)
	}
	if got := d.describe(field[0]); !d.has(field[0]) || kind(d[field[0]]) != field[1] {
		return violate(RuleShape, typ, "block %d: %s.%s is %s, want a %s", i, dt, field[0], got, field[1])
	}
	return nil
}

func (c *anthropic) end() *Violation {
	if c.stopped || c.failed {
		return nil
	}
	return violate(RuleTerminator, "", "the stream ends without message_stop (or an error event)")
}
