package gateway_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/server/redistest"
)

// Charges that match what was used: these tests put a gateway in front
// of a fake provider that answers as each case needs (n answers, a
// stream cut mid-way, a reported input count) and read what the key's
// budget, the provider's account and the metrics were charged.

// chargeStack is a gateway whose providers (mock-openai and
// mock-anthropic) are h, with continuation off (a cut stream stays cut)
// and mutate applied.
func chargeStack(t *testing.T, h http.HandlerFunc, mutate func(*config.Config)) *stack {
	t.Helper()
	up := httptest.NewServer(h)
	t.Cleanup(up.Close)
	return newStack(t, mock.Config{}, func(c *config.Config) {
		for i := range c.Providers {
			c.Providers[i].BaseURL = up.URL + "/v1"
			c.Providers[i].Continuation = "none"
		}
		if mutate != nil {
			mutate(c)
		}
	})
}

// seriesValue reads one series' value from s's /metrics; -1 when absent.
func seriesValue(t *testing.T, s *stack, series string) float64 {
	t.Helper()
	for _, l := range strings.Split(httpGetAdmin(t, s, "/metrics"), "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", l, err)
			}
			return f
		}
	}
	return -1
}

// sse starts an event stream on w.
func sse(w http.ResponseWriter) func(format string, args ...any) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	return func(format string, args ...any) {
		fmt.Fprintf(w, format, args...)
		w.(http.Flusher).Flush()
	}
}

// openAIWords streams n one-word deltas in OpenAI's shape.
func openAIWords(send func(string, ...any), n int) {
	for i := range n {
		send("data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"up\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" w%d\"},\"finish_reason\":null}]}\n\n", i)
	}
}

// claudeWords streams message_start (whose usage says output_tokens 1,
// as Claude's does, and 700 input tokens) and n one-word text deltas.
func claudeWords(send func(string, ...any), n int) {
	send("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"up\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":700,\"output_tokens\":1}}}\n\n")
	send("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	for i := range n {
		send("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" w%d\"}}\n\n", i)
	}
}

// cutAfter20 streams 20 words in the API the call was made to, then
// breaks the connection: the provider cut its stream.
func cutAfter20(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	send := sse(w)
	if strings.HasSuffix(r.URL.Path, "/messages") {
		claudeWords(send, 20)
	} else {
		openAIWords(send, 20)
	}
	panic(http.ErrAbortHandler)
}

// readAll posts and reads the answer to its end, whatever the end.
func readAll(t *testing.T, s *stack, path, body string, hdr map[string]string) int {
	t.Helper()
	resp, err := s.post(context.Background(), path, body, hdr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// slack is how many tokens a budget of perMinute refills in the time
// since start, rounded up, plus one: what a check of its remaining
// tokens must allow for.
func slack(start time.Time, perMinute int64) float64 {
	return float64(int64(time.Since(start).Seconds()*float64(perMinute)/60) + 1)
}

// n = 10 answers of max_tokens 100: the provider reports 1,000 output
// tokens, and the key and the provider's account are charged 1,000,
// not 100.
func TestNAnswersAreChargedInFull(t *testing.T) {
	const otpm = 5000
	var got string
	s := chargeStack(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = string(b)
		w.Header().Set("Content-Type", "application/json")
		var choices []string
		for i := range 10 {
			choices = append(choices, fmt.Sprintf(`{"index":%d,"message":{"role":"assistant","content":"x"},"finish_reason":"length"}`, i))
		}
		fmt.Fprintf(w, `{"id":"c","object":"chat.completion","created":1,"model":"up","choices":[%s],"usage":{"prompt_tokens":5,"completion_tokens":1000,"total_tokens":1005}}`, strings.Join(choices, ","))
	}, func(c *config.Config) {
		c.Keys = []config.Key{{Name: "k", SHA256: config.KeyHash("sk-k"), Limits: config.Limits{OTPM: otpm}}}
		c.Providers[0].Limits = config.Limits{OTPM: otpm}
	})
	start := time.Now()
	status, h, body := s.do("/v1/chat/completions", `{"model":"mock-gpt","n":10,"max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`, bearer("sk-k"))
	if status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	if !strings.Contains(got, `"n":10`) {
		t.Fatalf("the provider was not asked for n=10: %s", got)
	}
	// The answer's headers show the reservation: 10 x 100 taken.
	if r := h.Get("X-Ratelimit-Remaining-Tokens"); r != strconv.Itoa(otpm-1000) {
		t.Errorf("x-ratelimit-remaining-tokens %q at the answer, want %d (n x max_tokens reserved)", r, otpm-1000)
	}
	waitWithin(t, 15*time.Second, 5*time.Millisecond, "the request's log line", func() bool { return strings.Contains(s.logText(), "msg=request ") })
	for _, series := range []string{
		`sluice_budget_remaining{dimension="output_tokens",name="k",owner="key"}`,
		`sluice_budget_remaining{dimension="output_tokens",name="mock-openai",owner="provider"}`,
	} {
		if v, most := seriesValue(t, s, series), otpm-1000+slack(start, otpm); v < 0 || v > most {
			t.Errorf("%s = %v, want at most %v: the 1,000 tokens the provider reported are charged", series, v, most)
		}
	}
	// A key whose budget cannot hold 10 x 100 is refused before any call.
	s2 := chargeStack(t, func(w http.ResponseWriter, r *http.Request) { t.Error("the provider was called") }, func(c *config.Config) {
		c.Keys = []config.Key{{Name: "k", SHA256: config.KeyHash("sk-k"), Limits: config.Limits{OTPM: 500}}}
	})
	if status, _, body := s2.do("/v1/chat/completions", `{"model":"mock-gpt","n":10,"max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`, bearer("sk-k")); status != 413 {
		t.Errorf("n=10 x 100 against 500 a minute: %d %s, want 413", status, body)
	}
	// So is one that leaves max_tokens out: ten answers of the model's
	// default (here, of the key's whole 500) cannot fit either. It was
	// admitted, reserving 500, and drew 20,000; the 413 says what to set.
	status, _, body = s2.do("/v1/chat/completions", `{"model":"mock-gpt","n":10,"messages":[{"role":"user","content":"hi"}]}`, bearer("sk-k"))
	if status != 413 || !strings.Contains(string(body), "names no max_tokens") || !strings.Contains(string(body), "at most 50") {
		t.Errorf("n=10 without max_tokens against 500 a minute: %d %s, want 413 saying to set max_tokens to at most 50", status, body)
	}
}

// A stream the provider cuts after 20 tokens is charged those 20 (the
// key's budget and sluice_tokens_total), in each API and across them:
// OpenAI's, Claude's native Messages API (whose message_start says
// output_tokens 1, which is no final count), and an OpenAI client
// served by Claude. Claude's reported input (700) settles the input.
func TestCutStreamIsChargedWhatWasSent(t *testing.T) {
	for _, c := range []struct {
		name, path, model string
		input             float64 // the input tokens recorded: 700 when Claude reported it
	}{
		{"openai", "/v1/chat/completions", "mock-gpt", -1},
		{"claude native", "/v1/messages", "mock-claude", 700},
		{"openai client to claude", "/v1/chat/completions", "mock-claude", 700},
	} {
		t.Run(c.name, func(t *testing.T) {
			const otpm = 60 // a token a second: the refill during the test is small
			s := chargeStack(t, cutAfter20, func(c *config.Config) {
				c.Keys = []config.Key{{Name: "k", SHA256: config.KeyHash("sk-k"), Limits: config.Limits{OTPM: otpm}}}
			})
			start := time.Now()
			body := `{"model":"` + c.model + `","stream":true,"max_tokens":40,"messages":[{"role":"user","content":"hi"}]}`
			if status := readAll(t, s, c.path, body, bearer("sk-k")); status != 200 {
				t.Fatalf("status %d", status)
			}
			waitWithin(t, 15*time.Second, 5*time.Millisecond, "the request's log line", func() bool { return strings.Contains(s.logText(), "msg=request ") })
			if !strings.Contains(s.logText(), "output_tokens=20") {
				t.Errorf("the log does not say 20 output tokens:\n%s", s.logText())
			}
			// 60 - 20 charged; the old rule refunded the reservation
			// (OpenAI: 60 left) or took message_start's 1 (Claude: 59).
			if v, most := seriesValue(t, s, `sluice_budget_remaining{dimension="output_tokens",name="k",owner="key"}`), otpm-20+slack(start, otpm); v < 0 || v > most {
				t.Errorf("the key has %v output tokens left, want at most %v: the 20 sent are charged", v, most)
			}
			if v := seriesValue(t, s, `sluice_tokens_total{direction="output",key="k",model="`+c.model+`",provider="`+s.providerOf(c.model)+`",source="estimated"}`); v != 20 {
				t.Errorf("sluice_tokens_total output %v for the cut stream, want 20 (counted from what was relayed)", v)
			}
			if c.input > 0 {
				if v := seriesValue(t, s, `sluice_tokens_total{direction="input",key="k",model="`+c.model+`",provider="mock-anthropic",source="reported"}`); v != c.input {
					t.Errorf("input tokens %v, want Claude's reported %v", v, c.input)
				}
			}
		})
	}
}

// providerOf is the provider serving model in the default config.
func (s *stack) providerOf(model string) string {
	if model == "mock-claude" {
		return "mock-anthropic"
	}
	return "mock-openai"
}

// The provider reports 750 input tokens where Sluice counts a handful:
// the key's input budget, sluice_tokens_total and the cost all use
// 750. The cost is labelled as the tokens are: the client's model name,
// with the provider and the upstream model beside it.
func TestInputSettledOnReportedCount(t *testing.T) {
	const itpm = 6000
	s := chargeStack(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c","object":"chat.completion","created":1,"model":"up","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":750,"completion_tokens":2,"total_tokens":752}}`)
	}, func(c *config.Config) {
		c.Keys = []config.Key{{Name: "k", SHA256: config.KeyHash("sk-k"), Limits: config.Limits{ITPM: itpm}}}
		c.Prices = map[string]config.Price{"mock-gpt-4o": {Input: 1, Output: 0}}
	})
	start := time.Now()
	if status, _, body := s.do("/v1/chat/completions", `{"model":"mock-gpt","messages":[{"role":"user","content":"hi"}]}`, bearer("sk-k")); status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	waitWithin(t, 15*time.Second, 5*time.Millisecond, "the request's log line", func() bool { return strings.Contains(s.logText(), "msg=request ") })
	if v, most := seriesValue(t, s, `sluice_budget_remaining{dimension="input_tokens",name="k",owner="key"}`), itpm-750+slack(start, itpm); v < 0 || v > most {
		t.Errorf("the key has %v input tokens left, want at most %v: the provider's 750 settle it", v, most)
	}
	if v := seriesValue(t, s, `sluice_tokens_total{direction="input",key="k",model="mock-gpt",provider="mock-openai",source="reported"}`); v != 750 {
		t.Errorf("input tokens %v, want the reported 750", v)
	}
	if v := seriesValue(t, s, `sluice_cost_total{key="k",model="mock-gpt",provider="mock-openai",upstream_model="mock-gpt-4o"}`); v != 750.0/1e6 {
		t.Errorf("cost %v, want 750 input tokens at $1 a million, %v", v, 750.0/1e6)
	}
	if !strings.Contains(s.logText(), "input_tokens=750") {
		t.Errorf("the log does not show the provider's input count:\n%s", s.logText())
	}
}

// With nothing that counts tokens (the embedded default without its
// illustrative prices: no keys, prices or lanes), the provider's
// reported usage still reaches sluice_tokens_total.
func TestReportedTokensWithoutBudgets(t *testing.T) {
	s := newStack(t, mock.Config{}, func(c *config.Config) { c.Prices = nil })
	if status, _, body := s.do("/v1/chat/completions", chatBody, nil); status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	waitWithin(t, 15*time.Second, 5*time.Millisecond, "the request's log line", func() bool { return strings.Contains(s.logText(), "msg=request ") })
	for _, d := range []string{"input", "output"} {
		if v := seriesValue(t, s, `sluice_tokens_total{direction="`+d+`",key="-",model="mock-gpt",provider="mock-openai",source="reported"}`); v <= 0 {
			t.Errorf("%s tokens %v with the default config, want the provider's count", d, v)
		}
	}
}

// A client that leaves mid-stream still appears in the token metrics,
// with what was relayed to it.
func TestCancelledStreamIsCounted(t *testing.T) {
	release := make(chan struct{})
	s := chargeStack(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		send := sse(w)
		openAIWords(send, 5)
		select { // until the client's leaving reaches here, or the test ends
		case <-r.Context().Done():
		case <-release:
		}
	}, nil)
	defer close(release)
	resp, err := s.post(context.Background(), "/v1/chat/completions", `{"model":"mock-gpt","stream":true,"messages":[{"role":"user","content":"hi"}]}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	for seen := 0; seen < 5 && sc.Scan(); {
		if strings.Contains(sc.Text(), `"content"`) {
			seen++
		}
	}
	resp.Body.Close() // the client leaves
	waitWithin(t, 15*time.Second, 5*time.Millisecond, "the request's log line", func() bool { return strings.Contains(s.logText(), "msg=request ") })
	if v := seriesValue(t, s, `sluice_tokens_total{direction="output",key="-",model="mock-gpt",provider="mock-openai",source="estimated"}`); v != 5 {
		t.Errorf("output tokens %v for the stream the client left, want the 5 relayed", v)
	}
}

// In a fleet, a key's budget lives in the shared store, and
// sluice_budget_reserved shows what this replica's requests hold of it:
// 500 output tokens while a request with max_tokens 500 is in flight,
// none once it is answered.
func TestFleetBudgetReserved(t *testing.T) {
	addr := redistest.Addr(t)
	release := make(chan struct{})
	called := make(chan struct{}, 1)
	s := chargeStack(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		called <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c","object":"chat.completion","created":1,"model":"up","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
	}, func(c *config.Config) {
		c.Store = "redis://" + addr + "/0"
		c.Fleet.Prefix = fmt.Sprintf("sluicetest:reserved:%d:", time.Now().UnixNano())
		c.Fleet.ID = "replica-0"
		c.Fleet.Timeout = config.Duration(200 * time.Millisecond)
		c.Keys = []config.Key{{Name: "k", SHA256: config.KeyHash("sk-k"), Limits: config.Limits{OTPM: 100_000}}}
	})
	const series = `sluice_budget_reserved{dimension="output_tokens",name="k",owner="key"}`
	done := make(chan int, 1)
	go func() {
		resp, err := s.post(context.Background(), "/v1/chat/completions", `{"model":"mock-gpt","max_tokens":500,"messages":[{"role":"user","content":"hi"}]}`, bearer("sk-k"))
		if err != nil {
			done <- 0
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	select {
	case <-called:
	case st := <-done:
		close(release)
		t.Fatalf("the request ended (%d) before reaching the provider", st)
	case <-time.After(30 * time.Second):
		close(release)
		t.Fatal("the request never reached the provider")
	}
	v := seriesValue(t, s, series)
	close(release)
	if v != 500 {
		t.Errorf("%s = %v with a max_tokens 500 request in flight, want 500", series, v)
	}
	if st := <-done; st != 200 {
		t.Fatalf("status %d", st)
	}
	waitWithin(t, 15*time.Second, 5*time.Millisecond, "nothing reserved once answered", func() bool { return seriesValue(t, s, series) == 0 })
}
