package protocol

import (
	"bytes"
	"encoding/json"
)

// A stream's first bytes are not always its first token. OpenAI-style
// servers may send a role-only chunk ({"delta":{"role":"assistant",
// "content":""}}) before generating; Anthropic's Messages API opens with
// message_start, content_block_start and ping events, which a server may
// send as soon as it accepts the request. A gateway that measured time
// to first token, or settled a hedge race, at the first byte would take a
// provider that answers its headers at once and its tokens 30 s later
// for a fast one. StreamHead tells the stream's head from its first token.

// StreamHead scans buf, the start of a stream in dialect d, for its
// first token. head is the length of the complete head events buf opens
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

// headEvent reports whether one SSE event belongs to the stream's head.
func headEvent(d Dialect, ev []byte) bool {
	var name, data []byte
	for line := range bytes.Lines(ev) {
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case bytes.HasPrefix(line, sseData):
			data = bytes.TrimSpace(line[len(sseData):])
		case bytes.HasPrefix(line, sseEvent):
			name = bytes.TrimSpace(line[len(sseEvent):])
		}
	}
	if len(data) == 0 && len(name) == 0 {
		return true // a comment (": keep-alive") or an empty event
	}
	if d == Anthropic {
		if len(name) == 0 {
			var v struct {
				Type string `json:"type"`
			}
			if json.Unmarshal(data, &v) != nil {
				return false // not understood: let the client see it
			}
			name = []byte(v.Type)
		}
		switch string(name) {
		case "message_start", "content_block_start", "ping":
			return true
		}
		return false
	}
	if bytes.Equal(data, sseDone) {
		return false
	}
	var chunk struct {
		Choices []struct {
			Delta        map[string]json.RawMessage `json:"delta"`
			Text         string                     `json:"text"`
			FinishReason *string                    `json:"finish_reason"`
		} `json:"choices"`
		Usage json.RawMessage `json:"usage"`
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &chunk) != nil || len(chunk.Error) > 0 || (len(chunk.Usage) > 0 && string(chunk.Usage) != "null") {
		return false
	}
	for _, c := range chunk.Choices {
		if c.FinishReason != nil || c.Text != "" {
			return false
		}
		for k, v := range c.Delta {
			switch s := string(v); {
			case k == "role", s == "null", s == `""`:
			default:
				return false
			}
		}
	}
	return true
}
