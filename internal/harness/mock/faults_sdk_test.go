package mock_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/sluice-gw/sluice/internal/harness/mock"
)

// The official SDKs read the mock's fault answers as they read the
// providers': OpenAI's error code and Anthropic's error type come out of
// their error values, as a client or gateway branching on them sees them.
func TestFaultErrorsParseInOfficialSDKs(t *testing.T) {
	s := mock.New(mock.Config{Seed: 1, OutputTokens: mock.TokenRange{Min: 3}})
	url, stop, err := s.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	oa := openai.NewClient(option.WithBaseURL(url+"/v1"), option.WithAPIKey("k"), option.WithMaxRetries(0))
	an := anthropic.NewClient(aoption.WithBaseURL(url), aoption.WithAPIKey("k"), aoption.WithMaxRetries(0))
	ctx := context.Background()
	for _, c := range []struct {
		header, value     string
		oaCode, oaType    string
		anType, anMessage string
	}{
		{mock.HeaderFail, "context_length", "context_length_exceeded", "invalid_request_error", "invalid_request_error", "prompt is too long: "},
		{mock.HeaderContextWindow, "1", "context_length_exceeded", "invalid_request_error", "invalid_request_error", "prompt is too long: "},
		{mock.HeaderFail, "content_filter", "content_filter", "", "invalid_request_error", "Output blocked by content filtering policy"},
	} {
		_, err := oa.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model:    "m",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello there, how are you")},
		}, option.WithHeader(c.header, c.value))
		var oe *openai.Error
		if !errors.As(err, &oe) || oe.StatusCode != 400 || oe.Code != c.oaCode || oe.Type != c.oaType {
			t.Errorf("openai SDK, %s %s: %v; want 400 code %q type %q", c.header, c.value, err, c.oaCode, c.oaType)
		}
		_, err = an.Messages.New(ctx, anthropic.MessageNewParams{
			Model:     "m",
			MaxTokens: 10,
			Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello there, how are you"))},
		}, aoption.WithHeader(c.header, c.value))
		var ae *anthropic.Error
		if !errors.As(err, &ae) || ae.StatusCode != 400 || string(ae.Type()) != c.anType || !strings.HasPrefix(ae.Message, c.anMessage) {
			t.Errorf("anthropic SDK, %s %s: %v; want 400 type %q message %q...", c.header, c.value, err, c.anType, c.anMessage)
		}
	}
}
