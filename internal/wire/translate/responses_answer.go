package translate

import (
	"encoding/json"
	"strconv"
)

// A chat answer as the Responses API's response object: shared by
// ChatToResponse and StreamToResponses, so that a streamed answer's
// final response and a whole answer's are alike, down to the ids.

// rsResponse is the Responses API's response object as written. The
// fields that echo the request (instructions, temperature, tools, ...)
// are required by the API's schema; a translated answer does not know
// the request, so they say nothing: null where the schema allows it,
// else the API's defaults.
type rsResponse struct {
	ID                 string            `json:"id"`
	Object             string            `json:"object"`
	CreatedAt          int64             `json:"created_at"`
	Status             string            `json:"status"`
	Background         bool              `json:"background"`
	Error              json.RawMessage   `json:"error"`
	IncompleteDetails  *rsIncomplete     `json:"incomplete_details"`
	Instructions       json.RawMessage   `json:"instructions"`
	MaxOutputTokens    json.RawMessage   `json:"max_output_tokens"`
	Metadata           json.RawMessage   `json:"metadata"`
	Model              string            `json:"model"`
	Output             []rsItem          `json:"output"`
	ParallelToolCalls  bool              `json:"parallel_tool_calls"`
	PreviousResponseID json.RawMessage   `json:"previous_response_id"`
	Temperature        json.RawMessage   `json:"temperature"`
	ToolChoice         string            `json:"tool_choice"`
	Tools              []json.RawMessage `json:"tools"`
	TopP               json.RawMessage   `json:"top_p"`
	Usage              *rsUsage          `json:"usage"`
}

type rsIncomplete struct {
	Reason string `json:"reason"`
}

type rsUsage struct {
	InputTokens        int64 `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int64 `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int64 `json:"total_tokens"`
}

// rsItem is one output item: a message, or a function call.
type rsItem struct {
	Function bool
	ID       string
	Status   string
	Parts    []rsPart // a message's
	CallID   string   // a function call's
	Name     string
	Args     string
}

// rsPart is a message's content part: output_text, or a refusal.
type rsPart struct {
	Refusal bool
	Text    string
}

var emptyArray = json.RawMessage("[]")

func (it rsItem) MarshalJSON() ([]byte, error) {
	if it.Function {
		return marshal(struct {
			ID        string `json:"id"`
			Type      string `json:"type"`
			Status    string `json:"status"`
			CallID    string `json:"call_id"`
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		}{it.ID, "function_call", it.Status, it.CallID, it.Name, it.Args})
	}
	parts := it.Parts
	if parts == nil {
		parts = []rsPart{}
	}
	return marshal(struct {
		ID      string   `json:"id"`
		Type    string   `json:"type"`
		Status  string   `json:"status"`
		Role    string   `json:"role"`
		Content []rsPart `json:"content"`
	}{it.ID, "message", it.Status, "assistant", parts})
}

func (p rsPart) MarshalJSON() ([]byte, error) {
	if p.Refusal {
		return marshal(struct {
			Type    string `json:"type"`
			Refusal string `json:"refusal"`
		}{"refusal", p.Text})
	}
	return marshal(struct {
		Type        string          `json:"type"`
		Text        string          `json:"text"`
		Annotations json.RawMessage `json:"annotations"`
		Logprobs    json.RawMessage `json:"logprobs"`
	}{"output_text", p.Text, emptyArray, emptyArray})
}

// idBase is what a translated answer's ids derive from: the chat answer's
// id, so that they are the same every time one answer is translated.
func idBase(chatID string, created int64) string {
	if chatID != "" {
		return chatID
	}
	return "chat-" + strconv.FormatInt(created, 10)
}

// itemID is the id of the output item at index i: its kind's prefix
// (msg, fc), the answer's id, and its place, alike for a whole answer
// and a stream.
func itemID(prefix, base string, i int) string {
	return prefix + "_" + base + "_" + strconv.Itoa(i)
}

// newResponse is a response object with nothing in it yet.
func newResponse(base, model string, created int64, status string) rsResponse {
	return rsResponse{
		ID: "resp_" + base, Object: "response", CreatedAt: created, Status: status,
		Error: jsonNull, Instructions: jsonNull, MaxOutputTokens: jsonNull, Metadata: json.RawMessage("{}"),
		Model: model, Output: []rsItem{}, ParallelToolCalls: true, PreviousResponseID: jsonNull,
		Temperature: jsonNull, ToolChoice: "auto", Tools: []json.RawMessage{}, TopP: jsonNull,
	}
}

// responseStatus is a chat finish_reason as the response's status: an
// answer cut by its token cap or by a content filter is incomplete, and
// says why; any other reason (stop, tool_calls, one newer than this
// package) is a complete answer.
func responseStatus(finish string) (string, *rsIncomplete) {
	switch finish {
	case "length":
		return "incomplete", &rsIncomplete{Reason: "max_output_tokens"}
	case "content_filter":
		return "incomplete", &rsIncomplete{Reason: "content_filter"}
	}
	return "completed", nil
}

// usageToResponses: the same counts, under the Responses API's names.
func usageToResponses(u *oaUsageIn) *rsUsage {
	if u == nil {
		return nil
	}
	out := &rsUsage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
	out.TotalTokens = u.PromptTokens + u.CompletionTokens
	if u.TotalTokens != nil {
		out.TotalTokens = *u.TotalTokens
	}
	if d := u.PromptTokensDetails; d != nil {
		out.InputTokensDetails.CachedTokens = d.CachedTokens
	}
	if d := u.CompletionTokensDetails; d != nil {
		out.OutputTokensDetails.ReasoningTokens = d.ReasoningTokens
	}
	return out
}

// ChatToResponse translates a whole chat.completion answer into a
// Responses API response object. created stamps created_at if the chat
// answer has none.
//
// The output is one message item when the answer has text or a refusal
// (or nothing at all: an empty answer is a message with empty text),
// then one function_call item per tool call. An answer cut short
// (finish_reason length or content_filter) is status incomplete, and so
// is its last item. It must have exactly one choice, as a translated
// request asks for.
func ChatToResponse(body []byte, created int64) ([]byte, error) {
	var in oaResponseIn
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, badResponse("not an OpenAI chat.completion: %v", err)
	}
	if in.Error != nil && len(in.Choices) == 0 {
		return nil, badResponse("an error body under a 2xx: %s", in.Error.Message)
	}
	if len(in.Choices) != 1 {
		return nil, badResponse("%d choices; a response holds one answer", len(in.Choices))
	}
	if in.Created != 0 {
		created = in.Created
	}
	ch := in.Choices[0]
	finish := ""
	if ch.FinishReason != nil {
		finish = *ch.FinishReason
	}
	status, incomplete := responseStatus(finish)
	base := idBase(in.ID, created)
	out := newResponse(base, in.Model, created, status)
	out.IncompleteDetails = incomplete
	out.Usage = usageToResponses(in.Usage)

	var parts []rsPart
	if c := ch.Message.Content; c != nil && *c != "" {
		parts = append(parts, rsPart{Text: *c})
	}
	if r := ch.Message.Refusal; r != nil && *r != "" {
		parts = append(parts, rsPart{Refusal: true, Text: *r})
	}
	if len(parts) == 0 && len(ch.Message.ToolCalls) == 0 {
		parts = []rsPart{{}}
	}
	if len(parts) > 0 {
		out.Output = append(out.Output, rsItem{ID: itemID("msg", base, 0), Status: "completed", Parts: parts})
	}
	for i, tc := range ch.Message.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			return nil, badResponse("tool_calls[%d] is a %q call, which the Responses API's function_call cannot carry", i, tc.Type)
		}
		n := len(out.Output)
		it := rsItem{Function: true, ID: itemID("fc", base, n), Status: "completed", CallID: tc.ID, Args: tc.Function.Arguments}
		if it.CallID == "" {
			it.CallID = itemID("call", base, n)
		}
		if tc.Function.Name != nil {
			it.Name = *tc.Function.Name
		}
		out.Output = append(out.Output, it)
	}
	if incomplete != nil {
		out.Output[len(out.Output)-1].Status = "incomplete"
	}
	return marshal(out)
}
