package gateway_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/sluice-gw/sluice/internal/config"
)

// trailerSeen wraps a transport: it reads each response whole before
// the SDK gets it, with its HTTP trailers, so the SDK's stream reader is
// handed every byte and the test knows what the trailers said.
type trailerSeen struct {
	rt      http.RoundTripper
	body    bytes.Buffer
	trailer http.Header
}

func (s *trailerSeen) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := s.rt.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if _, err := s.body.ReadFrom(resp.Body); err != nil {
		return nil, err
	}
	s.trailer = resp.Trailer.Clone()
	resp.Body = io.NopCloser(bytes.NewReader(s.body.Bytes()))
	return resp, nil
}

// verdict checks the stream's verdict came in its HTTP trailers, and
// that nothing of Sluice's own was added to the stream.
func (s *trailerSeen) verdict(t *testing.T) {
	t.Helper()
	if v := s.trailer.Get("X-Sluice-Validation"); v != "valid" && v != "invalid" {
		t.Fatalf("the stream's trailers carried no verdict: %v", s.trailer)
	}
	if bytes.Contains(s.body.Bytes(), []byte("sluice.validation")) {
		t.Fatalf("an event of Sluice's own in the stream:\n%s", s.body.String())
	}
}

// The official OpenAI SDK's stream reader, unchanged, reads a stream
// with its verdict in HTTP trailers to its end without error, and its
// accumulator holds the whole answer: the stream is the vendor's own,
// nothing added.
func TestValidationTrailerOpenAISDK(t *testing.T) {
	for _, tc := range []struct {
		name   string
		target string
		rp     reply
	}{{"openai backend, invalid", "oa", invalidCall}, {"anthropic backend, valid", "an", validCall}} {
		t.Run(tc.name, func(t *testing.T) {
			up := newScripted(t, tc.rp)
			s, _ := validationStack(t, up, config.OnInvalidAnnotate, tc.target)
			seen := &trailerSeen{rt: http.DefaultTransport}
			oc := openai.NewClient(option.WithBaseURL(s.url+"/v1/"), option.WithAPIKey("sk-test"),
				option.WithHTTPClient(&http.Client{Transport: seen}), option.WithMaxRetries(0))
			var params shared.FunctionParameters
			json.Unmarshal([]byte(weatherTool), &params)
			stream := oc.Chat.Completions.NewStreaming(t.Context(), openai.ChatCompletionNewParams{
				Model:    "gpt",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("weather?")},
				Tools:    []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_weather", Parameters: params})},
			})
			var acc openai.ChatCompletionAccumulator
			chunks := 0
			for stream.Next() {
				acc.AddChunk(stream.Current())
				chunks++
			}
			if err := stream.Err(); err != nil {
				t.Fatalf("the SDK's stream failed after %d chunks: %v", chunks, err)
			}
			if len(acc.Choices) != 1 || len(acc.Choices[0].Message.ToolCalls) != 1 ||
				acc.Choices[0].Message.ToolCalls[0].Function.Arguments != tc.rp.toolArgs {
				t.Fatalf("accumulated %+v; want the tool call %s", acc.Choices, tc.rp.toolArgs)
			}
			seen.verdict(t)
		})
	}
}

// The official Anthropic SDK's stream reader, unchanged, reads a stream
// whose verdict is in its HTTP trailers without error, and meets no
// event its vendor would not send.
func TestValidationTrailerAnthropicSDK(t *testing.T) {
	for _, tc := range []struct {
		name   string
		target string
		rp     reply
	}{{"anthropic backend, invalid", "an", invalidCall}, {"openai backend, valid", "oa", validCall}} {
		t.Run(tc.name, func(t *testing.T) {
			up := newScripted(t, tc.rp)
			s, _ := validationStack(t, up, config.OnInvalidAnnotate, tc.target)
			seen := &trailerSeen{rt: http.DefaultTransport}
			ac := anthropic.NewClient(aoption.WithBaseURL(s.url), aoption.WithAPIKey("sk-ant-test"),
				aoption.WithHTTPClient(&http.Client{Transport: seen}), aoption.WithMaxRetries(0))
			var schema anthropic.ToolInputSchemaParam
			json.Unmarshal([]byte(weatherTool), &schema)
			stream := ac.Messages.NewStreaming(t.Context(), anthropic.MessageNewParams{
				Model:     "gpt",
				MaxTokens: 100,
				Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("weather?"))},
				Tools:     []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "get_weather", InputSchema: schema}}},
			})
			var msg anthropic.Message
			events := 0
			for stream.Next() {
				if err := msg.Accumulate(stream.Current()); err != nil {
					t.Fatalf("accumulate event %d: %v", events, err)
				}
				events++
			}
			if err := stream.Err(); err != nil {
				t.Fatalf("the SDK's stream failed after %d events: %v", events, err)
			}
			if len(msg.Content) != 1 || msg.Content[0].Name != "get_weather" || string(msg.Content[0].Input) != tc.rp.toolArgs {
				t.Fatalf("accumulated %+v; want the tool call %s", msg.Content, tc.rp.toolArgs)
			}
			seen.verdict(t)
		})
	}
}
