package bedrock

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/wire/protocol"
	"github.com/sluice-gw/sluice/internal/wire/translate"
)

// roundTrip sends a hub request through the Codec to a Bedrock endpoint
// made of the Server, and reads the answer back into the hub.
func roundTrip(t *testing.T, hub, model string) (status int, out []byte, streamErr error) {
	t.Helper()
	ts := serve(t, 5)
	call, err := Kind().Codec.Request([]byte(hub), model, translate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(ts.URL+call.Path, "application/json", bytes.NewReader(call.Body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		body, _ := io.ReadAll(resp.Body)
		f := Kind().Codec.Failure(resp.StatusCode, resp.Header, body)
		if f.RetryAfter != 0 && f.RetryAfter != 7*time.Second {
			t.Errorf("retry after %v", f.RetryAfter)
		}
		return f.Status, f.Body, nil
	}
	if !call.Stream {
		body, _ := io.ReadAll(resp.Body)
		answer, err := call.Reply.Answer(body)
		if err != nil {
			t.Fatal(err)
		}
		return 200, answer, nil
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/vnd.amazon.eventstream" {
		t.Errorf("content type %q", ct)
	}
	ev := call.Reply.Stream(resp.Body)
	var sse []byte
	for {
		b, err := ev.Next()
		sse = append(sse, b...)
		if err == io.EOF {
			return 200, sse, nil
		}
		if err != nil {
			return 200, sse, err
		}
	}
}

func TestLoopWhole(t *testing.T) {
	st, out, _ := roundTrip(t, `{"model":"x","max_tokens":20,"system":"Be brief.","messages":[{"role":"user","content":"hello"}]}`, nova)
	if st != 200 || !bytes.Contains(out, []byte(`"text":"echo: hello"`)) || !bytes.Contains(out, []byte(`"output_tokens":13`)) {
		t.Fatalf("%d %s", st, out)
	}
}

func TestLoopStreamedToolCall(t *testing.T) {
	st, sse, err := roundTrip(t, `{"model":"x","max_tokens":20,"stream":true,"tools":[{"name":"look","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"cats"}]}`, claude)
	if st != 200 || err != nil {
		t.Fatalf("%d %v", st, err)
	}
	for _, s := range []string{`"text":"Let m"`, `"name":"look"`, `"stop_reason":"tool_use"`, `"output_tokens":13`, `"input_tokens":21`, `"cache_read_input_tokens":4`} {
		if !bytes.Contains(sse, []byte(s)) {
			t.Errorf("missing %s in\n%s", s, sse)
		}
	}
	check := protocol.NewStreamCheck(protocol.Anthropic)
	check.Feed(sse)
	if got := check.End(); got != protocol.StreamOK {
		t.Fatalf("stream check %s", got)
	}
}

func TestLoopJSONSchemaAnswer(t *testing.T) {
	const hub = `{"model":"x","max_tokens":20,"output_config":{"format":{"type":"json_schema","schema":{"type":"object","properties":{"city":{"type":"string"}}}}},"messages":[{"role":"user","content":"Where?"}]}`
	st, out, _ := roundTrip(t, hub, nova)
	var answer struct {
		Content []struct {
			Type, Text string
		}
		StopReason string `json:"stop_reason"`
	}
	if err := json.Unmarshal(out, &answer); err != nil || st != 200 {
		t.Fatalf("%d %v %s", st, err, out)
	}
	if len(answer.Content) != 1 || answer.Content[0].Type != "text" || answer.Content[0].Text != `{"city":"Paris"}` || answer.StopReason != "end_turn" {
		t.Fatalf("whole: %s", out)
	}
	st, sse, err := roundTrip(t, strings.Replace(hub, `"max_tokens":20`, `"max_tokens":20,"stream":true`, 1), nova)
	if st != 200 || err != nil {
		t.Fatalf("%d %v", st, err)
	}
	events, _ := translate.ParseEvents(sse)
	text := ""
	for _, ev := range events {
		var v struct {
			Delta *struct{ Type, Text string }
		}
		_ = json.Unmarshal(ev.Data, &v)
		if v.Delta != nil && v.Delta.Type == "text_delta" {
			text += v.Delta.Text
		}
	}
	if text != `{"city":"Paris"}` || !bytes.Contains(sse, []byte(`"stop_reason":"end_turn"`)) || bytes.Contains(sse, []byte("tool_use")) {
		t.Fatalf("stream text %q\n%s", text, sse)
	}
}

func TestLoopThrottled(t *testing.T) {
	st, out, _ := roundTrip(t, `{"model":"x","max_tokens":20,"messages":[{"role":"user","content":"throttle me"}]}`, nova)
	if st != 429 || !bytes.Contains(out, []byte(`"type":"rate_limit_error"`)) || !bytes.Contains(out, []byte("ThrottlingException: Too many requests")) {
		t.Fatalf("%d %s", st, out)
	}
}

func TestLoopStreamError(t *testing.T) {
	st, sse, err := roundTrip(t, `{"model":"x","max_tokens":20,"stream":true,"messages":[{"role":"user","content":"fail midway"}]}`, nova)
	if st != 200 || !errors.Is(err, translate.ErrStreamFailed) {
		t.Fatalf("%d %v", st, err)
	}
	if !bytes.Contains(sse, []byte(`"text":"partial"`)) || !bytes.Contains(sse, []byte(`{"type":"error","error":{"type":"rate_limit_error","message":"throttlingException: slow down"}}`)) {
		t.Fatalf("%s", sse)
	}
}
