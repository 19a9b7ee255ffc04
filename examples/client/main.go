// Command client calls a running sluice serve through Sluice's Go client
// with net/http alone: the transport adds an Idempotency-Key, sends the
// time left as X-Sluice-Timeout, retries what is retryable within its
// budget, and sheds locally when the gateway refuses most requests.
//
//	go run ./cmd/sluice serve &            # the embedded default config
//	go run ./examples/client -url http://127.0.0.1:8080 -n 20
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/sluice-gw/sluice/client"
)

func main() {
	url := flag.String("url", "http://127.0.0.1:8080", "the gateway's base `URL`")
	model := flag.String("model", "mock-gpt", "the `model` to ask for")
	n := flag.Int("n", 5, "how many requests to send")
	timeout := flag.Duration("timeout", 10*time.Second, "each request's deadline")
	flag.Parse()

	var retries, throttled int
	tr := client.New(client.Options{Hooks: client.Hooks{
		Retry: func(_ *http.Request, attempt int, wait time.Duration, resp *http.Response, err error) {
			retries++
			fmt.Fprintf(os.Stderr, "  retry after attempt %d, waiting %s\n", attempt, wait.Round(time.Millisecond))
		},
		Throttled: func(_ *http.Request, p float64) { throttled++ },
	}})
	hc := &http.Client{Transport: tr}

	body, _ := json.Marshal(map[string]any{
		"model":    *model,
		"messages": []map[string]string{{"role": "user", "content": "Say hello in five words."}},
	})
	ok := 0
	for i := range *n {
		ctx, cancel := context.WithTimeout(context.Background(), *timeout)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, *url+"/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		var te *client.ThrottledError
		switch {
		case errors.As(err, &te):
			fmt.Printf("%d: shed locally: %v\n", i+1, te)
		case err != nil:
			fmt.Printf("%d: %v\n", i+1, err)
		default:
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			fmt.Printf("%d: %s %s\n", i+1, resp.Status, firstLine(b))
			if resp.StatusCode == http.StatusOK {
				ok++
			}
		}
		cancel()
	}
	fmt.Printf("%d of %d answered; %d retries; %d shed locally\n", ok, *n, retries, throttled)
}

func firstLine(b []byte) string {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	if len(b) > 120 {
		b = append(b[:117:117], "..."...)
	}
	return string(b)
}
