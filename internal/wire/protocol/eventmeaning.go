package protocol

import "bytes"

// What the gathered fields mean, by dialect and type (eventfields.go
// gathers them).

// empty marks an event that says nothing: a comment, an empty event.
func empty(ev *Event) { ev.Head, ev.Keepalive = true, true }

// eventType is an object's type, or else the event's name.
func (p *EventParser) eventType(ev *Event) []byte {
	if p.f.typ.set {
		return p.str(p.f.typ)
	}
	return ev.Name
}

func (p *EventParser) openAI(ev *Event, noData bool) {
	f := &p.f
	if f.err || string(ev.Name) == "error" {
		ev.Error = true
	}
	if noData {
		if !ev.Error {
			empty(ev)
		}
		return
	}
	ev.other = !f.object
	ev.Text = p.str(f.text)
	ev.OtherText, ev.OtherChoice = f.otherText, f.other
	ev.Reasoning, ev.Refusal, ev.ToolArgs, ev.Tool = f.reasoning, f.refusal, f.toolArgs, f.tool
	ev.Finish = p.str(f.finish)
	ev.ID, ev.Model, ev.Created = p.str(f.id), p.str(f.model), f.created
	ev.Usage = f.usage
	ev.UsageOnly = f.choices && f.nChoices == 0 && ev.Usage.any() && !ev.Error
	// Usage alone is not a token: some servers send it on every chunk,
	// the head's too; an output count past zero is.
	ev.Head = !(f.anyText || f.reasoning > 0 || f.refusal > 0 || f.tool || ev.Finish != nil ||
		ev.Error || ev.other || ev.Usage.HaveOutput && ev.Usage.Output > 0)
}

func (p *EventParser) anthropic(ev *Event, noData bool) {
	f := &p.f
	if noData && len(ev.Name) == 0 {
		empty(ev)
		return
	}
	typ := p.eventType(ev)
	if f.haveIndex {
		ev.Block = f.index
	}
	switch string(typ) {
	case "message_start":
		ev.Head = true
		ev.ID, ev.Model = p.str(f.msgID), p.str(f.msgModel)
		ev.Usage = f.msgUsage
		ev.Usage.Provisional = ev.Usage.HaveOutput
	case "ping":
		empty(ev)
	case "content_block_start":
		ev.BlockStart = true
		switch bt := p.str(f.blockType); {
		case f.blockType.set && string(bt) != "text":
			ev.Tool = true
		case f.blockText.end > f.blockText.at:
			ev.Text = p.str(f.blockText)
		default:
			ev.Head = true
		}
	case "content_block_delta":
		switch string(p.str(f.deltaType)) {
		case "text_delta":
			ev.Text = p.str(f.deltaText)
		case "thinking_delta":
			ev.Reasoning = int(f.deltaThinking.end - f.deltaThinking.at)
		case "input_json_delta":
			ev.Tool, ev.ToolArgs = true, int(f.deltaPartial.end-f.deltaPartial.at)
		default:
			ev.other = true
		}
	case "content_block_stop":
		ev.BlockStop, ev.other = true, true
	case "message_delta":
		if f.deltaStop.end > f.deltaStop.at {
			ev.Finish = p.str(f.deltaStop)
		}
		ev.Usage = f.usage
		ev.other = true
	case "message_stop":
		ev.Done = true
	case "error":
		ev.Error = true
	default:
		ev.other = true
	}
	switch string(ev.Name) {
	case "message_stop":
		ev.Done = true
	case "error":
		ev.Error, ev.Head, ev.Keepalive = true, false, false
	}
}

var (
	finishStop   = []byte("stop")
	finishLength = []byte("length")
	finishFilter = []byte("content_filter")
)

// Responses API events before anything is generated.
var responsesHead = [...]string{"response.created", "response.in_progress", "response.queued", "response.content_part.added"}

func (p *EventParser) responses(ev *Event, noData bool) {
	f := &p.f
	if noData && len(ev.Name) == 0 {
		empty(ev)
		return
	}
	typ := p.eventType(ev)
	ev.ID, ev.Model, ev.Created = p.str(f.respID), p.str(f.respModel), f.created
	ev.Usage = f.respUsage
	t := string(typ)
	for _, h := range responsesHead {
		if t == h {
			ev.Head = true
			return
		}
	}
	switch t {
	case "response.output_item.added":
		// An output item's announcement is head, unless it is a call:
		// a tool call is the answer.
		if bytes.HasSuffix(p.str(f.itemType), []byte("_call")) {
			ev.Tool = true
		} else {
			ev.Head = true
		}
	case "response.output_text.delta":
		ev.Text = p.str(f.deltaStr)
	case "response.reasoning_text.delta", "response.reasoning_summary_text.delta":
		ev.Reasoning = int(f.deltaStr.end - f.deltaStr.at)
	case "response.refusal.delta":
		ev.Refusal = int(f.deltaStr.end - f.deltaStr.at)
	case "response.function_call_arguments.delta", "response.custom_tool_call_input.delta", "response.mcp_call_arguments.delta":
		ev.Tool, ev.ToolArgs = true, int(f.deltaStr.end-f.deltaStr.at)
	case "response.completed":
		ev.Done, ev.Finish = true, finishStop
	case "response.incomplete":
		ev.Done, ev.Finish = true, finishLength
		if string(p.str(f.incomplete)) == "content_filter" {
			ev.Finish = finishFilter
		}
	case "response.failed":
		ev.Done, ev.Error = true, true
	case "error":
		ev.Error = true
	default:
		ev.other = true
	}
}
