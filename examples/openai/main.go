// Command openai calls a running sluice serve with the official OpenAI Go
// SDK, unchanged, on Sluice's transport. The SDK's own retries are off
// (WithMaxRetries(0)): the transport owns them, so that each retry is
// paid from one budget and the adaptive throttle sees every attempt.
//
//	go run ./cmd/sluice serve &            # the embedded default config
//	go run ./examples/openai -url http://127.0.0.1:8080/v1/
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/sluice-gw/sluice/client"
)

func main() {
	url := flag.String("url", "http://127.0.0.1:8080/v1/", "the gateway's OpenAI base `URL`")
	model := flag.String("model", "mock-gpt", "the `model` to ask for")
	flag.Parse()

	oc := openai.NewClient(
		option.WithBaseURL(*url),
		option.WithAPIKey(os.Getenv("SLUICE_KEY")), // the gateway's key, when it has keys
		option.WithHTTPClient(&http.Client{Transport: client.New(client.Options{})}),
		option.WithMaxRetries(0),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stream := oc.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model:    *model,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Say hello in five words.")},
	})
	for stream.Next() {
		if c := stream.Current(); len(c.Choices) > 0 {
			fmt.Print(c.Choices[0].Delta.Content)
		}
	}
	fmt.Println()
	if err := stream.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
