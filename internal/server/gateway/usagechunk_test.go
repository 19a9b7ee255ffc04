package gateway

import "testing"

// Only the usage-only chunk goes, whatever the line endings, and every
// other event stays byte for byte.
func TestDropUsageChunks(t *testing.T) {
	usage := `data: {"id":"x","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":9}}`
	for _, nl := range []string{"\n", "\r\n"} {
		tail := `data: {"choices":[{"delta":{},"finish_reason":"stop"}],"usage":null}` + nl + nl
		in := tail + usage + nl + nl + "data: [DONE]" + nl + nl
		want := tail + "data: [DONE]" + nl + nl
		if got := string(dropUsageChunks([]byte(in))); got != want {
			t.Errorf("%q:\n got %q\nwant %q", nl, got, want)
		}
		keep := `data: {"choices":[],"note":"no usage"}` + nl + nl
		if got := string(dropUsageChunks([]byte(keep))); got != keep {
			t.Errorf("an event without usage was changed: %q", got)
		}
	}
}
