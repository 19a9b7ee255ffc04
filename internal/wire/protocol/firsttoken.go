package protocol

import "sync"

// A stream's first bytes are not always its first token. OpenAI-style
// servers may send a role-only chunk ({"delta":{"role":"assistant",
// "content":""}}) before generating; Anthropic's Messages API opens with
// message_start, content_block_start and ping events, which a server may
// send as soon as it accepts the request. A gateway that measured time
// to first token, or settled a hedge race, at the first byte would take a
// provider that answers its headers at once and its tokens 30 s later
// for a fast one. StreamHead tells the stream's head from its first
// token, by the events' records (Event.Head).

// StreamHead scans buf, the start of a stream in dialect d, for its
// first token. head is the length of the complete head events buf opens
// with, so a caller reading more can resume the scan there; token
// reports whether the complete event after them is past the head
// (Event.Token): content, a tool call, reasoning, a finish, an error,
// the terminator, or data that is not JSON, which the client should
// see. An event counts only once complete (ended by a blank line; one
// ended by a CR that ends buf waits for the next byte, which may make
// it a CRLF).
func StreamHead(d Dialect, buf []byte) (head int, token bool) {
	return streamHead(d, false, buf)
}

// StreamHeadFor is StreamHead for a stream of endpoint e from a provider
// of dialect d.
func StreamHeadFor(e Endpoint, d Dialect, buf []byte) (head int, token bool) {
	return streamHead(d, e.IsResponses(), buf)
}

// headChecks keep StreamHead's checks, with their parsers, between
// scans: every stream's start is scanned, and costs no allocation.
var headChecks = sync.Pool{New: func() any { return new(StreamCheck) }}

func streamHead(d Dialect, responses bool, buf []byte) (head int, token bool) {
	c := headChecks.Get().(*StreamCheck)
	*c = StreamCheck{dialect: d, responses: responses, head: true, r: c.r}
	if c.r != nil {
		c.r.data = c.r.data[:0]
	}
	b, _, _ := c.Feed(buf)
	head, token = max(b, 0), c.headToken
	c.ev = Event{}
	headChecks.Put(c)
	return head, token
}
