package translate

import "encoding/json"

// The bodies this package writes. Field order is output order, so output
// is deterministic; values passed through untouched (schemas, tool
// inputs, numbers as written) are json.RawMessage.

// Anthropic Messages request.
type anRequest struct {
	Model         string          `json:"model"`
	System        json.RawMessage `json:"system,omitempty"`
	Messages      []anMessage     `json:"messages"`
	MaxTokens     int64           `json:"max_tokens"`
	StopSequences []string        `json:"stop_sequences,omitempty"`
	Temperature   json.RawMessage `json:"temperature,omitempty"`
	TopP          json.RawMessage `json:"top_p,omitempty"`
	Stream        bool            `json:"stream,omitempty"`
	Tools         []anTool        `json:"tools,omitempty"`
	ToolChoice    *anToolChoice   `json:"tool_choice,omitempty"`
	Metadata      *anMetadata     `json:"metadata,omitempty"`
	Thinking      *anThinking     `json:"thinking,omitempty"`
	OutputConfig  *anOutputConfig `json:"output_config,omitempty"`
}

// anMessage is one turn. A turn that came from a plain string, and is
// still one text block, is written back as a string. One that is only
// that string (most turns) holds it in Text, with IsStr set and no
// block: a block per message cost four times the message's bytes.
type anMessage struct {
	Role    string
	Blocks  []anBlock
	FromStr bool
	IsStr   bool
	Text    string
}

// materialize turns an IsStr turn into its one text block, before
// blocks are added to it.
func (m *anMessage) materialize() {
	if m.IsStr {
		m.Blocks, m.FromStr, m.IsStr, m.Text = []anBlock{textBlock(m.Text)}, true, false, ""
	}
}

func (m anMessage) MarshalJSON() ([]byte, error) {
	type wire struct {
		Role    string `json:"role"`
		Content any    `json:"content"`
	}
	if m.IsStr {
		return marshal(wire{m.Role, m.Text})
	}
	var content any = m.Blocks
	if m.FromStr && len(m.Blocks) == 1 && m.Blocks[0].Type == "text" && m.Blocks[0].Text != nil {
		content = *m.Blocks[0].Text
	}
	if m.Blocks == nil && content != nil {
		content = []anBlock{}
	}
	return marshal(wire{m.Role, content})
}

// anBlock is any content block: text, image, tool_use, tool_result.
type anBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text,omitempty"`
	Source    *anSource       `json:"source,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
}

type anSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

type anTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
	Strict      bool            `json:"strict,omitempty"`
}

type anToolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use,omitempty"`
}

type anMetadata struct {
	UserID string `json:"user_id"`
}

// Anthropic message (a whole answer).
type anResponse struct {
	ID           string    `json:"id"`
	Type         string    `json:"type"`
	Role         string    `json:"role"`
	Model        string    `json:"model"`
	Content      []anBlock `json:"content"`
	StopReason   *string   `json:"stop_reason"`
	StopSequence *string   `json:"stop_sequence"`
	Usage        anUsage   `json:"usage"`
}

type anUsage struct {
	InputTokens              int64  `json:"input_tokens"`
	OutputTokens             int64  `json:"output_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens,omitempty"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens,omitempty"`
}

// OpenAI chat completions request.
type oaRequest struct {
	Model               string            `json:"model"`
	Messages            []oaMessage       `json:"messages"`
	MaxTokens           *int64            `json:"max_tokens,omitempty"`
	MaxCompletionTokens *int64            `json:"max_completion_tokens,omitempty"`
	Stop                []string          `json:"stop,omitempty"`
	Temperature         json.RawMessage   `json:"temperature,omitempty"`
	TopP                json.RawMessage   `json:"top_p,omitempty"`
	Stream              bool              `json:"stream,omitempty"`
	StreamOptions       *oaStreamOptions  `json:"stream_options,omitempty"`
	Tools               []oaTool          `json:"tools,omitempty"`
	ToolChoice          any               `json:"tool_choice,omitempty"`
	ParallelToolCalls   *bool             `json:"parallel_tool_calls,omitempty"`
	User                string            `json:"user,omitempty"`
	ResponseFormat      *oaResponseFormat `json:"response_format,omitempty"`
	ReasoningEffort     string            `json:"reasoning_effort,omitempty"`
}

type oaStreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type oaMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content,omitempty"`
	ToolCalls  []oaToolCall    `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

type oaPart struct {
	Type     string      `json:"type"`
	Text     *string     `json:"text,omitempty"`
	ImageURL *oaImageURL `json:"image_url,omitempty"`
	File     *oaFile     `json:"file,omitempty"`
}

type oaImageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

// oaFile is a chat file part's file: inline data (a data: URL) or an
// uploaded file's id, and its name.
type oaFile struct {
	FileData string `json:"file_data,omitempty"`
	FileID   string `json:"file_id,omitempty"`
	Filename string `json:"filename,omitempty"`
}

type oaToolCall struct {
	ID       string     `json:"id"`
	Type     string     `json:"type"`
	Function oaFunction `json:"function"`
}

type oaFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type oaTool struct {
	Type     string        `json:"type"`
	Function oaFunctionDef `json:"function"`
}

type oaFunctionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      bool            `json:"strict,omitempty"`
}

type oaNamedToolChoice struct {
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

// OpenAI chat.completion (a whole answer).
type oaResponse struct {
	ID      string     `json:"id"`
	Object  string     `json:"object"`
	Created int64      `json:"created"`
	Model   string     `json:"model"`
	Choices []oaChoice `json:"choices"`
	Usage   *oaUsage   `json:"usage,omitempty"`
}

type oaChoice struct {
	Index        int             `json:"index"`
	Message      oaRespMessage   `json:"message"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
}

type oaRespMessage struct {
	Role      string       `json:"role"`
	Content   *string      `json:"content"`
	ToolCalls []oaToolCall `json:"tool_calls,omitempty"`
}

type oaUsage struct {
	PromptTokens        int64            `json:"prompt_tokens"`
	CompletionTokens    int64            `json:"completion_tokens"`
	TotalTokens         int64            `json:"total_tokens"`
	PromptTokensDetails *oaPromptDetails `json:"prompt_tokens_details,omitempty"`
}

type oaPromptDetails struct {
	CachedTokens int64 `json:"cached_tokens"`
}

var jsonNull = json.RawMessage("null")

func ptr[T any](v T) *T { return &v }
