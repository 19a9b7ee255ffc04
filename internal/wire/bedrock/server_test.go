package bedrock

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"testing"

	"github.com/sluice-gw/sluice/internal/wire/translate"
)

func TestMatch(t *testing.T) {
	for path, want := range map[string]struct {
		model      string
		stream, ok bool
	}{
		"/model/amazon.nova-pro-v1%3A0/converse":                       {"amazon.nova-pro-v1:0", false, true},
		"/model/amazon.nova-pro-v1:0/converse-stream":                  {"amazon.nova-pro-v1:0", true, true},
		"/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Aip%2Fx/converse": {"arn:aws:bedrock:us-east-1:1:ip/x", false, true},
		"/model/x/invoke":     {},
		"/model//converse":    {},
		"/v1/messages":        {},
		"/model/%zz/converse": {},
	} {
		m, s, ok := Kind().Server.Match(path, "")
		if m != want.model || s != want.stream || ok != want.ok {
			t.Errorf("%s: %q %v %v", path, m, s, ok)
		}
	}
}

// A Converse request through the Codec and back through the Server
// keeps what the hub said.
func TestHubRequestInvertsTheCodec(t *testing.T) {
	hub := `{"model":"` + claude + `","max_tokens":300,"stream":true,"temperature":0.5,"top_p":0.9,"top_k":40,"stop_sequences":["END"],"system":"Be brief.",
	"messages":[
	 {"role":"user","content":[{"type":"text","text":"What is in this?"},{"type":"image","source":{"type":"base64","media_type":"image/webp","data":"UklGRg=="}}]},
	 {"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"sig"},{"type":"tool_use","id":"tu_1","name":"look","input":{"q":"x"}}]},
	 {"role":"user","content":[{"type":"tool_result","tool_use_id":"tu_1","content":[{"type":"text","text":"a cat"}],"is_error":true}]}],
	"tools":[{"name":"look","description":"Look.","input_schema":{"type":"object"}}],
	"tool_choice":{"type":"tool","name":"look"},
	"thinking":{"type":"enabled","budget_tokens":1024}}`
	call, err := Kind().Codec.Request([]byte(hub), claude, translate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	model, stream, ok := Kind().Server.Match(call.Path, "")
	if !ok || !stream || model != claude {
		t.Fatalf("Match %q %v %v", model, stream, ok)
	}
	back, err := Kind().Server.HubRequest(model, stream, call.Body)
	if err != nil {
		t.Fatal(err)
	}
	var got, want any
	_ = json.Unmarshal(back, &got)
	_ = json.Unmarshal([]byte(hub), &want)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("back\n%s", back)
	}
}

func TestHubRequestRefusesWhatItCannotRead(t *testing.T) {
	for _, body := range []string{`{`, `{"messages":[]}`, `{"messages":[{"role":"system","content":[{"text":"x"}]}]}`, `{"messages":[{"role":"user","content":[{"video":{}}]}]}`, `{"messages":[{"role":"user","content":[{"image":{"format":"bmp","source":{"bytes":""}}}]}]}`} {
		if _, err := Kind().Server.HubRequest("m", false, []byte(body)); err == nil {
			t.Errorf("%s: accepted", body)
		}
	}
}

// A hub answer through the Server and back through the Codec's Reply.
func TestAnswerInvertsTheReply(t *testing.T) {
	hub := `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"text","text":"hi"},{"type":"tool_use","id":"tu","name":"f","input":{"a":1}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":6,"cache_read_input_tokens":7,"cache_creation_input_tokens":8}}`
	cvBody, err := Kind().Server.Answer([]byte(hub))
	if err != nil {
		t.Fatal(err)
	}
	var cvv struct {
		Usage cvUsage
	}
	_ = json.Unmarshal(cvBody, &cvv)
	if cvv.Usage.TotalTokens != 26 {
		t.Errorf("totalTokens %d", cvv.Usage.TotalTokens)
	}
	back, err := replyFor(t, plainHub, "m").Answer(cvBody)
	if err != nil {
		t.Fatal(err)
	}
	var got, want map[string]any
	_ = json.Unmarshal(back, &got)
	_ = json.Unmarshal([]byte(hub), &want)
	delete(got, "id")
	delete(want, "id")
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("back %s", back)
	}
	if _, err := Kind().Server.Answer([]byte(`{"content":[{"type":"server_tool_use"}]}`)); err == nil {
		t.Error("a block with no Converse form was accepted")
	}
}

// The Server's stream writer writes each Converse message as soon as its
// hub event is whole, and nothing for a partial one.
func TestStreamWriterWritesAsEventsComplete(t *testing.T) {
	var out bytes.Buffer
	w := Kind().Server.Stream(&out)
	start := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":9}}}\n\n"
	if _, err := w.Write([]byte(start[:20])); err != nil || out.Len() != 0 {
		t.Fatalf("a partial event wrote %d bytes (%v)", out.Len(), err)
	}
	if _, err := w.Write([]byte(start[20:])); err != nil || out.Len() == 0 {
		t.Fatalf("a whole event wrote nothing (%v)", err)
	}
	n := out.Len()
	// ping and a text block's start have no Converse message.
	if _, err := w.Write([]byte("event: ping\ndata: {\"type\":\"ping\"}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")); err != nil || out.Len() != n {
		t.Fatalf("ping and a text start wrote %d bytes", out.Len()-n)
	}
	if _, err := w.Write([]byte("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\nevent: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"}")); err != nil {
		t.Fatal(err)
	}
	// The hub stream ends without message_delta's end: nothing more.
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	raw := bytes.Clone(out.Bytes())
	d := NewDecoder(bytes.NewReader(raw))
	var types []string
	for {
		m, err := d.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, m.Get(":event-type"))
	}
	if !reflect.DeepEqual(types, []string{"messageStart", "contentBlockDelta", "contentBlockStop"}) {
		t.Fatalf("messages %v", types)
	}
	// And the Codec reads that as truncated.
	sse, err := drain(t, replyFor(t, plainHub, nova), raw)
	if !errors.Is(err, translate.ErrTruncated) || !bytes.Contains(sse, []byte(`"text":"hi"`)) {
		t.Fatalf("%v", err)
	}
}

// A malformed hub event (the mock's injected fault) reaches the client
// as a malformed Converse event, which the Codec refuses as such.
func TestStreamWriterKeepsAMalformedEventMalformed(t *testing.T) {
	var out bytes.Buffer
	w := Kind().Server.Stream(&out)
	if _, err := w.Write([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_bl\n\n")); err != nil {
		t.Fatal(err)
	}
	_, err := drain(t, replyFor(t, plainHub, nova), out.Bytes())
	if !errors.Is(err, translate.ErrResponse) {
		t.Fatalf("%v", err)
	}
}
