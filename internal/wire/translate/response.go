package translate

import (
	"encoding/json"
	"strings"
)

// Upstream answers, read leniently: fields this package does not use are
// ignored, since an answer's extra metadata asks nothing of the client.

type anResponseIn struct {
	ID         string       `json:"id"`
	Type       string       `json:"type"`
	Model      string       `json:"model"`
	Content    []anBlockIn  `json:"content"`
	StopReason *string      `json:"stop_reason"`
	Usage      *anUsageIn   `json:"usage"`
	Error      *anErrorInfo `json:"error"`
}

type anBlockIn struct {
	Type  string          `json:"type"`
	Text  string          `json:"text"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

type anUsageIn struct {
	InputTokens              int64  `json:"input_tokens"`
	OutputTokens             int64  `json:"output_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
}

type oaResponseIn struct {
	ID      string `json:"id"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Content   *string        `json:"content"`
			Refusal   *string        `json:"refusal"`
			ToolCalls []oaToolCallIn `json:"tool_calls"`
		} `json:"message"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *oaUsageIn   `json:"usage"`
	Error *oaErrorInfo `json:"error"`
}

type oaToolCallIn struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      *string `json:"name"`
		Arguments string  `json:"arguments"`
	} `json:"function"`
}

type oaUsageIn struct {
	PromptTokens        int64  `json:"prompt_tokens"`
	CompletionTokens    int64  `json:"completion_tokens"`
	TotalTokens         *int64 `json:"total_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// ResponseToOpenAI translates an Anthropic message (a 2xx answer; send
// error bodies to ErrorToOpenAI) into an OpenAI chat.completion. created
// is the Unix time to stamp it with, which Anthropic's answer lacks.
func ResponseToOpenAI(body []byte, created int64) ([]byte, error) {
	var in anResponseIn
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, badResponse("not an Anthropic message: %v", err)
	}
	if in.Type == "error" && in.Error != nil {
		return nil, badResponse("an error body under a 2xx: %s", in.Error.Message)
	}
	if in.Type != "message" {
		return nil, badResponse("type is %q, not message", in.Type)
	}
	msg := oaRespMessage{Role: "assistant"}
	var text strings.Builder
	hasText := false
	for i, b := range in.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
			hasText = true
		case "tool_use":
			args, err := inputToArguments(b.Input)
			if err != nil {
				return nil, badResponse("content[%d].input: %v", i, err)
			}
			msg.ToolCalls = append(msg.ToolCalls, oaToolCall{ID: b.ID, Type: "function", Function: oaFunction{Name: b.Name, Arguments: args}})
		case "thinking", "redacted_thinking":
			// The model's reasoning, which OpenAI's chat completions do
			// not show either; its tokens stay counted in output_tokens.
		default:
			return nil, badResponse("content[%d] is a %q block, which OpenAI's chat completions cannot carry", i, b.Type)
		}
	}
	if hasText || msg.ToolCalls == nil {
		msg.Content = ptr(text.String())
	}
	out := oaResponse{
		ID: in.ID, Object: "chat.completion", Created: created, Model: in.Model,
		Choices: []oaChoice{{Message: msg, Logprobs: jsonNull}},
		Usage:   usageToOpenAI(in.Usage),
	}
	if in.StopReason != nil {
		out.Choices[0].FinishReason = ptr(FinishReason(*in.StopReason))
	}
	return marshal(out)
}

// inputToArguments writes a tool_use input as OpenAI's arguments string.
func inputToArguments(input json.RawMessage) (string, error) {
	if isNull(input) {
		return "{}", nil
	}
	b, err := marshal(input) // compacts, and checks it is JSON
	return string(b), err
}

// FinishReason is stop or finish reason r as OpenAI's finish_reason: an
// Anthropic stop_reason is mapped, an OpenAI finish_reason kept.
// pause_turn (a server tool's long turn, which a translated request
// cannot start) and reasons newer than this package read as stop: the
// content is whole as far as it goes.
func FinishReason(r string) string {
	switch r {
	case "stop", "length", "tool_calls", "content_filter", "function_call":
		return r
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "tool_use":
		return "tool_calls"
	case "refusal":
		return "content_filter"
	}
	return "stop"
}

// StopReason is finish or stop reason r as Anthropic's stop_reason: an
// OpenAI finish_reason is mapped, an Anthropic stop_reason kept. OpenAI
// does not say which stop sequence matched, so "stop" is end_turn,
// never stop_sequence (whose stop_sequence field would have to be made
// up).
func StopReason(r string) string {
	switch r {
	case "end_turn", "max_tokens", "stop_sequence", "tool_use", "refusal", "pause_turn":
		return r
	case "length":
		return "max_tokens"
	case "tool_calls", "function_call":
		return "tool_use"
	case "content_filter":
		return "refusal"
	}
	return "end_turn"
}

// usageToOpenAI: OpenAI's prompt_tokens count every prompt token, cached
// or not; Anthropic's input_tokens leave out cache reads and cache writes.
func usageToOpenAI(u *anUsageIn) *oaUsage {
	if u == nil {
		return nil
	}
	read, wrote := deref(u.CacheReadInputTokens), deref(u.CacheCreationInputTokens)
	out := &oaUsage{
		PromptTokens:     u.InputTokens + read + wrote,
		CompletionTokens: u.OutputTokens,
	}
	out.TotalTokens = out.PromptTokens + out.CompletionTokens
	if u.CacheReadInputTokens != nil || u.CacheCreationInputTokens != nil {
		out.PromptTokensDetails = &oaPromptDetails{CachedTokens: read}
	}
	return out
}

func usageToAnthropic(u *oaUsageIn) anUsage {
	if u == nil {
		return anUsage{}
	}
	out := anUsage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
	if d := u.PromptTokensDetails; d != nil {
		cached := min(max(d.CachedTokens, 0), u.PromptTokens)
		out.InputTokens -= cached
		out.CacheReadInputTokens = &cached
	}
	return out
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// ResponseToAnthropic translates an OpenAI chat.completion (a 2xx answer;
// send error bodies to ErrorToAnthropic) into an Anthropic message. It
// must have exactly one choice: a translated request never asks for more.
func ResponseToAnthropic(body []byte) ([]byte, error) {
	var in oaResponseIn
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, badResponse("not an OpenAI chat.completion: %v", err)
	}
	if len(in.Choices) != 1 {
		return nil, badResponse("%d choices; an Anthropic message holds one", len(in.Choices))
	}
	ch := in.Choices[0]
	out := anResponse{
		ID: in.ID, Type: "message", Role: "assistant", Model: in.Model,
		Content: []anBlock{},
		Usage:   usageToAnthropic(in.Usage),
	}
	if c := ch.Message.Content; c != nil && *c != "" {
		out.Content = append(out.Content, textBlock(*c))
	}
	if r := ch.Message.Refusal; r != nil && *r != "" {
		out.Content = append(out.Content, textBlock(*r))
		out.StopReason = ptr("refusal")
	}
	for i, tc := range ch.Message.ToolCalls {
		input, err := argumentsToInput(tc.Function.Arguments, "")
		if err != nil {
			return nil, badResponse("tool_calls[%d].function.arguments is not a JSON object", i)
		}
		name := ""
		if tc.Function.Name != nil {
			name = *tc.Function.Name
		}
		out.Content = append(out.Content, anBlock{Type: "tool_use", ID: tc.ID, Name: name, Input: input})
	}
	if ch.FinishReason != nil && out.StopReason == nil {
		out.StopReason = ptr(StopReason(*ch.FinishReason))
	}
	return marshal(out)
}
