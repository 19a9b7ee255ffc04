package protocol

import (
	"encoding/json"
	"fmt"
	"testing"
)

// FuzzOutputTokens: usage extraction from a whole answer, either
// dialect. On any bytes: valid is exactly json.Valid, a count is found
// only within [0, MaxUsage], and a finish reason is short. On an answer
// built around the fuzzed count, reason and extra field: the count and
// the reason read back as the provider wrote them.
func FuzzOutputTokens(f *testing.F) {
	f.Add([]byte(`{"choices":[{"finish_reason":"stop"}],"usage":{"completion_tokens":3}}`), int64(12), "stop", false)
	f.Add([]byte(`{"type":"message","stop_reason":"end_turn","usage":{"output_tokens":7}}`), int64(0), "end_turn", true)
	f.Add([]byte(`{"usage":{"completion_tokens":1e30}}`), int64(MaxUsage+1), "", false)
	f.Add([]byte(`{"usage":"none"}`), int64(-1), "tool_calls", true)
	f.Add([]byte(`[1,2]`), int64(5), "a_reason_far_longer_than_any_provider_sends", false)
	f.Add([]byte(`{"usage":{"completion_tokens":5}`), int64(1), "\xff", true)
	f.Fuzz(func(t *testing.T, body []byte, n int64, reason string, anthropic bool) {
		got, found, valid, finish := OutputTokens(body)
		if valid != json.Valid(body) {
			t.Fatalf("valid = %v for %q", valid, body)
		}
		if got < 0 || got > MaxUsage || !found && got != 0 || len(finish) > maxReason {
			t.Fatalf("%q: count %d (found %v), finish %q", body, got, found, finish)
		}

		extra, _ := json.Marshal(string(body))
		quoted, _ := json.Marshal(reason)
		var said string // the reason as a JSON reader sees it
		_ = json.Unmarshal(quoted, &said)
		answer := fmt.Sprintf(`{"id":%s,"choices":[{"finish_reason":%s}],"usage":{"prompt_tokens":9,"completion_tokens":%d}}`, extra, quoted, n)
		if anthropic {
			answer = fmt.Sprintf(`{"type":"message","id":%s,"stop_reason":%s,"usage":{"input_tokens":9,"output_tokens":%d}}`, extra, quoted, n)
		}
		got, found, valid, finish = OutputTokens([]byte(answer))
		inRange := n >= 0 && n <= MaxUsage
		if !valid || found != inRange || inRange && got != int(n) {
			t.Fatalf("%s: count %d (found %v, valid %v), want %d", answer, got, found, valid, n)
		}
		if want := said; len(want) > maxReason && finish != "" || len(want) <= maxReason && finish != want {
			t.Fatalf("%s: finish %q, want %q", answer, finish, want)
		}
	})
}
