package mock_test

import (
	"context"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/sluice-gw/sluice/internal/harness/mock"
)

// openai-go's Responses client, unchanged, reads the mock's function
// call, whole and streamed (under a legal encoding too), and its cut
// call under max_output_tokens: an incomplete response whose call's
// arguments stop mid-JSON.
func TestResponsesSDKToolCall(t *testing.T) {
	s := mock.New(mock.Config{Seed: 1, OutputTokens: mock.TokenRange{Min: 3}})
	url, stop, err := s.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	c := openai.NewClient(option.WithBaseURL(url+"/v1"), option.WithAPIKey("k"), option.WithMaxRetries(0))
	ctx := context.Background()
	params := responses.ResponseNewParams{
		Model:        "gpt-x",
		Instructions: openai.String("Be brief."),
		Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("weather in Paris?")},
		Tools: []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{
			Name:   "get_weather",
			Strict: openai.Bool(true),
			Parameters: map[string]any{
				"type":                 "object",
				"properties":           map[string]any{"city": map[string]any{"type": "string"}},
				"required":             []string{"city"},
				"additionalProperties": false,
			},
		}}},
	}
	check := func(what string, r *responses.Response, status, args string) {
		t.Helper()
		if len(r.Output) != 2 {
			t.Fatalf("%s: output %s", what, r.RawJSON())
		}
		call := r.Output[1].AsFunctionCall()
		if string(r.Status) != status || call.Name != "get_weather" || call.Arguments != args || call.CallID == "" ||
			r.Output[0].AsMessage().Content[0].Text == "" || r.Usage.OutputTokens == 0 {
			t.Errorf("%s: status %s, call %+v\n%s", what, r.Status, call, r.RawJSON())
		}
	}
	r, err := c.Responses.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	check("whole", r, "completed", `{"city":"mock"}`)
	for _, enc := range []string{"compact", "pretty+crlf", "shuffle+nospace"} {
		st := c.Responses.NewStreaming(ctx, params, option.WithHeader(mock.HeaderEncoding, enc))
		var done responses.Response
		var deltas string
		for st.Next() {
			ev := st.Current()
			switch ev.Type {
			case "response.function_call_arguments.delta":
				deltas += ev.Delta
			case "response.completed", "response.incomplete":
				done = ev.Response
			}
		}
		if st.Err() != nil {
			t.Fatalf("%s: %v", enc, st.Err())
		}
		check("streamed "+enc, &done, "completed", `{"city":"mock"}`)
		if deltas != `{"city":"mock"}` {
			t.Errorf("streamed %s: the deltas join to %q", enc, deltas)
		}
	}
	params.MaxOutputTokens = openai.Int(4)
	r, err = c.Responses.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	check("cut", r, "incomplete", `{"city":`)
}
