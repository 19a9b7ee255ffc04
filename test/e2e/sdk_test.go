package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
)

// Four providers on one mock, one of each kind; each model is served by
// a provider of another API than its clients', so every call below is
// translated: OpenAI's and Anthropic's to each other, and both to Gemini's
// and Bedrock's native APIs. The Bedrock provider signs with the AWS
// credentials TestSDKs puts in the environment, the Gemini one sends the
// key it names.
const sdkConfig = `listen: ${LISTEN}
admin_listen: ${ADMIN}
providers:
  - {name: ant, kind: anthropic, base_url: "http://${UP}/v1", forward_headers: [X-Mock-Fail], breaker: off}
  - {name: oai, kind: openai, base_url: "http://${UP}/v1", forward_headers: [X-Mock-Fail], breaker: off}
  - {name: gem, kind: gemini, base_url: "http://${UP}/v1beta", api_key_env: SLUICE_SDK_GEMINI_KEY, forward_headers: [X-Mock-Fail], breaker: off}
  - {name: bed, kind: bedrock, region: us-east-1, base_url: "http://${UP}", forward_headers: [X-Mock-Fail], breaker: off}
models:
  - {name: claude-behind, targets: [{provider: ant, model: claude-x}]}
  - {name: gpt-behind, targets: [{provider: oai, model: gpt-x}]}
  - {name: gemini-behind, targets: [{provider: gem, model: gemini-x}]}
  - {name: bedrock-behind, targets: [{provider: bed, model: "anthropic.claude-x-v1:0"}]}
`

// The official SDKs, unchanged, against real sluice serve and sluice mock
// processes: OpenAI's (Node and Go) on a model an Anthropic-kind provider
// serves, Anthropic's (Node and Go) on one an OpenAI-kind provider
// serves. Each runs a chat, a stream, a tool round trip and errors that
// must reach it as its own typed error with the right status.
//
// The Node SDKs are pinned in e2e/sdk/package.json; install them with
// npm ci --prefix test/e2e/sdk (CI does; elsewhere their subtests skip).
func TestSDKs(t *testing.T) {
	bin := buildSluice(t)
	listen, admin, up := freeAddr(t), freeAddr(t), freeAddr(t)
	start(t, ready("http://"+up+"/stats"), bin, "mock", "--listen", up, "--ttft", "5ms", "--tpot", "1ms", "--output-tokens", "8")
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	cfg := strings.NewReplacer("${LISTEN}", listen, "${ADMIN}", admin, "${UP}", up).Replace(sdkConfig)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	// sluice serve inherits these: the Bedrock provider's AWS credential
	// chain reads the environment first, and never a file of this machine.
	t.Setenv("SLUICE_SDK_GEMINI_KEY", "gemini-test-key")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDSLUICETEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "sluice-test-secret")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	serve := start(t, ready("http://"+admin+"/readyz"), bin, "serve", "--config", path)
	base := "http://" + listen
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("sluice serve's log:\n%s", serve.Output())
		}
	})

	for _, model := range []string{"claude-behind", "gemini-behind", "bedrock-behind"} {
		t.Run("openai-go/"+model, func(t *testing.T) { openAIGo(t, base, model) })
		t.Run("node/openai/"+model, func(t *testing.T) { nodeSDK(t, "openai.mjs", base, model) })
	}
	for _, model := range []string{"gpt-behind", "gemini-behind", "bedrock-behind"} {
		t.Run("anthropic-sdk-go/"+model, func(t *testing.T) { anthropicGo(t, base, model) })
		t.Run("node/anthropic/"+model, func(t *testing.T) { nodeSDK(t, "anthropic.mjs", base, model) })
	}
	for _, model := range []string{"gpt-behind", "claude-behind", "gemini-behind"} {
		t.Run("openai-go/responses/"+model, func(t *testing.T) { responsesGo(t, base, model) })
	}
}

// weatherSchema is the JSON-schema answer every SDK asks for; the mock
// fills each property (strings "mock", numbers 1).
var weatherSchema = map[string]any{
	"type":       "object",
	"properties": map[string]any{"city": map[string]any{"type": "string"}, "temp": map[string]any{"type": "number"}},
	"required":   []string{"city", "temp"},
}

// checkWeather fails the test unless text is the JSON weatherSchema's
// answer from the mock.
func checkWeather(t *testing.T, text string) {
	t.Helper()
	var got struct {
		City string  `json:"city"`
		Temp float64 `json:"temp"`
	}
	if err := json.Unmarshal([]byte(text), &got); err != nil || got.City != "mock" || got.Temp != 1 {
		t.Errorf("JSON-schema answer %q: want {\"city\":\"mock\",\"temp\":1} (%v)", text, err)
	}
}

// nodeSDK runs one of e2e/sdk's scripts against the gateway. Without the
// packages installed it skips, or fails under CI=true.
func nodeSDK(t *testing.T, script, base, model string) {
	needNode(t)
	b, err := runNode(t, script, []string{"SLUICE_URL=" + base, "SLUICE_MODEL=" + model}, 60*time.Second)
	t.Logf("node %s:\n%s", script, b)
	if err != nil {
		t.Fatalf("node %s: %v", script, err)
	}
	n := 0
	for _, line := range strings.Split(b, "\n") {
		if strings.HasPrefix(line, "ok ") {
			n++
		}
	}
	if n != 7 {
		t.Errorf("node %s passed %d steps, want 7 (chat, stream, tools, tools streamed, json schema, reasoning, errors)", script, n)
	}
}

// needNode skips t unless node and e2e/sdk's packages are installed, or
// fails it under CI=true, saying what to install.
func needNode(t *testing.T) {
	t.Helper()
	const install = "run npm ci --prefix test/e2e/sdk to install the pinned Node SDKs"
	missing := ""
	if _, err := exec.LookPath("node"); err != nil {
		missing = "node is not on PATH; install Node.js, then " + install
	} else if _, err := os.Stat("sdk/node_modules"); err != nil {
		missing = "test/e2e/sdk/node_modules is missing; " + install
	}
	if missing != "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(missing)
		}
		t.Skip(missing)
	}
}

// runNode runs one of e2e/sdk's scripts with env added to the test's
// environment, for at most timeout, and returns its output (standard
// output and error, interleaved).
func runNode(t *testing.T, script string, env []string, timeout time.Duration) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script)
	cmd.Dir = "sdk"
	cmd.Env = append(os.Environ(), env...)
	b, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("%w: still running after %v", err, timeout)
	}
	return string(b), err
}

func openAIGo(t *testing.T, base, model string) {
	ctx := context.Background()
	c := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("sk-client"), option.WithMaxRetries(0))
	ask := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief."), openai.UserMessage("hello")}

	r, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: model, Messages: ask})
	if err != nil {
		t.Fatal(err)
	}
	if r.Object != "chat.completion" || r.Model == "" || r.Choices[0].FinishReason != "stop" || r.Choices[0].Message.Content == "" || r.Usage.CompletionTokens == 0 {
		t.Errorf("chat: %s", r.RawJSON())
	}

	s := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: model, Messages: ask,
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}})
	var acc openai.ChatCompletionAccumulator
	chunks := 0
	for s.Next() {
		acc.AddChunk(s.Current())
		chunks++
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if chunks < 4 || acc.Choices[0].Message.Content == "" || acc.Choices[0].FinishReason != "stop" || acc.Usage.CompletionTokens == 0 {
		t.Errorf("stream: %d chunks, %+v", chunks, acc.ChatCompletion)
	}

	// A tool round trip, the call streamed.
	tools := []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name:       "get_weather",
		Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
	})}
	msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What is the weather in Paris?")}
	s = c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: model, Messages: msgs, Tools: tools})
	acc = openai.ChatCompletionAccumulator{}
	for s.Next() {
		acc.AddChunk(s.Current())
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	first := acc.Choices[0]
	if first.FinishReason != "tool_calls" || len(first.Message.ToolCalls) != 1 || first.Message.ToolCalls[0].Function.Name != "get_weather" ||
		first.Message.ToolCalls[0].Function.Arguments != `{"city":"mock"}` {
		t.Fatalf("tool call: %+v", first)
	}
	msgs = append(msgs, first.Message.ToParam(), openai.ToolMessage("sunny, 21C", first.Message.ToolCalls[0].ID))
	r, err = c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: model, Messages: msgs, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	if r.Choices[0].FinishReason != "stop" || !strings.HasPrefix(r.Choices[0].Message.Content, "tool result: sunny, 21C") {
		t.Errorf("answer to the tool result: %s", r.RawJSON())
	}

	// A JSON-schema answer: the text is JSON that fills the schema.
	r, err = c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: model, Messages: ask,
		ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "weather", Schema: weatherSchema}}}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Choices[0].FinishReason != "stop" {
		t.Errorf("JSON-schema answer: %s", r.RawJSON())
	}
	checkWeather(t, r.Choices[0].Message.Content)

	// Errors: the provider's, and Sluice's own refusal naming the parameter.
	for _, e := range []struct {
		fail   string
		n      int64
		status int
		param  string
	}{{"429", 0, 429, ""}, {"400", 0, 400, ""}, {"", 2, 400, "n"}} {
		p := openai.ChatCompletionNewParams{Model: model, Messages: ask}
		if e.n != 0 {
			p.N = openai.Int(e.n)
		}
		var opts []option.RequestOption
		if e.fail != "" {
			opts = append(opts, option.WithHeader("X-Mock-Fail", e.fail))
		}
		_, err := c.Chat.Completions.New(ctx, p, opts...)
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != e.status || apiErr.Param != e.param || apiErr.Type == "" {
			t.Errorf("fail %q n %d: want an *openai.Error with status %d and param %q, got %#v", e.fail, e.n, e.status, e.param, err)
		}
	}
}

func anthropicGo(t *testing.T, base, model string) {
	ctx := context.Background()
	c := anthropic.NewClient(aoption.WithBaseURL(base), aoption.WithAPIKey("sk-client"), aoption.WithMaxRetries(0))
	ask := anthropic.MessageNewParams{Model: anthropic.Model(model), MaxTokens: 100,
		System:   []anthropic.TextBlockParam{{Text: "Be brief."}},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello"))}}

	r, err := c.Messages.New(ctx, ask)
	if err != nil {
		t.Fatal(err)
	}
	if r.Type != "message" || r.Model == "" || r.StopReason != "end_turn" || r.Content[0].Text == "" || r.Usage.OutputTokens == 0 {
		t.Errorf("chat: %s", r.RawJSON())
	}

	s := c.Messages.NewStreaming(ctx, ask)
	var acc anthropic.Message
	events := 0
	for s.Next() {
		if err := acc.Accumulate(s.Current()); err != nil {
			t.Fatal(err)
		}
		events++
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if events < 5 || acc.StopReason != "end_turn" || acc.Content[0].Text == "" {
		t.Errorf("stream: %d events, %+v", events, acc)
	}

	// A tool round trip, the call streamed.
	tools := []anthropic.ToolUnionParam{anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{
		Properties: map[string]any{"city": map[string]any{"type": "string"}}}, "get_weather")}
	msgs := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("What is the weather in Paris?"))}
	s = c.Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: anthropic.Model(model), MaxTokens: 100, Tools: tools, Messages: msgs})
	acc = anthropic.Message{}
	for s.Next() {
		if err := acc.Accumulate(s.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	var use anthropic.ToolUseBlock
	for _, b := range acc.Content {
		if b.Type == "tool_use" {
			use = b.AsToolUse()
		}
	}
	var input map[string]any
	json.Unmarshal(use.Input, &input)
	if acc.StopReason != "tool_use" || use.Name != "get_weather" || input["city"] != "mock" {
		t.Fatalf("tool call: %s", acc.RawJSON())
	}
	msgs = append(msgs, acc.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock(use.ID, "sunny, 21C", false)))
	r, err = c.Messages.New(ctx, anthropic.MessageNewParams{Model: anthropic.Model(model), MaxTokens: 100, Tools: tools, Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	if r.StopReason != "end_turn" || !strings.HasPrefix(r.Content[0].Text, "tool result: sunny, 21C") {
		t.Errorf("answer to the tool result: %s", r.RawJSON())
	}

	// A JSON-schema answer through structured outputs.
	js := ask
	js.OutputConfig = anthropic.OutputConfigParam{Format: anthropic.JSONOutputFormatParam{Schema: weatherSchema}}
	r, err = c.Messages.New(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	if r.StopReason != "end_turn" || len(r.Content) == 0 {
		t.Fatalf("JSON-schema answer: %s", r.RawJSON())
	}
	checkWeather(t, r.Content[0].Text)

	for _, e := range []struct {
		fail   string
		status int
		typ    string
	}{{"429", http.StatusTooManyRequests, "rate_limit_error"}, {"400", http.StatusBadRequest, "invalid_request_error"}} {
		_, err := c.Messages.New(ctx, ask, aoption.WithHeader("X-Mock-Fail", e.fail))
		var apiErr *anthropic.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != e.status || string(apiErr.Type()) != e.typ {
			t.Errorf("fail %s: want an *anthropic.Error with status %d and type %s, got %#v", e.fail, e.status, e.typ, err)
		}
	}
}

// responsesGo runs openai-go's Responses API through Sluice: passed
// through to an OpenAI-kind provider (model), whole and streamed, and
// refused, naming model, for one only an Anthropic provider serves
// (refused).
// responsesGo runs the Responses API through openai-go: passed through
// to gpt-behind's provider, which serves it, and bridged through chat
// completions to the others.
func responsesGo(t *testing.T, base, model string) {
	ctx := context.Background()
	c := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("sk-client"), option.WithMaxRetries(0))
	p := responses.ResponseNewParams{Model: model, Instructions: openai.String("Be brief."),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hello")}}
	r, err := c.Responses.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != "completed" || r.OutputText() == "" || r.Usage.OutputTokens == 0 {
		t.Errorf("response: %s", r.RawJSON())
	}
	s := c.Responses.NewStreaming(ctx, p)
	var text, final string
	for s.Next() {
		ev := s.Current()
		switch ev.Type {
		case "response.output_text.delta":
			text += ev.Delta
		case "response.completed":
			final = ev.Response.OutputText()
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if text == "" || text != final {
		t.Errorf("stream: deltas %q, completed %q", text, final)
	}
	if model == "gpt-behind" {
		return
	}
	// What only the API's own server can do is refused, naming it.
	p.PreviousResponseID = openai.String("resp_123")
	_, err = c.Responses.New(ctx, p)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != "previous_response_id" {
		t.Errorf("previous_response_id on a bridged model: want a 400 naming it, got %#v", err)
	}
}
