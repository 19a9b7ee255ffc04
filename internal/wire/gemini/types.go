package gemini

import "encoding/json"

// Gemini's request and answer, as this package writes and reads them:
// the fields Sluice carries, each left out when empty.

type gmRequest struct {
	Contents          []gmContent       `json:"contents"`
	SystemInstruction *gmContent        `json:"systemInstruction,omitempty"`
	Tools             []gmTool          `json:"tools,omitempty"`
	ToolConfig        *gmToolConfig     `json:"toolConfig,omitempty"`
	GenerationConfig  *gmGenerationConf `json:"generationConfig,omitempty"`
}

type gmContent struct {
	Role  string  `json:"role,omitempty"`
	Parts gmParts `json:"parts"`
}

type gmPart struct {
	Text             *string             `json:"text,omitempty"`
	Thought          bool                `json:"thought,omitempty"`
	ThoughtSignature string              `json:"thoughtSignature,omitempty"`
	InlineData       *gmBlob             `json:"inlineData,omitempty"`
	FileData         *gmFileData         `json:"fileData,omitempty"`
	FunctionCall     *gmFunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse *gmFunctionResponse `json:"functionResponse,omitempty"`
}

type gmBlob struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

type gmFileData struct {
	MimeType string `json:"mimeType,omitempty"`
	FileURI  string `json:"fileUri"`
}

type gmFunctionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

type gmFunctionResponse struct {
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

type gmTool struct {
	FunctionDeclarations []gmFunctionDecl `json:"functionDeclarations,omitempty"`
}

type gmFunctionDecl struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description,omitempty"`
	Parameters           json.RawMessage `json:"parameters,omitempty"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`
}

type gmToolConfig struct {
	FunctionCallingConfig *gmFunctionCallingConfig `json:"functionCallingConfig,omitempty"`
}

type gmFunctionCallingConfig struct {
	Mode                 string   `json:"mode,omitempty"`
	AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
}

type gmGenerationConf struct {
	MaxOutputTokens    *int64          `json:"maxOutputTokens,omitempty"`
	Temperature        *float64        `json:"temperature,omitempty"`
	TopP               *float64        `json:"topP,omitempty"`
	TopK               *float64        `json:"topK,omitempty"`
	StopSequences      []string        `json:"stopSequences,omitempty"`
	ResponseMimeType   string          `json:"responseMimeType,omitempty"`
	ResponseSchema     json.RawMessage `json:"responseSchema,omitempty"`
	ResponseJSONSchema json.RawMessage `json:"responseJsonSchema,omitempty"`
	ThinkingConfig     *gmThinking     `json:"thinkingConfig,omitempty"`
}

type gmThinking struct {
	ThinkingBudget  *int64 `json:"thinkingBudget,omitempty"`
	IncludeThoughts bool   `json:"includeThoughts,omitempty"`
}

// gmResponse is a GenerateContentResponse: a whole answer, or one chunk
// of a stream. Error is set on a stream's error chunk instead.
type gmResponse struct {
	Candidates     []gmCandidate `json:"candidates,omitempty"`
	PromptFeedback *gmPromptFeed `json:"promptFeedback,omitempty"`
	UsageMetadata  *gmUsage      `json:"usageMetadata,omitempty"`
	ModelVersion   string        `json:"modelVersion,omitempty"`
	ResponseID     string        `json:"responseId,omitempty"`
	Error          *gmErrorInfo  `json:"error,omitempty"`
}

type gmCandidate struct {
	Content      *gmContent `json:"content,omitempty"`
	FinishReason string     `json:"finishReason,omitempty"`
	Index        int        `json:"index"`
}

type gmPromptFeed struct {
	BlockReason        string `json:"blockReason,omitempty"`
	BlockReasonMessage string `json:"blockReasonMessage,omitempty"`
}

type gmUsage struct {
	PromptTokenCount        *int64 `json:"promptTokenCount,omitempty"`
	CandidatesTokenCount    *int64 `json:"candidatesTokenCount,omitempty"`
	CachedContentTokenCount *int64 `json:"cachedContentTokenCount,omitempty"`
	ThoughtsTokenCount      *int64 `json:"thoughtsTokenCount,omitempty"`
	TotalTokenCount         *int64 `json:"totalTokenCount,omitempty"`
}

// gmErrorInfo is the error of Google's APIs: {"error": {...}}.
type gmErrorInfo struct {
	Code    int               `json:"code"`
	Message string            `json:"message"`
	Status  string            `json:"status,omitempty"`
	Details []json.RawMessage `json:"details,omitempty"`
}

func ptr[T any](v T) *T { return &v }
