package mock

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"google.golang.org/genai"
)

// Google's Gen AI SDK, unchanged, as the client of the mock's Gemini
// API: a whole answer, a stream, and a fault (X-Mock-Fail: 429) that
// reaches the SDK as its typed APIError, RESOURCE_EXHAUSTED with 429.
// This is what every Gemini-kind test and scenario talks to.
func TestGeminiSDKAgainstTheMock(t *testing.T) {
	_, url := startMock(t, instant())
	ctx := context.Background()
	c, err := genai.NewClient(ctx, &genai.ClientConfig{APIKey: "mock-key", Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: url + "/"}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Models.GenerateContent(ctx, "gemini-2.5-flash", genai.Text("hello"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Text() == "" || r.UsageMetadata == nil || r.UsageMetadata.CandidatesTokenCount != 5 || r.Candidates[0].FinishReason != genai.FinishReasonStop {
		t.Errorf("whole answer: text %q, usage %+v, finish %q", r.Text(), r.UsageMetadata, r.Candidates[0].FinishReason)
	}
	var text strings.Builder
	chunks := 0
	for r, err := range c.Models.GenerateContentStream(ctx, "gemini-2.5-flash", genai.Text("hello"), nil) {
		if err != nil {
			t.Fatal(err)
		}
		chunks++
		text.WriteString(r.Text())
	}
	if chunks < 2 || text.Len() == 0 {
		t.Errorf("stream: %d chunks, text %q", chunks, text.String())
	}
	_, err = c.Models.GenerateContent(ctx, "gemini-2.5-flash", genai.Text("hello"),
		&genai.GenerateContentConfig{HTTPOptions: &genai.HTTPOptions{Headers: http.Header{"X-Mock-Fail": {"429"}}}})
	var apiErr genai.APIError
	if !errors.As(err, &apiErr) || apiErr.Code != 429 || apiErr.Status != "RESOURCE_EXHAUSTED" {
		t.Errorf("X-Mock-Fail 429: want genai.APIError 429 RESOURCE_EXHAUSTED, got %#v", err)
	}
}

// The AWS SDK's bedrockruntime, unchanged, as the client of the mock's
// Converse API: Converse, ConverseStream read through the SDK's own
// event-stream decoder, and a fault that reaches it as its typed
// ThrottlingException.
func TestBedrockSDKAgainstTheMock(t *testing.T) {
	_, url := startMock(t, instant())
	ctx := context.Background()
	c := bedrockruntime.New(bedrockruntime.Options{Region: "us-east-1", BaseEndpoint: aws.String(url),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDMOCK", "mock-secret", "")})
	model := aws.String("anthropic.claude-sonnet-4-5-20250929-v1:0")
	msgs := []types.Message{{Role: types.ConversationRoleUser, Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: "hello"}}}}
	out, err := c.Converse(ctx, &bedrockruntime.ConverseInput{ModelId: model, Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	msg, ok := out.Output.(*types.ConverseOutputMemberMessage)
	if !ok || len(msg.Value.Content) == 0 || out.StopReason != types.StopReasonEndTurn || aws.ToInt32(out.Usage.OutputTokens) != 5 {
		t.Errorf("Converse: %#v, stop %q, usage %+v", out.Output, out.StopReason, out.Usage)
	}
	st, err := c.ConverseStream(ctx, &bedrockruntime.ConverseStreamInput{ModelId: model, Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	var stop types.StopReason
	var usage *types.TokenUsage
	for ev := range st.GetStream().Events() {
		switch v := ev.(type) {
		case *types.ConverseStreamOutputMemberContentBlockDelta:
			if d, ok := v.Value.Delta.(*types.ContentBlockDeltaMemberText); ok {
				text.WriteString(d.Value)
			}
		case *types.ConverseStreamOutputMemberMessageStop:
			stop = v.Value.StopReason
		case *types.ConverseStreamOutputMemberMetadata:
			usage = v.Value.Usage
		}
	}
	if err := st.GetStream().Err(); err != nil {
		t.Fatal(err)
	}
	if text.Len() == 0 || stop != types.StopReasonEndTurn || usage == nil || aws.ToInt32(usage.OutputTokens) != 5 {
		t.Errorf("ConverseStream: text %q, stop %q, usage %+v", text.String(), stop, usage)
	}
	_, err = c.Converse(ctx, &bedrockruntime.ConverseInput{ModelId: model, Messages: msgs}, func(o *bedrockruntime.Options) {
		o.RetryMaxAttempts = 1
		o.APIOptions = append(o.APIOptions, smithyhttp.AddHeaderValue("X-Mock-Fail", "429"))
	})
	var throttled *types.ThrottlingException
	if !errors.As(err, &throttled) {
		t.Errorf("X-Mock-Fail 429: want *types.ThrottlingException, got %#v", err)
	}
}
