package chaos

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// The client's judgement is what every row rests on: each way an answer
// can end is told apart, and only the well-formed ones pass.
func TestJudgeStream(t *testing.T) {
	const (
		oaiOK      = "data: {\"id\":\"chatcmpl-1\",\"choices\":[]}\n\ndata: [DONE]\n\n"
		oaiError   = "data: {\"id\":\"chatcmpl-1\",\"choices\":[]}\n\ndata: {\"error\":{\"type\":\"server_error\",\"message\":\"x\"}}\n\n"
		antOK      = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\"}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
		antError   = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\"}}\n\nevent: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"x\"}}\n\n"
		unfinished = "data: {\"id\":\"chatcmpl-1\",\"choices\":[]}\n\n"
		garbage    = "data: {\"id\":\"chatcmpl-1\",\"cho\n\n"
	)
	for _, tc := range []struct {
		name    string
		dialect protocol.Dialect
		body    io.Reader
		want    verdict
		id      string
	}{
		{"openai whole", protocol.OpenAI, strings.NewReader(oaiOK), vOK, "chatcmpl-1"},
		{"openai error event", protocol.OpenAI, strings.NewReader(oaiError), vError, ""},
		{"anthropic whole", protocol.Anthropic, strings.NewReader(antOK), vOK, "msg_1"},
		{"anthropic error event", protocol.Anthropic, strings.NewReader(antError), vError, ""},
		{"clean end without [DONE]", protocol.OpenAI, strings.NewReader(unfinished), vMalformed, ""},
		{"an event that is not JSON", protocol.OpenAI, strings.NewReader(garbage), vMalformed, ""},
		{"broken by the transport", protocol.OpenAI, io.MultiReader(strings.NewReader(unfinished), iotest.ErrReader(io.ErrUnexpectedEOF)), vCut, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := judgeStream(outcome{status: 200}, call{dialect: tc.dialect, stream: true}, tc.body)
			if o.verdict != tc.want || o.id != tc.id {
				t.Errorf("verdict %d id %q, want %d %q (%s)", o.verdict, o.id, tc.want, tc.id, o.detail)
			}
		})
	}
}

func TestJudgeError(t *testing.T) {
	oai := `{"error":{"type":"overloaded_error","message":"busy"}}`
	ant := `{"type":"error","error":{"type":"overloaded_error","message":"busy"}}`
	for _, tc := range []struct {
		name       string
		dialect    protocol.Dialect
		status     int
		retryAfter string
		body       string
		want       verdict
	}{
		{"openai shed", protocol.OpenAI, 503, "1", oai, vError},
		{"anthropic shed", protocol.Anthropic, 529, "1", ant, vError},
		{"shed without Retry-After", protocol.OpenAI, 503, "", oai, vMalformed},
		{"a 502 needs no Retry-After", protocol.OpenAI, 502, "", oai, vError},
		{"openai's shape on /v1/messages", protocol.Anthropic, 502, "", oai, vMalformed},
		{"not JSON", protocol.OpenAI, 502, "", "Bad Gateway", vMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := &http.Response{StatusCode: tc.status, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(tc.body))}
			if tc.retryAfter != "" {
				resp.Header.Set("Retry-After", tc.retryAfter)
			}
			if o := judgeError(outcome{status: tc.status}, tc.dialect, resp); o.verdict != tc.want {
				t.Errorf("verdict %d, want %d (%s)", o.verdict, tc.want, o.detail)
			}
		})
	}
}

func TestDoubleAnswers(t *testing.T) {
	var tl tally
	k := func(key string) call { return call{idemKey: key} }
	tl.record(k("a"), outcome{verdict: vOK, id: "1"})
	tl.record(k("a"), outcome{verdict: vOK, id: "1"}) // joined: the same generation
	tl.record(k("b"), outcome{verdict: vOK, id: "2"})
	tl.record(k("b"), outcome{verdict: vError}) // refused: not an answer
	tl.record(k("c"), outcome{verdict: vOK, id: "3"})
	tl.record(k("c"), outcome{verdict: vOK, id: "4"}) // generated twice
	if n := tl.doubleAnswers(); n != 1 {
		t.Errorf("%d keys answered twice, want 1 (c)", n)
	}
}
