package protocol

import "testing"

// A Responses API stream ends with one of its final events, not [DONE];
// response.failed and error events are the provider's errors; its head
// is the events before anything is generated.
func TestResponsesStream(t *testing.T) {
	ev := func(typ, rest string) string {
		return "event: " + typ + "\ndata: {\"type\":\"" + typ + "\"" + rest + "}\n\n"
	}
	head := ev("response.created", `,"response":{}`) + ev("response.in_progress", "") +
		ev("response.output_item.added", "") + ev("response.content_part.added", "")
	delta := ev("response.output_text.delta", `,"delta":" hi"`)
	for _, c := range []struct {
		name, stream, want string
	}{
		{"completed", head + delta + ev("response.completed", `,"response":{"usage":{"output_tokens":1}}`), StreamOK},
		{"incomplete", head + delta + ev("response.incomplete", ""), StreamOK},
		{"no event lines", "data: {\"type\":\"response.output_text.delta\"}\n\ndata: {\"type\":\"response.completed\"}\n\n", StreamOK},
		{"failed", head + ev("response.failed", ""), StreamErrorEvent},
		{"error", head + ev("error", `,"message":"x"`), StreamErrorEvent},
		{"cut", head + delta, StreamUnterminated},
		{"[DONE] is not its end", head + delta + "data: [DONE]\n\n", StreamUnterminated},
		{"malformed", head + "event: response.output_text.delta\ndata: {\"type\n\n", StreamMalformed},
	} {
		check := NewStreamCheckFor(Responses, OpenAI)
		check.Feed([]byte(c.stream))
		if got := check.End(); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}

	if n, token := StreamHeadFor(Responses, OpenAI, []byte(head+delta)); n != len(head) || !token {
		t.Errorf("head %d (want %d), token %v", n, len(head), token)
	}
	if _, token := StreamHeadFor(Responses, OpenAI, []byte(head)); token {
		t.Error("the head alone was taken for a token")
	}
	var u StreamUsage
	u.Write([]byte(head + delta + delta))
	if n, found := u.Tokens(); n != 2 || found {
		t.Errorf("deltas counted %d (from usage %v), want 2", n, found)
	}
}

// A Responses API stream's facts hold one past its highest
// sequence_number, whatever the key order, so that an event Sluice adds
// (its own error event, ResponsesStreamErrorEvent) comes next in order.
func TestResponsesNextSeq(t *testing.T) {
	c := NewStreamCheckFor(Responses, OpenAI)
	c.Feed([]byte("event: response.created\ndata: {\"sequence_number\":0,\"type\":\"response.created\",\"response\":{\"id\":\"r\"}}\n\n" +
		"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"hi\",\ndata: \"sequence_number\" : 7}\n\n" +
		": a comment\n\n"))
	if got := c.Facts().NextSeq; got != 8 {
		t.Errorf("NextSeq %d, want 8", got)
	}
	ev := ResponsesStreamErrorEvent(Upstream, "broke", c.Facts().NextSeq)
	if want := "event: error\ndata: {\"type\":\"error\",\"code\":\"upstream_error\",\"message\":\"broke\",\"param\":null,\"sequence_number\":8}\n\n"; string(ev) != want {
		t.Errorf("error event %q, want %q", ev, want)
	}
}
