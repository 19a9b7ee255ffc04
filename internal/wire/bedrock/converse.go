package bedrock

import "encoding/json"

// Converse's JSON shapes, as much of them as Sluice reads and writes.

type cvRequest struct {
	Messages                     []cvMessage    `json:"messages"`
	System                       []cvSystem     `json:"system,omitempty"`
	InferenceConfig              *cvInference   `json:"inferenceConfig,omitempty"`
	ToolConfig                   *cvToolConfig  `json:"toolConfig,omitempty"`
	AdditionalModelRequestFields map[string]any `json:"additionalModelRequestFields,omitempty"`
}

type cvSystem struct {
	Text string `json:"text"`
}

type cvInference struct {
	MaxTokens     *int64   `json:"maxTokens,omitempty"`
	Temperature   *float64 `json:"temperature,omitempty"`
	TopP          *float64 `json:"topP,omitempty"`
	StopSequences []string `json:"stopSequences,omitempty"`
}

type cvMessage struct {
	Role    string    `json:"role"`
	Content []cvBlock `json:"content"`
}

// cvBlock is a Converse content block: exactly one member is set.
type cvBlock struct {
	Text             *string             `json:"text,omitempty"`
	Image            *cvImage            `json:"image,omitempty"`
	ToolUse          *cvToolUse          `json:"toolUse,omitempty"`
	ToolResult       *cvToolResult       `json:"toolResult,omitempty"`
	ReasoningContent *cvReasoningContent `json:"reasoningContent,omitempty"`
	JSON             json.RawMessage     `json:"json,omitempty"`
}

type cvImage struct {
	Format string `json:"format"`
	Source struct {
		Bytes string `json:"bytes"` // base64
	} `json:"source"`
}

type cvToolUse struct {
	ToolUseID string          `json:"toolUseId"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
}

type cvToolResult struct {
	ToolUseID string    `json:"toolUseId"`
	Content   []cvBlock `json:"content"`
	Status    string    `json:"status,omitempty"`
}

type cvReasoningContent struct {
	ReasoningText *struct {
		Text      string `json:"text"`
		Signature string `json:"signature,omitempty"`
	} `json:"reasoningText,omitempty"`
	RedactedContent string `json:"redactedContent,omitempty"` // base64
}

type cvToolConfig struct {
	Tools      []cvTool      `json:"tools"`
	ToolChoice *cvToolChoice `json:"toolChoice,omitempty"`
}

type cvTool struct {
	ToolSpec *cvToolSpec `json:"toolSpec,omitempty"`
}

type cvToolSpec struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	InputSchema struct {
		JSON json.RawMessage `json:"json"`
	} `json:"inputSchema"`
}

type cvToolChoice struct {
	Auto *struct{} `json:"auto,omitempty"`
	Any  *struct{} `json:"any,omitempty"`
	Tool *struct {
		Name string `json:"name"`
	} `json:"tool,omitempty"`
}

// cvResponse is Converse's whole answer.
type cvResponse struct {
	Output *struct {
		Message *cvMessage `json:"message"`
	} `json:"output"`
	StopReason string   `json:"stopReason"`
	Usage      *cvUsage `json:"usage,omitempty"`
	Metrics    *struct {
		LatencyMs int64 `json:"latencyMs"`
	} `json:"metrics,omitempty"`
}

type cvUsage struct {
	InputTokens           int64  `json:"inputTokens"`
	OutputTokens          int64  `json:"outputTokens"`
	TotalTokens           int64  `json:"totalTokens"`
	CacheReadInputTokens  *int64 `json:"cacheReadInputTokens,omitempty"`
	CacheWriteInputTokens *int64 `json:"cacheWriteInputTokens,omitempty"`
}

// Stream events' payloads.

type cvMessageStart struct {
	Role string `json:"role"`
}

type cvBlockStart struct {
	Start *struct {
		ToolUse *struct {
			ToolUseID string `json:"toolUseId"`
			Name      string `json:"name"`
		} `json:"toolUse,omitempty"`
	} `json:"start"`
	ContentBlockIndex *int `json:"contentBlockIndex"`
}

type cvBlockDelta struct {
	Delta *struct {
		Text    *string `json:"text,omitempty"`
		ToolUse *struct {
			Input string `json:"input"`
		} `json:"toolUse,omitempty"`
		ReasoningContent *struct {
			Text            *string `json:"text,omitempty"`
			Signature       *string `json:"signature,omitempty"`
			RedactedContent *string `json:"redactedContent,omitempty"`
		} `json:"reasoningContent,omitempty"`
	} `json:"delta"`
	ContentBlockIndex *int `json:"contentBlockIndex"`
}

type cvBlockStop struct {
	ContentBlockIndex *int `json:"contentBlockIndex"`
}

type cvMessageStop struct {
	StopReason string `json:"stopReason"`
}

type cvMetadata struct {
	Usage   *cvUsage `json:"usage"`
	Metrics struct {
		LatencyMs int64 `json:"latencyMs"`
	} `json:"metrics"`
}
