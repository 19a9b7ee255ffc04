package native

import "encoding/json"

// The hub's (Anthropic Messages) answer as a codec writes it: a whole
// answer, or the message of a stream's message_start. One set of shapes
// for every codec, so each writes the hub alike.

// Answer is a hub answer (a Messages response).
type Answer struct {
	ID           string  `json:"id"`
	Type         string  `json:"type"` // "message"
	Role         string  `json:"role"` // "assistant"
	Model        string  `json:"model"`
	Content      []Block `json:"content"`
	StopReason   *string `json:"stop_reason"` // null in a message_start
	StopSequence *string `json:"stop_sequence"`
	Usage        Usage   `json:"usage"`
}

// Block is one content block of a hub answer: text, tool_use, thinking
// or redacted_thinking.
type Block struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	Thinking  *string         `json:"thinking,omitempty"`
	Signature *string         `json:"signature,omitempty"`
	Data      *string         `json:"data,omitempty"`
}

// Usage is a hub answer's usage; the cache counts are left out when the
// vendor gave none.
type Usage struct {
	InputTokens              int64  `json:"input_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens,omitempty"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens,omitempty"`
	OutputTokens             int64  `json:"output_tokens"`
}
