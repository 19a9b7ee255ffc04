package gateway

import (
	"testing"

	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// Only the usage-only chunk goes, whatever the line endings and however
// its JSON is written, and every other event stays byte for byte.
func TestDropInjectedUsage(t *testing.T) {
	usages := []string{
		`data: {"id":"x","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":9}}`,
		`data: {"id": "x", "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 9}}`,
		`data: {"usage":{"completion_tokens":9},` + "\n" + `data: "choices" : [ ]}`,
	}
	for _, nl := range []string{"\n", "\r\n", "\r"} {
		for _, usage := range usages {
			tail := `data: {"choices":[{"delta":{},"finish_reason":"stop"}],"usage":null}` + nl + nl
			in := tail + usage + nl + nl + "data: [DONE]" + nl + nl
			want := tail + "data: [DONE]" + nl + nl
			if got := dropAll(t, in); got != want {
				t.Errorf("%q:\n got %q\nwant %q", nl, got, want)
			}
		}
		keep := `data: {"choices":[],"note":"no usage"}` + nl + nl + `data: {"choices":[{"delta":{"content":"\"choices\":[],\"usage\":{}"}}]}` + nl + nl
		if got := dropAll(t, keep); got != keep {
			t.Errorf("an event without usage was changed: %q", got)
		}
	}
}

// dropAll feeds in to an OpenAI check and drops the usage-only chunks
// its marks name.
func dropAll(t *testing.T, in string) string {
	t.Helper()
	c := protocol.NewStreamCheck(protocol.OpenAI)
	c.KeepMarks()
	if _, ok, _ := c.Feed([]byte(in)); !ok {
		t.Fatalf("%q: malformed", in)
	}
	c.End()
	return string(dropInjectedUsage([]byte(in), 0, c.Marks()))
}
