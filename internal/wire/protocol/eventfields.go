package protocol

// The paths an event's data is read by, for every dialect at once: an
// event's type may come after the fields it gives meaning to, so the
// fields are gathered first and judged by the type at the end
// (eventmeaning.go). Whatever is not on a path is skipped unread.

// key is an object name the reader knows.
type key uint8

const (
	kOther key = iota
	kType
	kID
	kModel
	kCreated
	kError
	kIndex
	kUsage
	kMessage
	kResponse
	kDelta
	kContentBlock
	kItem
	kChoices
	kText
	kThinking
	kPartialJSON
	kStopReason
	kContent
	kReasoningContent
	kReasoning
	kRefusal
	kToolCalls
	kFunctionCall
	kFunction
	kArguments
	kFinishReason
	kCompletionTokens
	kOutputTokens
	kPromptTokens
	kInputTokens
	kCacheCreation
	kCacheRead
	kPromptDetails
	kInputDetails
	kCachedTokens
	kIncompleteDetails
	kReason
	kSequenceNumber
	kCreatedAt
)

// keyOf is a name's key; a switch on string(b) does not allocate.
func keyOf(b []byte) key {
	switch string(b) {
	case "type":
		return kType
	case "sequence_number":
		return kSequenceNumber
	case "id":
		return kID
	case "model":
		return kModel
	case "created":
		return kCreated
	case "error":
		return kError
	case "index":
		return kIndex
	case "usage":
		return kUsage
	case "message":
		return kMessage
	case "response":
		return kResponse
	case "delta":
		return kDelta
	case "content_block":
		return kContentBlock
	case "item":
		return kItem
	case "choices":
		return kChoices
	case "text":
		return kText
	case "thinking":
		return kThinking
	case "partial_json":
		return kPartialJSON
	case "stop_reason":
		return kStopReason
	case "content":
		return kContent
	case "reasoning_content":
		return kReasoningContent
	case "reasoning":
		return kReasoning
	case "refusal":
		return kRefusal
	case "tool_calls":
		return kToolCalls
	case "function_call":
		return kFunctionCall
	case "function":
		return kFunction
	case "arguments":
		return kArguments
	case "finish_reason":
		return kFinishReason
	case "completion_tokens":
		return kCompletionTokens
	case "output_tokens":
		return kOutputTokens
	case "prompt_tokens":
		return kPromptTokens
	case "input_tokens":
		return kInputTokens
	case "cache_creation_input_tokens":
		return kCacheCreation
	case "cache_read_input_tokens":
		return kCacheRead
	case "prompt_tokens_details":
		return kPromptDetails
	case "input_tokens_details":
		return kInputDetails
	case "cached_tokens":
		return kCachedTokens
	case "incomplete_details":
		return kIncompleteDetails
	case "reason":
		return kReason
	case "created_at":
		return kCreatedAt
	}
	return kOther
}

// top reads the event's data: one JSON value, an object for any event
// that means something.
func (p *EventParser) top() error {
	k, err := p.peek()
	if err != nil {
		return err
	}
	if k != '{' {
		return p.dec.SkipValue()
	}
	p.f.object = true
	f := &p.f
	return p.object(func(k key) error {
		var err error
		switch k {
		case kType:
			f.typ, err = p.string()
		case kID:
			f.id, err = p.string()
		case kModel:
			f.model, err = p.string()
		case kCreated:
			var n int64
			var ok bool
			if n, ok, err = p.number(1 << 62); ok {
				f.created = n
			}
		case kSequenceNumber:
			var n int64
			var ok bool
			if n, ok, err = p.number(1 << 62); ok {
				f.seq, f.haveSeq = n, true
			}
		case kError:
			var null bool
			null, err = p.null()
			f.err = !null
		case kIndex:
			var n int64
			var ok bool
			if n, ok, err = p.number(1 << 30); ok {
				f.index, f.haveIndex = int(n), true
			}
		case kUsage:
			f.usage = EventUsage{}
			err = p.usage(&f.usage)
		case kMessage:
			err = p.object(func(k key) error {
				switch k {
				case kID:
					f.msgID, err = p.string()
				case kModel:
					f.msgModel, err = p.string()
				case kUsage:
					f.msgUsage = EventUsage{}
					err = p.usage(&f.msgUsage)
				default:
					err = p.dec.SkipValue()
				}
				return err
			})
		case kResponse:
			err = p.response()
		case kDelta:
			err = p.delta()
		case kContentBlock:
			err = p.object(func(k key) error {
				switch k {
				case kType:
					f.blockType, err = p.string()
				case kText:
					f.blockText, err = p.string()
				default:
					err = p.dec.SkipValue()
				}
				return err
			})
		case kItem:
			err = p.object(func(k key) error {
				if k == kType {
					f.itemType, err = p.string()
					return err
				}
				return p.dec.SkipValue()
			})
		case kChoices:
			err = p.choices()
		default:
			err = p.dec.SkipValue()
		}
		return err
	})
}

// response reads a Responses API event's response object.
func (p *EventParser) response() error {
	f := &p.f
	return p.object(func(k key) error {
		var err error
		switch k {
		case kID:
			f.respID, err = p.string()
		case kModel:
			f.respModel, err = p.string()
		case kCreatedAt:
			var n int64
			var ok bool
			if n, ok, err = p.number(1 << 62); ok {
				f.created = n
			}
		case kUsage:
			f.respUsage = EventUsage{}
			err = p.usage(&f.respUsage)
		case kIncompleteDetails:
			err = p.object(func(k key) error {
				if k == kReason {
					f.incomplete, err = p.string()
					return err
				}
				return p.dec.SkipValue()
			})
		default:
			err = p.dec.SkipValue()
		}
		return err
	})
}

// delta reads a top-level delta: the Responses API's string, or
// Anthropic's object.
func (p *EventParser) delta() error {
	f := &p.f
	k, err := p.peek()
	if err != nil {
		return err
	}
	if k == '"' {
		f.deltaStr, err = p.string()
		return err
	}
	return p.object(func(k key) error {
		var err error
		switch k {
		case kType:
			f.deltaType, err = p.string()
		case kText:
			f.deltaText, err = p.string()
		case kThinking:
			f.deltaThinking, err = p.string()
		case kPartialJSON:
			f.deltaPartial, err = p.string()
		case kStopReason:
			f.deltaStop, err = p.string()
		default:
			err = p.dec.SkipValue()
		}
		return err
	})
}

// choices reads OpenAI's choices, folding them into the fields: choice
// 0's text and finish, the others' text only counted. A choice's index
// may come after its delta, so each is judged at its end.
func (p *EventParser) choices() error {
	f := &p.f
	ok, err := p.open('[')
	if !ok {
		return err
	}
	f.choices = true
	for pos := 0; ; pos++ {
		more, err := p.more()
		if !more || err != nil {
			return err
		}
		f.nChoices++
		var c choice
		c.index = pos
		if err := p.choice(&c); err != nil {
			return err
		}
		text := c.content
		if !text.set || text.at == text.end {
			text = c.text
		}
		n := int(text.end - text.at)
		if n > 0 {
			f.anyText = true
		}
		f.reasoning += c.reasoning
		f.refusal += c.refusal
		f.toolArgs += c.toolArgs
		f.tool = f.tool || c.tool
		if c.finish.set && c.finish.at < c.finish.end && (c.index == 0 || !f.finishIdx0) {
			f.finish, f.finishIdx0 = c.finish, c.index == 0
		}
		switch {
		case c.index != 0:
			f.otherText += n
			f.other = f.other || n > 0 || c.reasoning > 0 || c.tool
		case n > 0 && !f.text.set:
			f.text = text
		}
	}
}

// choice is one OpenAI choice, as read.
type choice struct {
	index                        int
	content, text, finish        strSpan
	reasoning, refusal, toolArgs int
	tool                         bool
}

func (p *EventParser) choice(c *choice) error {
	return p.object(func(k key) error {
		var err error
		switch k {
		case kIndex:
			var n int64
			var ok bool
			if n, ok, err = p.number(1 << 30); ok {
				c.index = int(n)
			}
		case kText:
			c.text, err = p.string()
		case kFinishReason:
			c.finish, err = p.string()
		case kDelta:
			err = p.object(func(k key) error {
				var err error
				var n int
				switch k {
				case kContent:
					c.content, err = p.string()
				case kReasoningContent, kReasoning:
					n, err = p.length()
					c.reasoning += n
				case kRefusal:
					n, err = p.length()
					c.refusal += n
				case kToolCalls:
					err = p.toolCalls(c)
				case kFunctionCall:
					var null bool
					if null, err = p.peekNull(); err == nil && !null {
						c.tool = true
						err = p.object(func(k key) error {
							if k != kArguments {
								return p.dec.SkipValue()
							}
							n, err := p.length()
							c.toolArgs += n
							return err
						})
					}
				default:
					err = p.dec.SkipValue()
				}
				return err
			})
		default:
			err = p.dec.SkipValue()
		}
		return err
	})
}

// peekNull reports whether the next value is null, reading it if so.
func (p *EventParser) peekNull() (bool, error) {
	k, err := p.peek()
	if err != nil || k != 'n' {
		return false, err
	}
	return true, p.dec.SkipValue()
}

// toolCalls reads a delta's tool_calls: any entry is tool activity, and
// each function's arguments are counted.
func (p *EventParser) toolCalls(c *choice) error {
	ok, err := p.open('[')
	if !ok {
		return err
	}
	for {
		more, err := p.more()
		if !more || err != nil {
			return err
		}
		c.tool = true
		err = p.object(func(k key) error {
			if k != kFunction {
				return p.dec.SkipValue()
			}
			return p.object(func(k key) error {
				if k != kArguments {
					return p.dec.SkipValue()
				}
				n, err := p.length()
				c.toolArgs += n
				return err
			})
		})
		if err != nil {
			return err
		}
	}
}
