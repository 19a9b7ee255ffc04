package bedrock

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/internal/wire/native"
	"github.com/sluice-gw/sluice/internal/wire/translate"
)

// A small stand-in for the mock's Anthropic handler: it reads a hub
// request and answers in the hub, so the Server can be driven end to end
// by the AWS SDK and by the Codec.

type cannedRequest struct {
	Model     string `json:"model"`
	Stream    bool   `json:"stream"`
	MaxTokens int    `json:"max_tokens"`
	System    string `json:"system"`
	Messages  []struct {
		Role    string  `json:"role"`
		Content []hubIn `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
	ToolChoice *struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tool_choice"`
}

// cannedHub answers a hub request: "throttle" in the last user text is a
// 429; a forced tool (tool_choice tool) is called with {"city":"Paris"};
// offered tools are called on a plain question; a tool result is echoed
// back; anything else is echoed. It returns the hub status and body (a
// whole answer, or the stream's SSE).
func cannedHub(t testing.TB, hub []byte) (int, http.Header, []byte) {
	var req cannedRequest
	if err := json.Unmarshal(hub, &req); err != nil {
		t.Errorf("the hub request is not JSON: %v\n%s", err, hub)
		return 400, nil, native.HubError("invalid_request_error", "not JSON")
	}
	last := req.Messages[len(req.Messages)-1]
	text, result := "", ""
	for _, b := range last.Content {
		if b.Type == "text" && b.Text != nil {
			text += *b.Text
		}
		if b.Type == "tool_result" {
			for _, c := range b.Content {
				if c.Text != nil {
					result += *c.Text
				}
			}
		}
	}
	if strings.Contains(text, "throttle") {
		return 429, http.Header{"Retry-After": {"7"}}, native.HubError("rate_limit_error", "Too many requests, please wait before trying again.")
	}
	if strings.Contains(text, "fail midway") && req.Stream {
		return 200, nil, []byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":2}}}\n\n" +
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"partial\"}}\n\n" +
			"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"slow down\"}}\n\n")
	}
	var content []map[string]any
	stop := "end_turn"
	switch {
	case req.ToolChoice != nil && req.ToolChoice.Type == "tool":
		content = append(content, map[string]any{"type": "tool_use", "id": "toolu_forced", "name": req.ToolChoice.Name, "input": map[string]any{"city": "Paris"}})
		stop = "tool_use"
	case result != "":
		content = append(content, map[string]any{"type": "text", "text": "The tool said: " + result})
	case len(req.Tools) > 0:
		content = append(content,
			map[string]any{"type": "text", "text": "Let me check."},
			map[string]any{"type": "tool_use", "id": "toolu_1", "name": req.Tools[0].Name, "input": map[string]any{"q": text}})
		stop = "tool_use"
	default:
		content = append(content, map[string]any{"type": "text", "text": "echo: " + text})
	}
	usage := map[string]int{"input_tokens": 21, "output_tokens": 13, "cache_read_input_tokens": 4, "cache_creation_input_tokens": 0}
	if !req.Stream {
		body, _ := json.Marshal(map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "model": req.Model,
			"content": content, "stop_reason": stop, "stop_sequence": nil, "usage": usage})
		return 200, nil, body
	}
	var evs []translate.Event
	add := func(name string, v string) { evs = append(evs, translate.Event{Name: name, Data: []byte(v)}) }
	add("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":21,"cache_read_input_tokens":4,"output_tokens":1}}}`)
	add("ping", `{"type":"ping"}`)
	for i, b := range content {
		switch b["type"] {
		case "text":
			add("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"text","text":""}}`, i))
			s := b["text"].(string)
			for len(s) > 0 {
				n := min(len(s), 5)
				chunk, _ := json.Marshal(s[:n])
				s = s[n:]
				add("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":%s}}`, i, chunk))
			}
		case "tool_use":
			add("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"tool_use","id":%q,"name":%q,"input":{}}}`, i, b["id"], b["name"]))
			input, _ := json.Marshal(b["input"])
			half := len(input) / 2
			for _, part := range []string{string(input[:half]), string(input[half:])} {
				p, _ := json.Marshal(part)
				add("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":%s}}`, i, p))
			}
		}
		add("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i))
	}
	add("message_delta", `{"type":"message_delta","delta":{"stop_reason":"`+stop+`","stop_sequence":null},"usage":{"output_tokens":13}}`)
	add("message_stop", `{"type":"message_stop"}`)
	return 200, nil, translate.Encode(evs)
}

// serve is a Bedrock endpoint made of the Server and cannedHub; hub
// streams are written to the Server's stream writer in chunks of
// chunk bytes.
func serve(t *testing.T, chunk int) *httptest.Server {
	srv := Kind().Server
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		model, stream, ok := srv.Match(r.URL.EscapedPath(), r.URL.RawQuery)
		if !ok || r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		fail := func(status int, h http.Header, hub []byte) {
			st, hdr, b := srv.Failure(status, h, hub)
			for k, v := range hdr {
				w.Header()[k] = v
			}
			w.WriteHeader(st)
			_, _ = w.Write(b)
		}
		hub, err := srv.HubRequest(model, stream, body)
		if err != nil {
			fail(400, nil, native.HubError("invalid_request_error", err.Error()))
			return
		}
		status, h, out := cannedHub(t, hub)
		if status != 200 {
			fail(status, h, out)
			return
		}
		if !stream {
			answer, err := srv.Answer(out)
			if err != nil {
				t.Errorf("Answer: %v", err)
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(answer)
			return
		}
		w.Header().Set("Content-Type", srv.StreamContentType())
		sw := srv.Stream(w)
		for len(out) > 0 {
			n := min(chunk, len(out))
			if _, err := sw.Write(out[:n]); err != nil {
				t.Errorf("stream write: %v", err)
				return
			}
			out = out[n:]
		}
		if err := sw.Close(); err != nil {
			t.Errorf("stream close: %v", err)
		}
	}))
	t.Cleanup(ts.Close)
	return ts
}
