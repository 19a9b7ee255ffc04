package client_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/sluice-gw/sluice/client"
)

// fakeAPI mimics Sluice's OpenAI- and Anthropic-shaped endpoints: the first
// call to each answers 429 with a short retry-after-ms, later calls succeed.
func fakeAPI(attempts *atomic.Int32) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		if attempts.Add(1) == 1 {
			w.Header().Set("retry-after-ms", "10")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"error":{"message":"overloaded","type":"rate_limit_error"}}`)
			return
		}
		switch r.URL.Path {
		case "/v1/chat/completions":
			_, _ = io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m",`+
				`"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"hello from sluice"}}],`+
				`"usage":{"prompt_tokens":1,"completion_tokens":3,"total_tokens":4}}`)
		case "/v1/messages":
			_, _ = io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m",`+
				`"content":[{"type":"text","text":"hello from sluice"}],"stop_reason":"end_turn",`+
				`"usage":{"input_tokens":1,"output_tokens":3}}`)
		default:
			http.NotFound(w, r)
		}
	}))
}

// The official OpenAI SDK, unchanged, with Sluice's transport underneath.
// WithMaxRetries(0) turns the SDK's own retries off so that the transport
// owns them: otherwise each SDK retry would run the transport's retries
// again (up to 3×3 attempts per call), outside the retry budget and the
// adaptive throttle, multiplying load on an overloaded server.
func Example_openAI() {
	var attempts atomic.Int32
	srv := fakeAPI(&attempts)
	defer srv.Close()

	oc := openai.NewClient(
		option.WithBaseURL(srv.URL+"/v1/"),
		option.WithAPIKey("sk-test"),
		option.WithHTTPClient(&http.Client{Transport: client.New(client.Options{})}),
		option.WithMaxRetries(0),
	)
	resp, err := oc.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println(resp.Choices[0].Message.Content)
	fmt.Println("attempts:", attempts.Load())
	// Output:
	// hello from sluice
	// attempts: 2
}

// The official Anthropic SDK, unchanged, with Sluice's transport underneath;
// its retries are disabled for the same reason as in the OpenAI example.
func Example_anthropic() {
	var attempts atomic.Int32
	srv := fakeAPI(&attempts)
	defer srv.Close()

	ac := anthropic.NewClient(
		aoption.WithBaseURL(srv.URL),
		aoption.WithAPIKey("sk-ant-test"),
		aoption.WithHTTPClient(&http.Client{Transport: client.New(client.Options{})}),
		aoption.WithMaxRetries(0),
	)
	msg, err := ac.Messages.New(context.Background(), anthropic.MessageNewParams{
		Model:     "claude-test",
		MaxTokens: 64,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
	})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println(msg.Content[0].Text)
	fmt.Println("attempts:", attempts.Load())
	// Output:
	// hello from sluice
	// attempts: 2
}

// Direct use with net/http and metric hooks.
func ExampleNew() {
	var attempts atomic.Int32
	srv := fakeAPI(&attempts)
	defer srv.Close()

	var retries atomic.Int32
	hc := &http.Client{Transport: client.New(client.Options{
		Hooks: client.Hooks{
			Retry: func(*http.Request, int, time.Duration, *http.Response, error) { retries.Add(1) },
		},
	})}
	resp, err := hc.Get(srv.URL + "/v1/models")
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, "after", retries.Load(), "retry")
	// Output:
	// 404 after 1 retry
}
