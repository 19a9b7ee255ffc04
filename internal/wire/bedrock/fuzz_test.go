package bedrock

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"

	"github.com/sluice-gw/sluice/internal/wire/native"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
	"github.com/sluice-gw/sluice/internal/wire/translate"
)

// FuzzEventStream: any bytes read as a ConverseStream answer give whole,
// well-formed hub events, bounded, and end the way the hub's contract
// says: io.EOF only after message_stop, ErrStreamFailed only after an
// error event, else ErrTruncated or ErrResponse. Never a panic.
func FuzzEventStream(f *testing.F) {
	f.Add(toolStream)
	f.Add(toolStream[:len(toolStream)/2])
	f.Add(joined(
		cv("messageStart", `{"role":"assistant"}`),
		cv("contentBlockStart", `{"start":{"toolUse":{"toolUseId":"t","name":"sluice_json_answer"}},"contentBlockIndex":0}`),
		cv("contentBlockDelta", `{"delta":{"toolUse":{"input":"{\"a\":1}"}},"contentBlockIndex":0}`),
		cv("messageStop", `{"stopReason":"tool_use"}`),
	))
	f.Add(joined(cv("messageStart", `{"role":"assistant"}`), AppendMessage(nil, exceptionMessage("throttlingException", []byte(`{"message":"x"}`)))))
	f.Add(joined(cv("messageStart", `{"role":"assistant"}`), cv("contentBlockDelta", `{"delta":{"reasoningContent":{"redactedContent":"AAAA"}},"contentBlockIndex":3}`), cv("messageStop", `{"stopReason":"guardrail_intervened"}`), cv("metadata", `{"usage":{"inputTokens":1,"outputTokens":2}}`)))
	f.Add(AppendMessage(nil, Message{Headers: []Header{StringHeader(":message-type", "error"), StringHeader(":error-code", "InternalFailure")}}))
	bad := bytes.Clone(toolStream)
	bad[20] ^= 1
	f.Add(bad)
	f.Add([]byte{0, 0, 0, 16, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		hub := plainHub
		if len(data)%2 == 1 {
			hub = schemaHub
		}
		call, err := Kind().Codec.Request([]byte(hub), claude, translate.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ev := call.Reply.Stream(bytes.NewReader(data))
		var sse []byte
		var end error
		for i := 0; ; i++ {
			if i > len(data)+2 {
				t.Fatal("more calls to Next than bytes")
			}
			b, err := ev.Next()
			if len(b) > 4*native.MaxEvent {
				t.Fatalf("%d bytes from one Next", len(b))
			}
			if events, n := translate.ParseEvents(b); n != len(b) || (len(b) > 0 && len(events) == 0) {
				t.Fatalf("not whole events: %q", b)
			}
			sse = append(sse, b...)
			if err != nil {
				end = err
				break
			}
		}
		check := protocol.NewStreamCheck(protocol.Anthropic)
		if _, ok, _ := check.Feed(sse); !ok {
			t.Fatalf("malformed hub stream:\n%s", sse)
		}
		verdict := check.End()
		switch {
		case end == io.EOF:
			if verdict != protocol.StreamOK {
				t.Fatalf("clean end judged %s:\n%s", verdict, sse)
			}
		case errors.Is(end, translate.ErrStreamFailed):
			if verdict != protocol.StreamErrorEvent {
				t.Fatalf("failed stream judged %s", verdict)
			}
		case errors.Is(end, translate.ErrTruncated), errors.Is(end, translate.ErrResponse):
			if check.Terminated() {
				t.Fatalf("%v after a terminator:\n%s", end, sse)
			}
		default:
			t.Fatalf("end %v", end)
		}
	})
}

// FuzzConverseRequest: any hub request is turned into a Converse request
// the Server reads back, at a path that names the model, or refused with
// a *translate.Error. Never a panic.
func FuzzConverseRequest(f *testing.F) {
	f.Add([]byte(`{"max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`), claude)
	f.Add([]byte(`{"max_tokens":5,"stream":true,"top_k":3,"thinking":{"type":"enabled","budget_tokens":9},"messages":[{"role":"user","content":[{"type":"text","text":"x","cache_control":{"type":"ephemeral"}}]}]}`), nova)
	f.Add([]byte(`{"max_tokens":50,"output_config":{"format":{"type":"json_schema","schema":{"type":"object"}}},"messages":[{"role":"user","content":"Where?"}]}`), "arn:aws:bedrock:us-east-1:1:inference-profile/us.anthropic.claude")
	f.Add([]byte(`{"max_tokens":5,"tools":[{"name":"a","input_schema":{"type":"object"}}],"tool_choice":{"type":"none"},"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"a","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"image","source":{"type":"base64","media_type":"image/gif","data":"R0lG"}}]}]}]}`), claude)
	f.Add([]byte(`{"messages":[{"role":"assistant","content":[{"type":"redacted_thinking","data":"abc"}]}],"metadata":{"user_id":"u"}}`), claude)
	f.Add([]byte(`[]`), "")
	f.Fuzz(func(t *testing.T, hub []byte, model string) {
		for _, opts := range []translate.Options{{}, {Unsupported: translate.UnsupportedDrop}} {
			call, err := Kind().Codec.Request(hub, model, opts)
			if err != nil {
				var te *translate.Error
				if !errors.As(err, &te) {
					t.Fatalf("error %v is not a *translate.Error", err)
				}
				if opts.Unsupported == translate.UnsupportedDrop && te.Kind != translate.ErrInvalid {
					t.Fatalf("refused under drop: %v", err)
				}
				continue
			}
			if !json.Valid(call.Body) {
				t.Fatalf("body is not JSON: %s", call.Body)
			}
			if model == "" {
				continue
			}
			m, stream, ok := Kind().Server.Match(call.Path, "")
			if !ok || m != model || stream != call.Stream {
				t.Fatalf("path %q reads as %q %v %v", call.Path, m, stream, ok)
			}
			if _, err := Kind().Server.HubRequest(m, stream, call.Body); err != nil {
				t.Fatalf("the Server refused the Codec's request: %v\n%s", err, call.Body)
			}
		}
	})
}

// FuzzServerStream: the mock's event-stream messages do not depend on
// where the hub's bytes are cut, and the Codec reads them back without
// a panic, ending as the hub's contract says.
func FuzzServerStream(f *testing.F) {
	_, _, sse := cannedHub(nil, []byte(`{"model":"m","stream":true,"tools":[{"name":"look"}],"messages":[{"role":"user","content":[{"type":"text","text":"cats"}]}]}`))
	f.Add(sse, uint16(7))
	f.Add(sse[:len(sse)/2], uint16(100))
	f.Add([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\nevent: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"x\"}}\n\n"), uint16(3))
	f.Add([]byte("data: {\r\n\r\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"refusal\"},\"usage\":{\"output_tokens\":5}}\n\n"), uint16(1))
	f.Fuzz(func(t *testing.T, hub []byte, cut uint16) {
		var whole, parts bytes.Buffer
		w := Kind().Server.Stream(&whole)
		_, errWhole := w.Write(hub)
		_ = w.Close()
		at := int(cut) % (len(hub) + 1)
		p := Kind().Server.Stream(&parts)
		_, err1 := p.Write(hub[:at])
		_, err2 := p.Write(hub[at:])
		_ = p.Close()
		if (errWhole == nil) != (err1 == nil && err2 == nil) {
			t.Fatalf("errors differ: %v / %v %v", errWhole, err1, err2)
		}
		if !bytes.Equal(whole.Bytes(), parts.Bytes()) {
			t.Fatalf("messages depend on the cut at %d", at)
		}
		ev := replyFor(t, plainHub, nova).Stream(bytes.NewReader(whole.Bytes()))
		for i := 0; ; i++ {
			if i > whole.Len()+2 {
				t.Fatal("Next never ends")
			}
			_, err := ev.Next()
			if err == nil {
				continue
			}
			if err != io.EOF && !errors.Is(err, translate.ErrTruncated) && !errors.Is(err, translate.ErrResponse) && !errors.Is(err, translate.ErrStreamFailed) {
				t.Fatalf("end %v", err)
			}
			break
		}
	})
}
