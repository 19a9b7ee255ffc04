package protocol

import "testing"

func TestStreamHead(t *testing.T) {
	const (
		role    = "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n"
		token   = "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null}]}\n\n"
		toolTok = "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"f\"}}]}}]}\n\n"
		reason  = "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"hm\"}}]}\n\n"
		finish  = "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
		filter  = "data: {\"choices\":[],\"prompt_filter_results\":[{\"prompt_index\":0}]}\n\n"
		text    = "data: {\"choices\":[{\"index\":0,\"text\":\"Hi\",\"finish_reason\":null}]}\n\n"
		done    = "data: [DONE]\n\n"

		msgStart = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"content\":[],\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n"
		blkStart = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
		ping     = "event: ping\ndata: {\"type\": \"ping\"}\n\n"
		delta    = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n"
		anError  = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}\n\n"
	)
	for _, c := range []struct {
		name string
		d    Dialect
		buf  string
		want bool
	}{
		{"role chunk alone", OpenAI, role, false},
		{"role chunk, then a token", OpenAI, role + token, true},
		{"a token first", OpenAI, token, true},
		{"a token not yet complete", OpenAI, role + token[:len(token)-1], false},
		{"CRLF lines", OpenAI, "data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\r\n\r\n", true},
		{"keep-alive comment", OpenAI, ": keep-alive\n\n", false},
		{"a tool call", OpenAI, role + toolTok, true},
		{"reasoning", OpenAI, role + reason, true},
		{"an empty answer's finish", OpenAI, role + finish, true},
		{"content filter results", OpenAI, filter, false},
		{"legacy completions text", OpenAI, text, true},
		{"done", OpenAI, done, true},
		// Data that is not JSON is past the head: the stream check fails it.
		{"a cut chunk is the client's to see", OpenAI, "data: {\"choices\":[{\"delta\":{\"cont\n\n", true},
		{"not a chunk: the client should see it", OpenAI, "data: oops\n\n", true},
		{"anthropic head", Anthropic, msgStart + blkStart + ping, false},
		{"anthropic first delta", Anthropic, msgStart + blkStart + ping + delta, true},
		{"anthropic error", Anthropic, msgStart + anError, true},
		{"anthropic without event lines", Anthropic, "data: {\"type\":\"message_start\"}\n\ndata: {\"type\":\"content_block_delta\"}\n\n", true},
		{"empty", OpenAI, "", false},
		{"null tool_calls and error on a role chunk", OpenAI, "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":null,\"function_call\":null}}],\"error\":null}\n\n", false},
		{"usage on every chunk (continuous_usage_stats)", OpenAI, "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":0}}\n\n", false},
		{"the second choice has the token", OpenAI, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\"}},{\"index\":1,\"delta\":{\"content\":\"Hi\"}}]}\n\n", true},
		{"an error object", OpenAI, "data: {\"error\":{\"message\":\"overloaded\"}}\n\n", true},
	} {
		head, got := StreamHead(c.d, []byte(c.buf))
		if got != c.want {
			t.Errorf("%s: token = %v, want %v", c.name, got, c.want)
		}
		// Resuming at head finds the same answer.
		if _, again := StreamHead(c.d, []byte(c.buf[head:])); again != got {
			t.Errorf("%s: resuming at %d gives %v", c.name, head, again)
		}
	}
}

func TestStreamHeadLength(t *testing.T) {
	head := "event: message_start\ndata: {\"type\":\"message_start\"}\n\nevent: ping\ndata: {\"type\":\"ping\"}\n\n"
	n, token := StreamHead(Anthropic, []byte(head+"event: content_block_delta\ndata: {"))
	if token || n != len(head) {
		t.Fatalf("head %d token %v, want %d false", n, token, len(head))
	}
}

// Every stream's start is scanned: it must cost no allocation.
func TestStreamHeadAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector empties pools at random; .ci/run checks allocations without it")
	}
	openai := []byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n")
	anthropic := []byte("event: message_start\ndata: {\"type\":\"message_start\"}\n\nevent: ping\ndata: {\"type\":\"ping\"}\n\nevent: content_block_delta\ndata: {}\n\n")
	if n := testing.AllocsPerRun(100, func() {
		StreamHead(OpenAI, openai)
		StreamHead(Anthropic, anthropic)
	}); n != 0 {
		t.Errorf("StreamHead allocates %v times per stream start", n)
	}
}
