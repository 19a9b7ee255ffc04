package gateway_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
)

// attempts counts the HTTP requests an SDK makes.
type attempts struct {
	n  atomic.Int64
	rt http.RoundTripper
}

func (a *attempts) RoundTrip(r *http.Request) (*http.Response, error) {
	a.n.Add(1)
	return a.rt.RoundTrip(r)
}

// The official SDKs, unchanged and with their default retries (two),
// see a spend refusal as their typed error with status 429, and make no
// retry: the refusal says x-should-retry: false, and a limit that resets
// at midnight is not worth retrying in a second. A retry storm would
// show as more attempts than calls.
func TestSpendRefusalReachesTheSDKsTyped(t *testing.T) {
	s := newStack(t, mock.Config{}, spendConfig(t, config.SpendLimits{Daily: dollars(0.01)}), memoryStore)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	oa := &attempts{rt: http.DefaultTransport}
	oc := openai.NewClient(option.WithBaseURL(s.url+"/v1/"), option.WithAPIKey("sk-k"), option.WithHTTPClient(&http.Client{Transport: oa}))
	chat := openai.ChatCompletionNewParams{Model: "mock-gpt", MaxTokens: openai.Int(5),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}
	if _, err := oc.Chat.Completions.New(ctx, chat); err != nil {
		t.Fatalf("the first request, under the limit: %v", err)
	}
	_, err := oc.Chat.Completions.New(ctx, chat)
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != 429 || oe.Code != "spend_limit_exceeded" || oe.Type != "insufficient_quota" {
		t.Fatalf("openai-go past the limit: %T %v; want *openai.Error 429 insufficient_quota/spend_limit_exceeded", err, err)
	}
	if n := oa.n.Load(); n != 2 {
		t.Errorf("openai-go made %d HTTP requests for 2 calls; the refusal was retried", n)
	}

	an := &attempts{rt: http.DefaultTransport}
	ac := anthropic.NewClient(aoption.WithBaseURL(s.url), aoption.WithAPIKey("sk-k"), aoption.WithHTTPClient(&http.Client{Transport: an}))
	_, err = ac.Messages.New(ctx, anthropic.MessageNewParams{Model: "mock-claude", MaxTokens: 5,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 429 {
		t.Fatalf("anthropic-sdk-go past the limit: %T %v; want *anthropic.Error 429", err, err)
	}
	if n := an.n.Load(); n != 1 {
		t.Errorf("anthropic-sdk-go made %d HTTP requests for 1 call; the refusal was retried", n)
	}
}
