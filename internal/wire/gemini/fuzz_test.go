package gemini

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/internal/wire/native"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
	"github.com/sluice-gw/sluice/internal/wire/translate"
)

// cutReader returns its bytes in reads of the sizes cuts gives in turn.
type cutReader struct {
	b    []byte
	cuts []byte
	i    int
}

func (r *cutReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := len(r.b)
	if len(r.cuts) > 0 {
		n = int(r.cuts[r.i%len(r.cuts)]) + 1
		r.i++
	}
	n = min(n, len(p), len(r.b))
	copy(p, r.b[:n])
	r.b = r.b[n:]
	return n, nil
}

// lastOutput is the output count of the last chunk in a Gemini stream
// that carries usageMetadata, read independently of the codec.
func lastOutput(gm []byte) (int64, bool) {
	evs, _ := translate.ParseEvents(append(bytes.Clone(gm), "\n\n"...))
	var out int64
	found := false
	for _, ev := range evs {
		var c struct {
			UsageMetadata *struct {
				Candidates int64 `json:"candidatesTokenCount"`
				Thoughts   int64 `json:"thoughtsTokenCount"`
			} `json:"usageMetadata"`
		}
		if json.Unmarshal(ev.Data, &c) == nil && c.UsageMetadata != nil {
			out, found = addSat(max(c.UsageMetadata.Candidates, 0), max(c.UsageMetadata.Thoughts, 0)), true
		}
	}
	return out, found
}

// FuzzGeminiStream: any bytes, cut anywhere, give a well-formed hub
// stream that the gateway's checks and the OpenAI translation accept, or
// an error; the codec never holds more than MaxEvent bytes of an event;
// a stream that ends cleanly reports the last chunk's output tokens.
func FuzzGeminiStream(f *testing.F) {
	f.Add([]byte(gmStreamText), []byte{})
	f.Add([]byte(gmStreamText), []byte{0})
	f.Add([]byte(gmStreamText), []byte{3, 17, 0, 200})
	f.Add([]byte(serve(f, hubSSE)), []byte{5})
	f.Add([]byte("data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"f\",\"args\":{\"x\":[1,2]}}}]},\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":3,\"candidatesTokenCount\":4,\"thoughtsTokenCount\":5}}\n\n"), []byte{1})
	f.Add([]byte("data: {\"error\":{\"code\":429,\"message\":\"quota\",\"status\":\"RESOURCE_EXHAUSTED\"}}\r\n\r\n"), []byte{})
	f.Add([]byte("data: {\"promptFeedback\":{\"blockReason\":\"OTHER\"}}\n\n"), []byte{})
	f.Add([]byte(": comment\n\ndata: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\",\"thought\":true},{\"text\":\"b\"}]}}]}\r\n\r\ndata: {\"candidates\":[{\"finishReason\":\"MAX_TOKENS\"}]}"), []byte{2})
	f.Add([]byte("data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"b\"}]}}]}\n\n"), []byte{})
	f.Add([]byte("data: [1,2]\n\ndata: nope\n\n"), []byte{})
	f.Add([]byte("data: {\"candidates\":[{\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"candidatesTokenCount\":9223372036854775807,\"thoughtsTokenCount\":5}}\n\n"), []byte{})
	f.Add([]byte("data: {\"candidates\":[{\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"candidatesTokenCount\":123456789012}}\n\n"), []byte{})
	f.Fuzz(func(t *testing.T, gm, cuts []byte) {
		ev := Reply{Model: "m"}.Stream(&cutReader{b: gm, cuts: cuts}).(*events)
		var out []byte
		var err error
		for range len(gm) + 10 {
			var b []byte
			b, err = ev.Next()
			if len(ev.buf) > native.MaxEvent+1 {
				t.Fatalf("holds %d bytes", len(ev.buf))
			}
			out = append(out, b...)
			if err != nil {
				break
			}
		}
		if err == nil {
			t.Fatal("Next never ended")
		}
		if _, again := ev.Next(); again != err && !(errors.Is(err, translate.ErrResponse) && errors.Is(again, translate.ErrResponse)) {
			t.Fatalf("Next after the end = %v, was %v", again, err)
		}
		hubEvents(t, out) // whole events, JSON data, names matching types
		verdict, outTokens, _ := checkHub(t, out)
		switch {
		case err == io.EOF:
			if verdict != protocol.StreamOK || !bytes.HasSuffix(out, []byte("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")) {
				t.Fatalf("clean end, verdict %q:\n%s", verdict, out)
			}
			want, ok := lastOutput(gm)
			if !ok {
				break
			}
			evs := hubEvents(t, out)
			delta := evs[len(evs)-2]
			if got := delta["usage"].(map[string]any)["output_tokens"].(float64); got != float64(want) {
				t.Fatalf("message_delta says %v output tokens, the stream's last chunk %d", got, want)
			}
			if want <= protocol.MaxUsage && int64(outTokens) != want {
				t.Fatalf("the gateway reads %d output tokens, the stream's last chunk says %d", outTokens, want)
			}
		case errors.Is(err, translate.ErrStreamFailed):
			if verdict != protocol.StreamErrorEvent {
				t.Fatalf("error end, verdict %q", verdict)
			}
		case errors.Is(err, translate.ErrTruncated), errors.Is(err, translate.ErrResponse):
			if verdict == protocol.StreamOK || strings.Contains(string(out), "message_stop") {
				t.Fatalf("a failed stream (%v) looks whole:\n%s", err, out)
			}
		default:
			t.Fatalf("end = %v", err)
		}
	})
}

// FuzzGeminiRequest: any hub body gives a Gemini request that the mock's
// Server reads back (when it has contents), or a located *translate.Error
// (invalid, or untranslatable); never a panic.
func FuzzGeminiRequest(f *testing.F) {
	f.Add([]byte(`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"Hi"}]}`))
	f.Add([]byte(`{"model":"m","max_tokens":10,"stream":true,"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],"metadata":{"user_id":"u"},"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://e/x.png"}}]}]}`))
	f.Add([]byte(`{"max_tokens":1,"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"any"},"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"toolu_gemini_0","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_gemini_0","content":[{"type":"text","text":"r"}]}]}]}`))
	f.Add([]byte(`{"max_tokens":1,"output_config":{"format":{"type":"json_schema","schema":{"type":"object"}}},"thinking":{"type":"enabled","budget_tokens":100},"messages":[]}`))
	f.Add([]byte(`{"messages":[{"role":"user","content":[{"type":"text"}]}]}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"messages":null,"temperature":"hot"}`))
	f.Fuzz(func(t *testing.T, hub []byte) {
		call, err := Codec{}.Request(hub, "gemini-2.5-flash", translate.Options{})
		if err != nil {
			var te *translate.Error
			if !errors.As(err, &te) || (te.Kind != translate.ErrInvalid && te.Kind != translate.ErrUntranslatable) {
				t.Fatalf("error %v is not a located *translate.Error", err)
			}
			return
		}
		var body gmRequest
		if err := json.Unmarshal(call.Body, &body); err != nil {
			t.Fatalf("body is not JSON: %s", call.Body)
		}
		if !strings.HasPrefix(call.Path, "/models/gemini-2.5-flash:") || call.Reply == nil {
			t.Fatalf("call %+v", call)
		}
		if len(body.Contents) == 0 {
			return
		}
		for _, c := range body.Contents {
			if len(c.Parts) == 0 || (c.Role != "user" && c.Role != "model") {
				t.Fatalf("content %+v: Gemini refuses it", c)
			}
		}
		if _, err := (Server{}).HubRequest("gemini-2.5-flash", call.Stream, call.Body); err != nil {
			t.Fatalf("the mock cannot read %s: %v", call.Body, err)
		}
	})
}

// FuzzGeminiServerStream: the mock's Stream writes the same Gemini
// chunks however the hub's bytes are cut, each one "data: <JSON>" and a
// blank line, and the codec reads them as a well-formed hub stream.
func FuzzGeminiServerStream(f *testing.F) {
	f.Add([]byte(hubSSE), []byte{0})
	f.Add([]byte(hubSSE), []byte{7, 1, 30})
	f.Add([]byte(hubSSE[:len(hubSSE)/2]), []byte{2})
	f.Add([]byte("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"m\"}}\r\n\r\n"), []byte{})
	f.Add([]byte("data: {\"type\":\"content_block_start\",\"index\":3,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"n\",\"input\":{\"a\":1}}}\n\ndata: {\"type\":\"content_block_stop\",\"index\":3}\n\n"), []byte{1})
	f.Add([]byte("data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"\"}}\n\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"), []byte{})
	f.Fuzz(func(t *testing.T, hub, cuts []byte) {
		var whole, cut bytes.Buffer
		w := Server{}.Stream(&whole)
		w.Write(hub)
		w.Close()
		w = Server{}.Stream(&cut)
		for i, rest := 0, hub; len(rest) > 0; i++ {
			n := len(rest)
			if len(cuts) > 0 {
				n = min(n, int(cuts[i%len(cuts)])+1)
			}
			w.Write(rest[:n])
			rest = rest[n:]
		}
		w.Close()
		if !bytes.Equal(whole.Bytes(), cut.Bytes()) {
			t.Fatalf("cut hub bytes give other chunks:\n%q\n%q", whole.Bytes(), cut.Bytes())
		}
		for _, c := range strings.SplitAfter(whole.String(), "\r\n\r\n") {
			if c == "" {
				continue
			}
			data, ok := strings.CutPrefix(c, "data: ")
			if !ok || !strings.HasSuffix(data, "\r\n\r\n") || !json.Valid([]byte(strings.TrimSuffix(data, "\r\n\r\n"))) {
				t.Fatalf("chunk %q", c)
			}
		}
		got, err := hubStream(whole.String(), false)
		if err != io.EOF && !errors.Is(err, translate.ErrTruncated) && !errors.Is(err, translate.ErrStreamFailed) {
			t.Fatalf("the codec reads the mock's stream as %v", err)
		}
		checkHub(t, got)
	})
}
