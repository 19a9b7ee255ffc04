package gemini

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/sluice-gw/sluice/internal/wire/native"
	"github.com/sluice-gw/sluice/internal/wire/translate"
)

// Server speaks Gemini's generateContent API for the mock. The zero
// value is ready and safe for concurrent use.
type Server struct{}

var _ native.Server = Server{}

// Match implements native.Server. It serves the Gemini API's
// /v1beta/models/{model}:generateContent (and v1, v1alpha) and Vertex
// AI's /v1/projects/{p}/locations/{l}/publishers/google/models/{model}:…,
// below any prefix, with :streamGenerateContent streaming. The stream is
// always server-sent events, as alt=sse asks.
func (Server) Match(rawPath, query string) (model string, stream, ok bool) {
	i := strings.LastIndex(rawPath, "/models/")
	if i < 0 {
		return "", false, false
	}
	prefix := rawPath[:i]
	if !strings.HasSuffix(prefix, "/v1beta") && !strings.HasSuffix(prefix, "/v1alpha") &&
		!strings.HasSuffix(prefix, "/v1") && !strings.HasSuffix(prefix, "/publishers/google") {
		return "", false, false
	}
	seg := rawPath[i+len("/models/"):]
	if strings.Contains(seg, "/") {
		return "", false, false
	}
	seg, err := url.PathUnescape(seg)
	if err != nil {
		return "", false, false
	}
	j := strings.LastIndex(seg, ":")
	if j <= 0 {
		return "", false, false
	}
	switch seg[j+1:] {
	case "generateContent":
	case "streamGenerateContent":
		stream = true
	default:
		return "", false, false
	}
	return seg[:j], stream, true
}

// hubRequestOut is the hub request the mock is handed.
type hubRequestOut struct {
	Model         string           `json:"model"`
	MaxTokens     int64            `json:"max_tokens"`
	System        string           `json:"system,omitempty"`
	Messages      []hubMessageOut  `json:"messages"`
	Stream        bool             `json:"stream,omitempty"`
	Temperature   *float64         `json:"temperature,omitempty"`
	TopP          *float64         `json:"top_p,omitempty"`
	TopK          *int64           `json:"top_k,omitempty"`
	StopSequences []string         `json:"stop_sequences,omitempty"`
	Tools         []map[string]any `json:"tools,omitempty"`
	ToolChoice    map[string]any   `json:"tool_choice,omitempty"`
	OutputConfig  map[string]any   `json:"output_config,omitempty"`
	Thinking      map[string]any   `json:"thinking,omitempty"`
}

type hubMessageOut struct {
	Role    string           `json:"role"`
	Content []map[string]any `json:"content"`
}

// HubRequest implements native.Server.
func (Server) HubRequest(model string, stream bool, body []byte) ([]byte, error) {
	var g gmRequest
	if err := json.Unmarshal(body, &g); err != nil {
		return nil, fmt.Errorf("the request is not a GenerateContentRequest: %v", err)
	}
	if len(g.Contents) == 0 {
		return nil, errors.New("contents is not specified")
	}
	out := hubRequestOut{Model: model, MaxTokens: translate.DefaultMaxTokens, Stream: stream, Messages: []hubMessageOut{}}
	if g.SystemInstruction != nil {
		var sb strings.Builder
		for _, p := range g.SystemInstruction.Parts {
			if p.Text != nil {
				if sb.Len() > 0 {
					sb.WriteString("\n")
				}
				sb.WriteString(*p.Text)
			}
		}
		out.System = sb.String()
	}
	pending := map[string][]string{} // function name → call ids not yet answered
	calls := 0
	for i, c := range g.Contents {
		role := "user"
		switch c.Role {
		case "model":
			role = "assistant"
		case "user", "function", "":
		default:
			return nil, fmt.Errorf("contents[%d].role %q is neither user nor model", i, c.Role)
		}
		var blocks []map[string]any
		for j, p := range c.Parts {
			switch {
			case p.Thought:
			case p.FunctionCall != nil:
				id := toolID(p.FunctionCall.ID, calls)
				calls++
				pending[p.FunctionCall.Name] = append(pending[p.FunctionCall.Name], id)
				a, err := args(p.FunctionCall.Args)
				if err != nil {
					return nil, fmt.Errorf("contents[%d].parts[%d].functionCall.args is not an object", i, j)
				}
				blocks = append(blocks, map[string]any{"type": "tool_use", "id": id, "name": p.FunctionCall.Name, "input": a})
			case p.FunctionResponse != nil:
				fr := p.FunctionResponse
				id := fr.ID
				if q := pending[fr.Name]; id == "" && len(q) > 0 {
					id, pending[fr.Name] = q[0], q[1:]
				}
				if id == "" {
					return nil, fmt.Errorf("contents[%d].parts[%d].functionResponse answers no earlier functionCall named %q", i, j, fr.Name)
				}
				text, isErr := responseText(fr.Response)
				b := map[string]any{"type": "tool_result", "tool_use_id": id, "content": text}
				if isErr {
					b["is_error"] = true
				}
				blocks = append(blocks, b)
			case p.Text != nil:
				if *p.Text != "" {
					blocks = append(blocks, map[string]any{"type": "text", "text": *p.Text})
				}
			case p.InlineData != nil:
				typ := "image"
				if !strings.HasPrefix(p.InlineData.MimeType, "image/") {
					typ = "document"
				}
				blocks = append(blocks, map[string]any{"type": typ, "source": map[string]any{"type": "base64", "media_type": p.InlineData.MimeType, "data": p.InlineData.Data}})
			case p.FileData != nil:
				typ := "image"
				if !strings.HasPrefix(p.FileData.MimeType, "image/") {
					typ = "document"
				}
				blocks = append(blocks, map[string]any{"type": typ, "source": map[string]any{"type": "url", "url": p.FileData.FileURI}})
			}
		}
		if len(blocks) == 0 {
			continue
		}
		if n := len(out.Messages); n > 0 && out.Messages[n-1].Role == role {
			out.Messages[n-1].Content = append(out.Messages[n-1].Content, blocks...)
			continue
		}
		out.Messages = append(out.Messages, hubMessageOut{Role: role, Content: blocks})
	}
	for _, t := range g.Tools {
		for _, d := range t.FunctionDeclarations {
			schema := any(map[string]any{"type": "object"})
			switch {
			case !isNull(d.ParametersJSONSchema):
				schema = d.ParametersJSONSchema
			case !isNull(d.Parameters):
				var s any
				if json.Unmarshal(d.Parameters, &s) == nil {
					schema = lowerTypes(s)
				}
			}
			tool := map[string]any{"name": d.Name, "input_schema": schema}
			if d.Description != "" {
				tool["description"] = d.Description
			}
			out.Tools = append(out.Tools, tool)
		}
	}
	if tc := g.ToolConfig; tc != nil && tc.FunctionCallingConfig != nil {
		fc := tc.FunctionCallingConfig
		switch fc.Mode {
		case "AUTO":
			out.ToolChoice = map[string]any{"type": "auto"}
		case "ANY", "VALIDATED":
			out.ToolChoice = map[string]any{"type": "any"}
			if len(fc.AllowedFunctionNames) == 1 {
				out.ToolChoice = map[string]any{"type": "tool", "name": fc.AllowedFunctionNames[0]}
			}
		case "NONE":
			out.ToolChoice = map[string]any{"type": "none"}
		}
	}
	if gc := g.GenerationConfig; gc != nil {
		if gc.MaxOutputTokens != nil && *gc.MaxOutputTokens > 0 {
			out.MaxTokens = *gc.MaxOutputTokens
		}
		out.Temperature, out.TopP, out.StopSequences = gc.Temperature, gc.TopP, gc.StopSequences
		if gc.TopK != nil && *gc.TopK >= 0 && *gc.TopK < math.MaxInt32 {
			out.TopK = ptr(int64(*gc.TopK))
		}
		var schema any
		switch {
		case !isNull(gc.ResponseJSONSchema):
			schema = gc.ResponseJSONSchema
		case !isNull(gc.ResponseSchema):
			var s any
			if json.Unmarshal(gc.ResponseSchema, &s) == nil {
				schema = lowerTypes(s)
			}
		case gc.ResponseMimeType == "application/json":
			schema = map[string]any{"type": "object"}
		}
		if schema != nil {
			out.OutputConfig = map[string]any{"format": map[string]any{"type": "json_schema", "schema": schema}}
		}
		if tc := gc.ThinkingConfig; tc != nil && tc.ThinkingBudget != nil {
			switch b := *tc.ThinkingBudget; {
			case b > 0:
				out.Thinking = map[string]any{"type": "enabled", "budget_tokens": b}
			case b == 0:
				out.Thinking = map[string]any{"type": "disabled"}
			}
		}
	}
	return json.Marshal(out)
}

// responseText is a functionResponse's response as a tool result's
// text: {"content": "..."} or {"error": "..."} (as the Codec writes
// them) as their string, anything else as its JSON.
func responseText(raw json.RawMessage) (string, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) == nil && len(m) == 1 {
		for k, v := range m {
			var s string
			if (k == "content" || k == "error") && json.Unmarshal(v, &s) == nil {
				return s, k == "error"
			}
		}
	}
	if isNull(raw) {
		return "", false
	}
	return string(raw), false
}

// lowerTypes turns an OpenAPI schema's upper-case types (Gemini's
// parameters and responseSchema: "OBJECT", "STRING") into JSON Schema's.
func lowerTypes(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && k == "type" {
				x[k] = strings.ToLower(s)
				continue
			}
			x[k] = lowerTypes(e)
		}
	case []any:
		for i, e := range x {
			x[i] = lowerTypes(e)
		}
	}
	return v
}

type hubAnswerIn struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Content []struct {
		Type     string          `json:"type"`
		Text     string          `json:"text"`
		Thinking string          `json:"thinking"`
		ID       string          `json:"id"`
		Name     string          `json:"name"`
		Input    json.RawMessage `json:"input"`
	} `json:"content"`
	StopReason string      `json:"stop_reason"`
	Usage      *hubUsageIn `json:"usage"`
}

type hubUsageIn struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
}

func finishReason(stop string) string {
	switch stop {
	case "max_tokens":
		return "MAX_TOKENS"
	case "refusal":
		return "SAFETY"
	}
	return "STOP"
}

func responseID(id string) string { return strings.TrimPrefix(id, "msg_") }

// gmUsageOf is Gemini's usageMetadata for the hub's counts: the prompt is
// input, cache reads and cache writes together.
func gmUsageOf(input, cacheRead, cacheWrite, output int64) *gmUsage {
	prompt := input + cacheRead + cacheWrite
	u := &gmUsage{PromptTokenCount: ptr(prompt), CandidatesTokenCount: ptr(output), TotalTokenCount: ptr(prompt + output)}
	if cacheRead > 0 {
		u.CachedContentTokenCount = ptr(cacheRead)
	}
	return u
}

func val(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// Answer implements native.Server.
func (Server) Answer(hub []byte) ([]byte, error) {
	var a hubAnswerIn
	if err := json.Unmarshal(hub, &a); err != nil {
		return nil, fmt.Errorf("the hub answer is not a message: %v", err)
	}
	parts := []gmPart{}
	for _, b := range a.Content {
		switch b.Type {
		case "text":
			parts = append(parts, gmPart{Text: ptr(b.Text)})
		case "thinking":
			parts = append(parts, gmPart{Text: ptr(b.Thinking), Thought: true})
		case "tool_use":
			if b.Name == "" {
				continue // not a call Gemini could make
			}
			in, err := args(b.Input)
			if err != nil {
				return nil, err
			}
			parts = append(parts, gmPart{FunctionCall: &gmFunctionCall{ID: b.ID, Name: b.Name, Args: in}})
		}
	}
	g := gmResponse{
		Candidates:   []gmCandidate{{Content: &gmContent{Role: "model", Parts: parts}, FinishReason: finishReason(a.StopReason)}},
		ModelVersion: a.Model, ResponseID: responseID(a.ID),
	}
	if u := a.Usage; u != nil {
		g.UsageMetadata = gmUsageOf(val(u.InputTokens), val(u.CacheReadInputTokens), val(u.CacheCreationInputTokens), val(u.OutputTokens))
	}
	return json.Marshal(g)
}

// googleStatus is Google's error code and status for a hub status.
func googleStatus(status int) (int, string) {
	switch status {
	case 400, 413:
		return 400, "INVALID_ARGUMENT"
	case 401:
		return 401, "UNAUTHENTICATED"
	case 403:
		return 403, "PERMISSION_DENIED"
	case 404:
		return 404, "NOT_FOUND"
	case 408, 504:
		return 504, "DEADLINE_EXCEEDED"
	case 429:
		return 429, "RESOURCE_EXHAUSTED"
	case 502:
		return 502, "UNKNOWN"
	case 503, 529:
		return 503, "UNAVAILABLE"
	}
	if status >= 400 && status < 500 {
		return status, "FAILED_PRECONDITION"
	}
	return 500, "INTERNAL"
}

// gmError is Google's error body; retry adds a RetryInfo detail.
func gmError(status int, msg, retry string) []byte {
	code, st := googleStatus(status)
	info := gmErrorInfo{Code: code, Message: msg, Status: st}
	if retry != "" {
		d, _ := json.Marshal(map[string]string{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry})
		info.Details = []json.RawMessage{d}
	}
	b, _ := json.Marshal(struct {
		Error gmErrorInfo `json:"error"`
	}{info})
	return b
}

func hubErrorMessage(hub []byte, status int) string {
	var e struct {
		Error *errorInfo `json:"error"`
	}
	if json.Unmarshal(hub, &e) == nil && e.Error != nil && e.Error.Message != "" {
		return e.Error.Message
	}
	return http.StatusText(status)
}

// Failure implements native.Server: the hub's error as Google's, with a
// RetryInfo detail carrying the hub's Retry-After (in seconds).
func (Server) Failure(status int, h http.Header, hub []byte) (int, http.Header, []byte) {
	retry := ""
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
			retry = strconv.FormatFloat(s, 'f', -1, 64) + "s"
		}
	}
	code, _ := googleStatus(status)
	return code, http.Header{"Content-Type": {"application/json; charset=UTF-8"}}, gmError(status, hubErrorMessage(hub, status), retry)
}

// StreamContentType implements native.Server.
func (Server) StreamContentType() string { return "text/event-stream" }

// Stream implements native.Server.
func (Server) Stream(w io.Writer) io.WriteCloser {
	return &streamWriter{w: w, tools: map[int]*toolAcc{}}
}

type toolAcc struct {
	id, name string
	args     []byte
}

// streamWriter writes Gemini's alt=sse chunks for a hub stream: one per
// text, thinking or whole tool call, and at message_stop a last one with
// finishReason and usageMetadata.
type streamWriter struct {
	w      io.Writer
	buf    []byte
	end    bool // message_stop or an error went out
	err    error
	id     string
	model  string
	input  [3]int64 // input, cache read, cache write
	output int64
	stop   string
	tools  map[int]*toolAcc
}

func (s *streamWriter) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	if s.end {
		return len(p), nil
	}
	from := len(s.buf)
	s.buf = append(s.buf, p...)
	if !endsEvent(s.buf, from) {
		return len(p), nil
	}
	evs, n := translate.ParseEvents(s.buf)
	s.buf = append(s.buf[:0], s.buf[n:]...)
	for _, ev := range evs {
		if err := s.event(ev); err != nil {
			s.err = err
			return len(p), err
		}
		if s.end {
			s.buf = nil
			break
		}
	}
	return len(p), nil
}

func (s *streamWriter) Close() error { return s.err }

type hubEventIn struct {
	Type    string `json:"type"`
	Message *struct {
		ID    string      `json:"id"`
		Model string      `json:"model"`
		Usage *hubUsageIn `json:"usage"`
	} `json:"message"`
	Index        int `json:"index"`
	ContentBlock *struct {
		Type  string          `json:"type"`
		Text  string          `json:"text"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"content_block"`
	Delta *struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Thinking    string `json:"thinking"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *hubUsageIn `json:"usage"`
	Error *errorInfo  `json:"error"`
}

func (s *streamWriter) event(ev translate.Event) error {
	var in hubEventIn
	if json.Unmarshal(ev.Data, &in) != nil {
		return nil // not the hub's: nothing to say in Gemini's terms
	}
	typ := in.Type
	if typ == "" {
		typ = ev.Name
	}
	switch typ {
	case "message_start":
		if m := in.Message; m != nil {
			s.id, s.model = responseID(m.ID), m.Model
			if u := m.Usage; u != nil {
				s.input = [3]int64{val(u.InputTokens), val(u.CacheReadInputTokens), val(u.CacheCreationInputTokens)}
			}
		}
	case "content_block_start":
		if b := in.ContentBlock; b != nil {
			switch b.Type {
			case "tool_use":
				t := &toolAcc{id: b.ID, name: b.Name}
				if a, err := args(b.Input); err == nil && string(a) != "{}" {
					t.args = a
				}
				s.tools[in.Index] = t
			case "text":
				if b.Text != "" {
					return s.parts(gmPart{Text: ptr(b.Text)})
				}
			}
		}
	case "content_block_delta":
		if d := in.Delta; d != nil {
			switch d.Type {
			case "text_delta":
				return s.parts(gmPart{Text: ptr(d.Text)})
			case "thinking_delta":
				return s.parts(gmPart{Text: ptr(d.Thinking), Thought: true})
			case "input_json_delta":
				if t := s.tools[in.Index]; t != nil {
					t.args = append(t.args, d.PartialJSON...)
				}
			}
		}
	case "content_block_stop":
		if t := s.tools[in.Index]; t != nil {
			delete(s.tools, in.Index)
			if t.name == "" {
				return nil // not a call Gemini could make
			}
			a, err := args(t.args)
			if err != nil {
				a = json.RawMessage("{}")
			}
			return s.parts(gmPart{FunctionCall: &gmFunctionCall{ID: t.id, Name: t.name, Args: a}})
		}
	case "message_delta":
		if in.Delta != nil && in.Delta.StopReason != "" {
			s.stop = in.Delta.StopReason
		}
		if u := in.Usage; u != nil {
			s.output = val(u.OutputTokens)
			if u.InputTokens != nil {
				s.input[0] = *u.InputTokens
			}
			if u.CacheReadInputTokens != nil {
				s.input[1] = *u.CacheReadInputTokens
			}
			if u.CacheCreationInputTokens != nil {
				s.input[2] = *u.CacheCreationInputTokens
			}
		}
	case "message_stop":
		s.end = true
		return s.write(gmResponse{
			Candidates:    []gmCandidate{{FinishReason: finishReason(s.stop)}},
			UsageMetadata: gmUsageOf(s.input[0], s.input[1], s.input[2], s.output),
			ModelVersion:  s.model, ResponseID: s.id,
		})
	case "error":
		s.end = true
		msg, st := "the stream failed", 500
		if in.Error != nil {
			if in.Error.Message != "" {
				msg = in.Error.Message
			}
			st = statusOfType(in.Error.Type)
		}
		return s.writeRaw(gmError(st, msg, ""))
	}
	return nil
}

// statusOfType is the hub status an Anthropic error type stands for.
func statusOfType(typ string) int {
	switch typ {
	case "invalid_request_error":
		return 400
	case "authentication_error":
		return 401
	case "permission_error":
		return 403
	case "not_found_error":
		return 404
	case "request_too_large":
		return 413
	case "rate_limit_error":
		return 429
	case "overloaded_error":
		return 529
	case "timeout_error":
		return 504
	}
	return 500
}

func (s *streamWriter) parts(p ...gmPart) error {
	u := &gmUsage{PromptTokenCount: ptr(s.input[0] + s.input[1] + s.input[2])}
	u.TotalTokenCount = u.PromptTokenCount
	return s.write(gmResponse{
		Candidates:    []gmCandidate{{Content: &gmContent{Role: "model", Parts: p}}},
		UsageMetadata: u, ModelVersion: s.model, ResponseID: s.id,
	})
}

func (s *streamWriter) write(g gmResponse) error {
	b, err := json.Marshal(g)
	if err != nil {
		return err
	}
	return s.writeRaw(b)
}

func (s *streamWriter) writeRaw(b []byte) error {
	var out bytes.Buffer
	out.Grow(len(b) + 10)
	out.WriteString("data: ")
	out.Write(b)
	out.WriteString("\r\n\r\n")
	_, err := s.w.Write(out.Bytes())
	return err
}
