package mock_test

import (
	"context"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/sluice-gw/sluice/internal/harness/mock"
)

// The official SDKs' streaming clients read the mock under the legal
// encodings and get the compact stream's text, finish and usage. Where an
// SDK fails a legal form, the test says so and keeps it as a finding:
// both read lines with bufio.Scanner, which ends a line at LF only, so a
// lone-CR stream is one line to them; and Anthropic's skips every event
// without an event: line, so a data-only stream reads as empty. Both
// misread silently: no error, an empty answer.
func TestSDKStreamsUnderEncodings(t *testing.T) {
	s := mock.New(mock.Config{Seed: 1, OutputTokens: mock.TokenRange{Min: 9}})
	url, stop, err := s.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	oa := openai.NewClient(option.WithBaseURL(url+"/v1"), option.WithAPIKey("k"), option.WithMaxRetries(0))
	an := anthropic.NewClient(aoption.WithBaseURL(url), aoption.WithAPIKey("k"), aoption.WithMaxRetries(0))
	ctx := context.Background()

	type answer struct {
		text, finish string
		usage        int64
		err          string
	}
	openAI := func(enc string) answer {
		st := oa.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
			Model:         "m",
			Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("tell me a story")},
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
		}, option.WithHeader(mock.HeaderEncoding, enc), option.WithHeader(mock.HeaderWords, "prompt"))
		var acc openai.ChatCompletionAccumulator
		for st.Next() {
			acc.AddChunk(st.Current())
		}
		a := answer{usage: acc.Usage.CompletionTokens}
		if len(acc.Choices) > 0 {
			a.text, a.finish = acc.Choices[0].Message.Content, acc.Choices[0].FinishReason
		}
		if st.Err() != nil {
			a.err = st.Err().Error()
		}
		return a
	}
	anthropicSDK := func(enc string) answer {
		st := an.Messages.NewStreaming(ctx, anthropic.MessageNewParams{
			Model:     "m",
			MaxTokens: 100,
			Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("tell me a story"))},
		}, aoption.WithHeader(mock.HeaderEncoding, enc), aoption.WithHeader(mock.HeaderWords, "prompt"))
		var msg anthropic.Message
		var a answer
		for st.Next() {
			if err := msg.Accumulate(st.Current()); err != nil {
				a.err = err.Error()
			}
		}
		for _, b := range msg.Content {
			a.text += b.Text
		}
		a.finish, a.usage = string(msg.StopReason), msg.Usage.OutputTokens
		if st.Err() != nil {
			a.err = st.Err().Error()
		}
		return a
	}

	for _, c := range []struct {
		sdk       string
		read      func(string) answer
		encodings []string
		rejects   map[string]bool // legal forms the SDK misreads: findings
	}{
		{"openai-go", openAI,
			[]string{"spaced", "pydefault", "pretty", "crlf", "shuffle", "sortkeys", "escaped", "slashes", "comments", "nospace", "idretry", "oaievent", "nodone", "usagelast", "pydefault+crlf+comments", "cr"},
			map[string]bool{"cr": true}},
		{"anthropic-sdk-go", anthropicSDK,
			[]string{"spaced", "pydefault", "pretty", "crlf", "shuffle", "sortkeys", "escaped", "slashes", "comments", "nospace", "idretry", "noping", "nodone", "pretty+crlf+comments", "cr", "noevent"},
			map[string]bool{"cr": true, "noevent": true}},
	} {
		want := c.read("compact")
		if len(strings.Fields(want.text)) != 9 || want.finish == "" || want.usage != 9 || want.err != "" {
			t.Fatalf("%s compact: %+v", c.sdk, want)
		}
		for _, enc := range c.encodings {
			got := c.read(enc)
			switch {
			case c.rejects[enc] && got == want:
				t.Errorf("%s now reads %s: drop it from the findings", c.sdk, enc)
			case c.rejects[enc]:
				t.Logf("finding: %s misreads the legal %s form: %+v", c.sdk, enc, got)
			case got != want:
				t.Errorf("%s %s:\n got %+v\nwant %+v", c.sdk, enc, got, want)
			}
		}
	}
}
