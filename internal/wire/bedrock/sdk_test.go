package bedrock

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
)

// AWS's own SDK, as a client of the Server: proof that Sluice's Converse
// answers, event streams and errors are what AWS's decoders read.

func sdkClient(t *testing.T, chunk int) *bedrockruntime.Client {
	ts := serve(t, chunk)
	return bedrockruntime.New(bedrockruntime.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String(ts.URL),
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""),
		RetryMaxAttempts: 1,
	})
}

func userText(s string) types.Message {
	return types.Message{Role: types.ConversationRoleUser, Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: s}}}
}

func lookTool() *types.ToolConfiguration {
	return &types.ToolConfiguration{Tools: []types.Tool{&types.ToolMemberToolSpec{Value: types.ToolSpecification{
		Name: aws.String("look"), Description: aws.String("Look something up."),
		InputSchema: &types.ToolInputSchemaMemberJson{Value: document.NewLazyDocument(map[string]any{
			"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}})},
	}}}}
}

func TestSDKConverse(t *testing.T) {
	c := sdkClient(t, 64)
	out, err := c.Converse(context.Background(), &bedrockruntime.ConverseInput{
		ModelId:         aws.String("us.anthropic.claude-sonnet-4-20250514-v1:0"),
		Messages:        []types.Message{userText("hello")},
		System:          []types.SystemContentBlock{&types.SystemContentBlockMemberText{Value: "Be brief."}},
		InferenceConfig: &types.InferenceConfiguration{MaxTokens: aws.Int32(50), Temperature: aws.Float32(0.2)},
	})
	if err != nil {
		t.Fatal(err)
	}
	msg := out.Output.(*types.ConverseOutputMemberMessage).Value
	if txt, ok := msg.Content[0].(*types.ContentBlockMemberText); !ok || txt.Value != "echo: hello" {
		t.Fatalf("content %#v", msg.Content)
	}
	if out.StopReason != types.StopReasonEndTurn || *out.Usage.InputTokens != 21 || *out.Usage.OutputTokens != 13 || *out.Usage.CacheReadInputTokens != 4 {
		t.Fatalf("stop %s usage %+v", out.StopReason, out.Usage)
	}
}

func TestSDKToolRoundTrip(t *testing.T) {
	c := sdkClient(t, 64)
	ctx := context.Background()
	model := aws.String("amazon.nova-pro-v1:0")
	msgs := []types.Message{userText("cats")}
	out, err := c.Converse(ctx, &bedrockruntime.ConverseInput{ModelId: model, Messages: msgs, ToolConfig: lookTool()})
	if err != nil {
		t.Fatal(err)
	}
	if out.StopReason != types.StopReasonToolUse {
		t.Fatalf("stop %s", out.StopReason)
	}
	msg := out.Output.(*types.ConverseOutputMemberMessage).Value
	tu, ok := msg.Content[1].(*types.ContentBlockMemberToolUse)
	if !ok || *tu.Value.Name != "look" || *tu.Value.ToolUseId != "toolu_1" {
		t.Fatalf("content %#v", msg.Content)
	}
	var input map[string]any
	if err := tu.Value.Input.UnmarshalSmithyDocument(&input); err != nil || input["q"] != "cats" {
		t.Fatalf("input %v %v", input, err)
	}
	msgs = append(msgs, msg, types.Message{Role: types.ConversationRoleUser, Content: []types.ContentBlock{
		&types.ContentBlockMemberToolResult{Value: types.ToolResultBlock{ToolUseId: tu.Value.ToolUseId,
			Content: []types.ToolResultContentBlock{&types.ToolResultContentBlockMemberText{Value: "three cats"}}}},
	}})
	out, err = c.Converse(ctx, &bedrockruntime.ConverseInput{ModelId: model, Messages: msgs, ToolConfig: lookTool()})
	if err != nil {
		t.Fatal(err)
	}
	msg = out.Output.(*types.ConverseOutputMemberMessage).Value
	if txt, ok := msg.Content[0].(*types.ContentBlockMemberText); !ok || txt.Value != "The tool said: three cats" {
		t.Fatalf("content %#v", msg.Content)
	}
}

func TestSDKConverseStream(t *testing.T) {
	for _, chunk := range []int{1, 7, 1 << 20} {
		c := sdkClient(t, chunk)
		out, err := c.ConverseStream(context.Background(), &bedrockruntime.ConverseStreamInput{
			ModelId: aws.String("amazon.nova-pro-v1:0"), Messages: []types.Message{userText("cats")}, ToolConfig: lookTool(),
		})
		if err != nil {
			t.Fatal(err)
		}
		stream := out.GetStream()
		var text, input, order strings.Builder
		var stop types.StopReason
		var usage *types.TokenUsage
		for ev := range stream.Events() {
			switch v := ev.(type) {
			case *types.ConverseStreamOutputMemberMessageStart:
				order.WriteString("start ")
			case *types.ConverseStreamOutputMemberContentBlockStart:
				tu := v.Value.Start.(*types.ContentBlockStartMemberToolUse)
				order.WriteString("toolstart:" + *tu.Value.Name + " ")
			case *types.ConverseStreamOutputMemberContentBlockDelta:
				switch d := v.Value.Delta.(type) {
				case *types.ContentBlockDeltaMemberText:
					text.WriteString(d.Value)
				case *types.ContentBlockDeltaMemberToolUse:
					input.WriteString(*d.Value.Input)
				}
			case *types.ConverseStreamOutputMemberContentBlockStop:
				order.WriteString("stop ")
			case *types.ConverseStreamOutputMemberMessageStop:
				stop = v.Value.StopReason
				order.WriteString("messagestop ")
			case *types.ConverseStreamOutputMemberMetadata:
				usage = v.Value.Usage
				order.WriteString("metadata")
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatalf("chunk %d: %v", chunk, err)
		}
		_ = stream.Close()
		if text.String() != "Let me check." || input.String() != `{"q":"cats"}` || stop != types.StopReasonToolUse {
			t.Fatalf("chunk %d: text %q input %q stop %s", chunk, text.String(), input.String(), stop)
		}
		if order.String() != "start stop toolstart:look stop messagestop metadata" {
			t.Fatalf("chunk %d: order %q", chunk, order.String())
		}
		if usage == nil || *usage.InputTokens != 21 || *usage.OutputTokens != 13 || *usage.CacheReadInputTokens != 4 {
			t.Fatalf("chunk %d: usage %+v", chunk, usage)
		}
	}
}

func TestSDKJSONSchemaByForcedTool(t *testing.T) {
	c := sdkClient(t, 64)
	tools := lookTool()
	tools.Tools[0].(*types.ToolMemberToolSpec).Value.Name = aws.String(JSONAnswerTool)
	tools.ToolChoice = &types.ToolChoiceMemberTool{Value: types.SpecificToolChoice{Name: aws.String(JSONAnswerTool)}}
	out, err := c.Converse(context.Background(), &bedrockruntime.ConverseInput{
		ModelId: aws.String("amazon.nova-pro-v1:0"), Messages: []types.Message{userText("Where?")}, ToolConfig: tools,
	})
	if err != nil {
		t.Fatal(err)
	}
	msg := out.Output.(*types.ConverseOutputMemberMessage).Value
	tu, ok := msg.Content[0].(*types.ContentBlockMemberToolUse)
	if !ok || *tu.Value.Name != JSONAnswerTool {
		t.Fatalf("content %#v", msg.Content)
	}
	var input map[string]any
	if err := tu.Value.Input.UnmarshalSmithyDocument(&input); err != nil || input["city"] != "Paris" {
		t.Fatalf("input %v %v", input, err)
	}
}

func TestSDKThrottling(t *testing.T) {
	c := sdkClient(t, 64)
	_, err := c.Converse(context.Background(), &bedrockruntime.ConverseInput{
		ModelId: aws.String("amazon.nova-pro-v1:0"), Messages: []types.Message{userText("please throttle")},
	})
	var te *types.ThrottlingException
	if !errors.As(err, &te) || !strings.Contains(te.ErrorMessage(), "Too many requests") {
		t.Fatalf("got %v, want *types.ThrottlingException", err)
	}
}

func TestSDKStreamException(t *testing.T) {
	c := sdkClient(t, 3)
	out, err := c.ConverseStream(context.Background(), &bedrockruntime.ConverseStreamInput{
		ModelId: aws.String("amazon.nova-pro-v1:0"), Messages: []types.Message{userText("fail midway")},
	})
	if err != nil {
		t.Fatal(err)
	}
	stream := out.GetStream()
	text := ""
	for ev := range stream.Events() {
		if d, ok := ev.(*types.ConverseStreamOutputMemberContentBlockDelta); ok {
			text += d.Value.Delta.(*types.ContentBlockDeltaMemberText).Value
		}
	}
	var te *types.ThrottlingException
	if err := stream.Err(); !errors.As(err, &te) || te.ErrorMessage() != "slow down" {
		t.Fatalf("stream error %v, want *types.ThrottlingException", err)
	}
	if text != "partial" {
		t.Fatalf("text before the exception %q", text)
	}
}
