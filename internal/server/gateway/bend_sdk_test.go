package gateway_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/sluice-gw/sluice/internal/harness/mock"
)

// The official OpenAI SDK, unchanged, asks a Claude-backed model for a
// JSON-schema answer with a seed and a reasoning effort, and gets the
// JSON, whole and streamed.
func TestBendOpenAISDKJSONSchemaOnClaude(t *testing.T) {
	s := newStack(t, mock.Config{OutputTokens: mock.TokenRange{Min: 5, Max: 5}}, openAIOnAnthropic)
	oc := openai.NewClient(option.WithBaseURL(s.url+"/v1/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	var schema map[string]any
	if err := json.Unmarshal([]byte(bendSchema), &schema); err != nil {
		t.Fatal(err)
	}
	params := openai.ChatCompletionNewParams{
		Model:               "mock-gpt",
		Messages:            []openai.ChatCompletionMessageParamUnion{openai.UserMessage("weather in Oslo?")},
		Seed:                openai.Int(7),
		ReasoningEffort:     shared.ReasoningEffortLow,
		MaxCompletionTokens: openai.Int(8000),
		ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "weather", Strict: openai.Bool(true), Schema: schema},
		}},
	}
	type weather struct {
		City string `json:"city"`
		Days int    `json:"days"`
	}
	check := func(content string) {
		t.Helper()
		var w weather
		if err := json.Unmarshal([]byte(content), &w); err != nil || w.City == "" || w.Days == 0 {
			t.Errorf("content %q does not fill the schema: %v", content, err)
		}
	}

	var raw *http.Response
	resp, err := oc.Chat.Completions.New(t.Context(), params, option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	check(resp.Choices[0].Message.Content)
	if got := raw.Header.Get("X-Sluice-Dropped"); got != "seed" {
		t.Errorf("X-Sluice-Dropped %q, want seed", got)
	}

	stream := oc.Chat.Completions.NewStreaming(t.Context(), params)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(acc.Choices) != 1 {
		t.Fatalf("accumulated %+v", acc.Choices)
	}
	check(acc.Choices[0].Message.Content)
}
