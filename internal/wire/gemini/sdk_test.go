package gemini

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"google.golang.org/genai"

	"github.com/sluice-gw/sluice/internal/wire/translate"
)

// cannedHub is a small stand-in for the mock's Anthropic handler: it
// answers a hub request from what the request asks, and records it.
type cannedHub struct {
	mu   sync.Mutex
	last map[string]any
}

type hubReqIn struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string `json:"role"`
		Content []struct {
			Type      string `json:"type"`
			Text      string `json:"text"`
			ToolUseID string `json:"tool_use_id"`
			Content   any    `json:"content"`
		} `json:"content"`
	} `json:"messages"`
	Tools        []struct{ Name string } `json:"tools"`
	OutputConfig *struct {
		Format struct {
			Schema map[string]any `json:"schema"`
		} `json:"format"`
	} `json:"output_config"`
}

// answer returns the hub status, headers and whole answer for req.
func (c *cannedHub) answer(hub []byte) (int, http.Header, []byte) {
	var req hubReqIn
	json.Unmarshal(hub, &req)
	var raw map[string]any
	json.Unmarshal(hub, &raw)
	c.mu.Lock()
	c.last = raw
	c.mu.Unlock()
	if req.Model == "gemini-limited" {
		return 429, http.Header{"Retry-After": {"37"}}, []byte(`{"type":"error","error":{"type":"rate_limit_error","message":"Quota exceeded for gemini-limited."}}`)
	}
	content := []map[string]any{}
	stop := "end_turn"
	last := req.Messages[len(req.Messages)-1]
	result := ""
	for _, b := range last.Content {
		if b.Type == "tool_result" {
			result = fmt.Sprint(b.Content)
		}
	}
	switch {
	case result != "":
		content = append(content, map[string]any{"type": "text", "text": "It is " + result + " in Paris."})
	case len(req.Tools) > 0:
		content = append(content, map[string]any{"type": "text", "text": "Let me check."},
			map[string]any{"type": "tool_use", "id": "toolu_01A", "name": req.Tools[0].Name, "input": map[string]any{"city": "Paris"}})
		stop = "tool_use"
	case req.OutputConfig != nil:
		if _, ok := req.OutputConfig.Format.Schema["properties"].(map[string]any)["answer"]; !ok {
			return 400, nil, []byte(`{"type":"error","error":{"type":"invalid_request_error","message":"schema lost"}}`)
		}
		content = append(content, map[string]any{"type": "text", "text": `{"answer":"42"}`})
	default:
		content = append(content, map[string]any{"type": "text", "text": "echo: " + last.Content[0].Text})
	}
	a, _ := json.Marshal(map[string]any{"id": "msg_canned1", "type": "message", "role": "assistant", "model": req.Model, "content": content,
		"stop_reason": stop, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 11, "output_tokens": 5, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}})
	return 200, nil, a
}

// hubStreamOf writes a whole hub answer as Anthropic's stream, text in
// two deltas and tool input in two.
func hubStreamOf(answer []byte) string {
	var a struct {
		ID, Model, StopReason string `json:"-"`
		Content               []map[string]any
		Usage                 map[string]any
	}
	json.Unmarshal(answer, &a)
	var m map[string]any
	json.Unmarshal(answer, &m)
	ev := func(name string, v any) string {
		b, _ := json.Marshal(v)
		return "event: " + name + "\ndata: " + string(b) + "\n\n"
	}
	s := ev("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": m["id"], "type": "message", "role": "assistant", "model": m["model"],
		"content": []any{}, "stop_reason": nil, "usage": map[string]any{"input_tokens": a.Usage["input_tokens"], "output_tokens": 1}}})
	for i, b := range a.Content {
		switch b["type"] {
		case "text":
			text := b["text"].(string)
			s += ev("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			s += ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": text[:len(text)/2]}})
			s += ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": text[len(text)/2:]}})
		case "tool_use":
			in, _ := json.Marshal(b["input"])
			s += ev("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}})
			s += ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(in[:3])}})
			s += ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(in[3:])}})
		}
		s += ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	s += ev("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": m["stop_reason"]}, "usage": map[string]any{"output_tokens": a.Usage["output_tokens"]}})
	return s + ev("message_stop", map[string]any{"type": "message_stop"})
}

// geminiServer is the Server in front of the canned hub, on 127.0.0.1.
func geminiServer(t *testing.T) (*httptest.Server, *cannedHub) {
	hub := &cannedHub{}
	s := Server{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Goog-Api-Key") != "sdk-test-key" {
			w.WriteHeader(401)
			return
		}
		model, stream, ok := s.Match(r.URL.EscapedPath(), r.URL.RawQuery)
		if !ok {
			http.NotFound(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		hreq, err := s.HubRequest(model, stream, body)
		status, h, ans := 0, http.Header(nil), []byte(nil)
		if err != nil {
			status, ans = 400, []byte(`{"type":"error","error":{"type":"invalid_request_error","message":"`+err.Error()+`"}}`)
		} else {
			status, h, ans = hub.answer(hreq)
		}
		if status != 200 {
			code, gh, gb := s.Failure(status, h, ans)
			for k, v := range gh {
				w.Header()[k] = v
			}
			w.WriteHeader(code)
			w.Write(gb)
			return
		}
		if !stream {
			gb, err := s.Answer(ans)
			if err != nil {
				t.Errorf("Answer: %v", err)
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write(gb)
			return
		}
		w.Header().Set("Content-Type", s.StreamContentType())
		sw := s.Stream(flushWriter{w})
		io.WriteString(sw, hubStreamOf(ans))
		sw.Close()
	}))
	t.Cleanup(srv.Close)
	return srv, hub
}

type flushWriter struct{ w http.ResponseWriter }

func (f flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	f.w.(http.Flusher).Flush()
	return n, err
}

func sdkClient(t *testing.T, url string) *genai.Client {
	for _, k := range []string{"GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION"} {
		t.Setenv(k, "")
	}
	c, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey: "sdk-test-key", Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: url + "/"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestSDKGenerateContent(t *testing.T) {
	srv, hub := geminiServer(t)
	c := sdkClient(t, srv.URL)
	resp, err := c.Models.GenerateContent(context.Background(), "gemini-2.5-flash", genai.Text("Hello, Gemini"), &genai.GenerateContentConfig{
		SystemInstruction: genai.NewContentFromText("Be brief.", genai.RoleUser),
		MaxOutputTokens:   77, Temperature: genai.Ptr[float32](0.5),
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text() != "echo: Hello, Gemini" {
		t.Fatalf("text %q", resp.Text())
	}
	if resp.Candidates[0].FinishReason != genai.FinishReasonStop || resp.UsageMetadata.PromptTokenCount != 11 || resp.UsageMetadata.CandidatesTokenCount != 5 {
		t.Fatalf("finish %v usage %+v", resp.Candidates[0].FinishReason, resp.UsageMetadata)
	}
	if resp.ResponseID != "canned1" || resp.ModelVersion != "gemini-2.5-flash" {
		t.Fatalf("id %q model %q", resp.ResponseID, resp.ModelVersion)
	}
	hub.mu.Lock()
	defer hub.mu.Unlock()
	if hub.last["system"] != "Be brief." || hub.last["max_tokens"] != 77.0 || hub.last["temperature"] != 0.5 {
		t.Fatalf("hub request %v", hub.last)
	}
}

func TestSDKGenerateContentStream(t *testing.T) {
	srv, _ := geminiServer(t)
	c := sdkClient(t, srv.URL)
	var text strings.Builder
	var last *genai.GenerateContentResponse
	chunks := 0
	for resp, err := range c.Models.GenerateContentStream(context.Background(), "gemini-2.5-flash", genai.Text("streaming please"), nil) {
		if err != nil {
			t.Fatal(err)
		}
		chunks++
		text.WriteString(resp.Text())
		last = resp
	}
	if text.String() != "echo: streaming please" || chunks != 3 {
		t.Fatalf("text %q in %d chunks", text.String(), chunks)
	}
	if last.Candidates[0].FinishReason != genai.FinishReasonStop || last.UsageMetadata.CandidatesTokenCount != 5 || last.UsageMetadata.PromptTokenCount != 11 {
		t.Fatalf("last chunk %+v", last)
	}
}

func TestSDKFunctionCallRoundTrip(t *testing.T) {
	srv, hub := geminiServer(t)
	c := sdkClient(t, srv.URL)
	cfg := &genai.GenerateContentConfig{Tools: []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{{
		Name: "get_weather", Description: "Weather in a city",
		ParametersJsonSchema: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}},
	}}}}, ToolConfig: &genai.ToolConfig{FunctionCallingConfig: &genai.FunctionCallingConfig{Mode: genai.FunctionCallingConfigModeAny}}}
	history := genai.Text("Weather in Paris?")
	for _, streamed := range []bool{false, true} {
		var calls []*genai.FunctionCall
		var modelTurn *genai.Content
		if streamed {
			modelTurn = &genai.Content{Role: genai.RoleModel}
			for resp, err := range c.Models.GenerateContentStream(context.Background(), "gemini-2.5-flash", history, cfg) {
				if err != nil {
					t.Fatal(err)
				}
				calls = append(calls, resp.FunctionCalls()...)
				if len(resp.Candidates) > 0 && resp.Candidates[0].Content != nil {
					modelTurn.Parts = append(modelTurn.Parts, resp.Candidates[0].Content.Parts...)
				}
			}
		} else {
			resp, err := c.Models.GenerateContent(context.Background(), "gemini-2.5-flash", history, cfg)
			if err != nil {
				t.Fatal(err)
			}
			calls, modelTurn = resp.FunctionCalls(), resp.Candidates[0].Content
		}
		if len(calls) != 1 || calls[0].Name != "get_weather" || calls[0].Args["city"] != "Paris" || calls[0].ID != "toolu_01A" {
			t.Fatalf("streamed %v: calls %+v", streamed, calls)
		}
		hub.mu.Lock()
		if tc := hub.last["tool_choice"].(map[string]any); tc["type"] != "any" {
			t.Fatalf("tool_choice %v", tc)
		}
		hub.mu.Unlock()
		turns := append(append([]*genai.Content{}, history...), modelTurn,
			genai.NewContentFromFunctionResponse("get_weather", map[string]any{"content": "18C"}, genai.RoleUser))
		turns[len(turns)-1].Parts[0].FunctionResponse.ID = calls[0].ID
		resp, err := c.Models.GenerateContent(context.Background(), "gemini-2.5-flash", turns, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Text() != "It is 18C in Paris." {
			t.Fatalf("streamed %v: answer %q", streamed, resp.Text())
		}
	}
}

func TestSDKJSONSchema(t *testing.T) {
	srv, hub := geminiServer(t)
	c := sdkClient(t, srv.URL)
	resp, err := c.Models.GenerateContent(context.Background(), "gemini-2.5-flash", genai.Text("The answer?"), &genai.GenerateContentConfig{
		ResponseMIMEType:   "application/json",
		ResponseJsonSchema: map[string]any{"type": "object", "properties": map[string]any{"answer": map[string]any{"type": "string"}}, "required": []string{"answer"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Answer string }
	if err := json.Unmarshal([]byte(resp.Text()), &got); err != nil || got.Answer != "42" {
		t.Fatalf("answer %q: %v", resp.Text(), err)
	}
	hub.mu.Lock()
	defer hub.mu.Unlock()
	f := hub.last["output_config"].(map[string]any)["format"].(map[string]any)
	if f["type"] != "json_schema" {
		t.Fatalf("format %v", f)
	}
}

func TestSDKRateLimit(t *testing.T) {
	srv, _ := geminiServer(t)
	c := sdkClient(t, srv.URL)
	_, err := c.Models.GenerateContent(context.Background(), "gemini-limited", genai.Text("x"), nil)
	var apiErr genai.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("err %T %v, want genai.APIError", err, err)
	}
	if apiErr.Code != 429 || apiErr.Status != "RESOURCE_EXHAUSTED" || !strings.Contains(apiErr.Message, "Quota exceeded") {
		t.Fatalf("APIError %+v", apiErr)
	}
	if len(apiErr.Details) != 1 || apiErr.Details[0]["retryDelay"] != "37s" {
		t.Fatalf("details %v", apiErr.Details)
	}
	// The same error read by the gateway's codec.
	b, _ := json.Marshal(map[string]any{"error": apiErr})
	if f := (Codec{}).Failure(429, nil, b); f.Status != 429 || f.RetryAfter.Seconds() != 37 {
		t.Fatalf("codec failure %+v", f)
	}
	// And in a stream.
	for _, err := range c.Models.GenerateContentStream(context.Background(), "gemini-limited", genai.Text("x"), nil) {
		if !errors.As(err, &apiErr) || apiErr.Code != 429 {
			t.Fatalf("stream err %v", err)
		}
		break
	}
}

// The codec's requests are ones the SDK's own server-side shape reads:
// a Codec body decodes into genai's request types without loss of the
// fields Sluice writes.
func TestCodecBodyDecodesAsSDKTypes(t *testing.T) {
	call, err := Codec{}.Request([]byte(`{"model":"m","max_tokens":9,"system":"s","tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"tool","name":"f"},
		"output_config":{"format":{"type":"json_schema","schema":{"type":"object"}}},"thinking":{"type":"enabled","budget_tokens":64},
		"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"tool_use","id":"i1","name":"f","input":{"a":1}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"i1","content":"r"}]}]}`),
		"m", translate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var req struct {
		Contents          []*genai.Content        `json:"contents"`
		SystemInstruction *genai.Content          `json:"systemInstruction"`
		Tools             []*genai.Tool           `json:"tools"`
		ToolConfig        *genai.ToolConfig       `json:"toolConfig"`
		GenerationConfig  *genai.GenerationConfig `json:"generationConfig"`
	}
	if err := json.Unmarshal(call.Body, &req); err != nil {
		t.Fatal(err)
	}
	g := req.GenerationConfig
	if g.MaxOutputTokens != 9 || g.ResponseMIMEType != "application/json" || g.ResponseJsonSchema == nil || *g.ThinkingConfig.ThinkingBudget != 64 {
		t.Fatalf("generation config %+v", g)
	}
	if req.Tools[0].FunctionDeclarations[0].ParametersJsonSchema == nil || req.ToolConfig.FunctionCallingConfig.AllowedFunctionNames[0] != "f" {
		t.Fatalf("tools %+v", req.Tools[0].FunctionDeclarations[0])
	}
	if fr := req.Contents[2].Parts[0].FunctionResponse; fr == nil || fr.Name != "f" || fr.ID != "i1" || fr.Response["content"] != "r" {
		t.Fatalf("function response %+v", fr)
	}
	if req.SystemInstruction.Parts[0].Text != "s" {
		t.Fatal("system")
	}
}
