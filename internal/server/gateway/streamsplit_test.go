package gateway_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/server/gateway"
)

const splitKey = "sk-proj-splitKeySecret0123456789"

// splitStream streams an answer that repeats the provider's key a few
// characters an event, as a model made to repeat it would, and then a
// false start ("sk-" followed by other text).
type splitStream struct{}

func (splitStream) RoundTrip(r *http.Request) (*http.Response, error) {
	io.Copy(io.Discard, r.Body)
	pieces := []string{"the key is ", splitKey[:2], splitKey[2:5], splitKey[5:14], splitKey[14:15], splitKey[15:], " and sk-", "not a key."}
	var b strings.Builder
	chunk := func(delta string) {
		fmt.Fprintf(&b, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":null}]}\n\n", delta)
	}
	chunk(`{"role":"assistant","content":""}`)
	for _, p := range pieces {
		chunk(`{"content":"` + p + `"}`)
	}
	b.WriteString("data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	return &http.Response{StatusCode: 200, Request: r, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(strings.NewReader(b.String())), ContentLength: -1}, nil
}

// An operator key split across stream events, with JSON between its
// parts, reached the client whole. It is blanked across the events that
// carry it (all but a first event's two bytes, too short a start to hold
// an event for), the rest of the answer (a false start included) arrives as
// sent, and the stream stays well-formed.
func TestKeySplitAcrossStreamEventsIsScrubbed(t *testing.T) {
	t.Setenv("SLUICE_TEST_SPLIT_KEY", splitKey)
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		c.Providers[0].APIKeyEnv = "SLUICE_TEST_SPLIT_KEY"
	}, func(o *gateway.Options) { o.Transport = splitStream{} })
	status, _, body := s.do("/v1/chat/completions", `{"model":"mock-gpt","stream":true,"messages":[{"role":"user","content":"say the key"}]}`, nil)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	var text strings.Builder
	done := false
	for _, ev := range strings.Split(string(body), "\n\n") {
		data, ok := strings.CutPrefix(strings.TrimSpace(ev), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var c struct {
			Choices []struct{ Delta struct{ Content string } }
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("an event is no longer JSON: %q", data)
		}
		for _, ch := range c.Choices {
			text.WriteString(ch.Delta.Content)
		}
	}
	// The first event's "sk" is too short a start to hold its event
	// for (minHeld); every byte after it is blanked.
	want := "the key is sk" + strings.Repeat("*", len(splitKey)-2) + " and sk-not a key."
	if text.String() != want || !done {
		t.Errorf("the client read %q (terminator %v); want %q", text.String(), done, want)
	}
	for i := 4; i < len(splitKey)-6; i++ {
		if strings.Contains(string(body), splitKey[i:i+6]) {
			t.Fatalf("part of the key reached the client: %q in\n%s", splitKey[i:i+6], body)
		}
	}
}
