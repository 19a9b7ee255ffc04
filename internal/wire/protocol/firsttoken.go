package protocol

import "bytes"

// A stream's first bytes are not always its first token. OpenAI-style
// servers may send a role-only chunk ({"delta":{"role":"assistant",
// "content":""}}) before generating; Anthropic's Messages API opens with
// message_start, content_block_start and ping events, which a server may
// send as soon as it accepts the request. A gateway that measured time
// to first token, or settled a hedge race, at the first byte would take a
// provider that answers its headers at once and its tokens 30 s later
// for a fast one. StreamHead tells the stream's head from its first token.

// StreamHead scans buf, the start of a stream in dialect d, for its
// first token. It errs towards "head" for what it does not recognise,
// which only delays the commit: the caller takes a head that fills its
// buffer, or a stream that ends, as the answer. head is the length of the complete head events buf opens
// with, so a caller reading more can resume the scan there; token
// reports whether the complete event after them is past the head: a
// token (content, a tool call, reasoning), a finish, an error, [DONE],
// or anything else a client would act on. Head events are OpenAI chunks
// whose choices carry nothing but a role or empty content, Anthropic's
// message_start, content_block_start and ping, and SSE comments. An
// event counts only once complete (ended by a blank line).
func StreamHead(d Dialect, buf []byte) (head int, token bool) {
	for {
		ev, rest, ok := nextEvent(buf[head:])
		if !ok {
			return head, false
		}
		if !headEvent(d, ev) {
			return head, true
		}
		head = len(buf) - len(rest)
	}
}

// nextEvent splits off buf's first complete SSE event (without its
// terminating blank line).
func nextEvent(buf []byte) (ev, rest []byte, ok bool) {
	for i := 0; i < len(buf); i++ {
		if buf[i] != '\n' {
			continue
		}
		// A blank line: "\n\n" or "\n\r\n".
		switch {
		case i+1 < len(buf) && buf[i+1] == '\n':
			return buf[:i], buf[i+2:], true
		case i+2 < len(buf) && buf[i+1] == '\r' && buf[i+2] == '\n':
			return buf[:i], buf[i+3:], true
		}
	}
	return nil, nil, false
}

var (
	sseData  = []byte("data:")
	sseEvent = []byte("event:")
	sseDone  = []byte("[DONE]")
)

// eventFields returns an SSE event's name and data (its last of each),
// without allocating.
func eventFields(ev []byte) (name, data []byte) {
	for line := range bytes.Lines(ev) {
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case bytes.HasPrefix(line, sseData):
			data = bytes.TrimSpace(line[len(sseData):])
		case bytes.HasPrefix(line, sseEvent):
			name = bytes.TrimSpace(line[len(sseEvent):])
		}
	}
	return name, data
}

// headEvent reports whether one SSE event belongs to the stream's head.
// It reads bytes, not JSON, so that the start of every stream costs no
// allocation: a key's quotes cannot appear unescaped inside a JSON
// string, so a match is a real key.
func headEvent(d Dialect, ev []byte) bool {
	name, data := eventFields(ev)
	if len(data) == 0 && len(name) == 0 {
		return true // a comment (": keep-alive") or an empty event
	}
	if d == Anthropic {
		if len(name) == 0 { // no event: line; the type is in the data
			for _, h := range anthropicHeadTypes {
				if bytes.Contains(data, h) {
					return true
				}
			}
			return false
		}
		switch string(name) {
		case "message_start", "content_block_start", "ping":
			return true
		}
		return false
	}
	if bytes.Equal(data, sseDone) || len(data) == 0 || data[0] != '{' {
		return false // the end, or not a chunk at all: the client should see it
	}
	for _, k := range openAIActs {
		if bytes.Contains(data, k) {
			return false
		}
	}
	for _, k := range openAIText {
		for rest := data; ; {
			i := bytes.Index(rest, k)
			if i < 0 {
				break
			}
			rest = rest[i+len(k):]
			if len(rest) > 0 && rest[0] != '"' {
				return false // a non-empty string (in any choice)
			}
		}
	}
	return true
}

var (
	anthropicHeadTypes = [][]byte{[]byte(`"type":"message_start"`), []byte(`"type":"content_block_start"`), []byte(`"type":"ping"`),
		[]byte(`"type": "message_start"`), []byte(`"type": "content_block_start"`), []byte(`"type": "ping"`)}
	// openAIActs: keys whose value, when not null, is past the head: a
	// finish reason, a tool call, an error. (Usage is not among them:
	// vLLM's continuous_usage_stats puts it on every chunk, the head's
	// too; a final usage-only chunk follows a finish anyway.)
	openAIActs = [][]byte{[]byte(`"finish_reason":"`), []byte(`"finish_reason": "`),
		[]byte(`"tool_calls":[`), []byte(`"tool_calls": [`), []byte(`"function_call":{`), []byte(`"function_call": {`),
		[]byte(`"error":{`), []byte(`"error": {`)}
	// openAIText: keys that carry a token when their string is not empty.
	openAIText = [][]byte{[]byte(`"content":"`), []byte(`"content": "`), []byte(`"text":"`), []byte(`"text": "`),
		[]byte(`"reasoning_content":"`), []byte(`"reasoning_content": "`), []byte(`"reasoning":"`), []byte(`"reasoning": "`),
		[]byte(`"refusal":"`), []byte(`"refusal": "`)}
)
