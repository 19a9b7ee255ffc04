package loadgen

import (
	"context"
	"encoding/json"
	"math"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/sim/report"
	"github.com/sluice-gw/sluice/internal/sim/scenario"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

func TestRequestShape(t *testing.T) {
	g := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) { answerOK(w) })
	mustRun(t, loadScenario(t, "basic.yaml", one), Options{Target: g.url + "/v1/"})
	g2 := newFake(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		sse(w, r, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	})
	mustRun(t, loadScenario(t, "basic.yaml", func(s *scenario.Scenario) {
		one(s)
		s.Clients.Model = "claude"
		s.Clients.Stream = true
		s.Clients.PromptTokens.Min, s.Clients.PromptTokens.Max = 10, 20
	}), Options{Target: g2.url})

	type body struct {
		Model    string
		Messages []struct{ Role, Content string }
		// Pointers tell an absent field from a zero.
		MaxTokens *int  `json:"max_tokens"`
		Stream    *bool `json:"stream"`
	}
	check := func(h hit, path string, tokens [2]int, maxTokens int, stream bool) {
		t.Helper()
		var b body
		if err := json.Unmarshal(h.body, &b); err != nil {
			t.Fatalf("%s: body %q: %v", path, h.body, err)
		}
		if h.path != path || len(b.Messages) != 1 || b.Messages[0].Role != "user" {
			t.Fatalf("%s: got path %s, body %s", path, h.path, h.body)
		}
		if n := len(b.Messages[0].Content); n < 4*tokens[0] || n > 4*tokens[1] {
			t.Errorf("%s: prompt of %d characters, want %d..%d tokens of 4", path, n, tokens[0], tokens[1])
		}
		if (b.MaxTokens == nil) != (maxTokens == 0) || (b.MaxTokens != nil && *b.MaxTokens != maxTokens) {
			t.Errorf("%s: max_tokens %v, want %d", path, b.MaxTokens, maxTokens)
		}
		if (b.Stream != nil && *b.Stream) != stream {
			t.Errorf("%s: stream %v, want %v", path, b.Stream, stream)
		}
		if h.hdr.Get("X-Sluice-Priority") != "interactive" || h.hdr.Get("Content-Type") != "application/json" {
			t.Errorf("%s: headers %v", path, h.hdr)
		}
	}
	h := g.seen()
	if len(h) != 1 {
		t.Fatalf("openai: %d requests, want 1", len(h))
	}
	check(h[0], "/v1/chat/completions", [2]int{16, 16}, 0, false)
	if b := string(h[0].body); !strings.Contains(b, `"model":"gpt"`) {
		t.Errorf("openai body %s names the wrong model", b)
	}
	h = g2.seen()
	if len(h) != 1 {
		t.Fatalf("anthropic: %d requests, want 1", len(h))
	}
	check(h[0], "/v1/messages", [2]int{10, 20}, 256, true)
	if v := h[0].hdr.Get("Anthropic-Version"); v != "2023-06-01" {
		t.Errorf("anthropic-version %q", v)
	}
}

func TestPrioritiesBySharesAndSeed(t *testing.T) {
	g := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) { answerOK(w) })
	f := loadScenario(t, "basic.yaml", func(s *scenario.Scenario) {
		s.Duration = 500 * ms
		s.Clients.Rate = []scenario.RateStep{{RPS: 2000}}
		s.Clients.Priorities = map[string]float64{"critical": 2, "interactive": 5, "background": 3}
	})
	row := mustRun(t, f, Options{Target: g.url})
	got := map[string]int{}
	for _, h := range g.seen() {
		got[h.hdr.Get("X-Sluice-Priority")]++
	}
	if row.Unique != 1000 {
		t.Fatalf("issued %d, want 1000", row.Unique)
	}
	for i, share := range []float64{.2, .5, .3} {
		name := report.Priorities[i]
		if n := got[name]; math.Abs(float64(n)/1000-share) > 0.05 {
			t.Errorf("%s: %d of 1000, want about %.0f%%", name, n, share*100)
		}
		if row.ByPriority[i].Total() != got[name] {
			t.Errorf("%s: row has %d, server saw %d", name, row.ByPriority[i].Total(), got[name])
		}
	}
	// The draw is seeded: a second run sends the same mix. Only the
	// counts per priority are compared: on a busy machine some answers
	// may come late the second time, which changes outcomes, not the mix.
	g2 := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) { answerOK(w) })
	again := mustRun(t, f, Options{Target: g2.url})
	for i := range row.ByPriority {
		if a, b := again.ByPriority[i].Total(), row.ByPriority[i].Total(); a != b {
			t.Errorf("%s: the second run sent %d, the first %d", report.Priorities[i], a, b)
		}
	}
}

func TestRetryStrategies(t *testing.T) {
	for _, c := range []struct {
		name     string
		retry    scenario.Retry
		hintMs   int
		attempts int
		min, max []time.Duration // bounds on each gap between attempts
	}{
		{name: "none", retry: scenario.Retry{Strategy: "none", MaxAttempts: 5}, attempts: 1},
		{name: "default is none", attempts: 1},
		{name: "immediate", retry: scenario.Retry{Strategy: "immediate"}, attempts: 3,
			min: []time.Duration{0, 0}, max: []time.Duration{60 * ms, 60 * ms}},
		{name: "backoff doubles to the cap", retry: scenario.Retry{Strategy: "backoff", MaxAttempts: 4, Base: 40 * ms, Cap: 60 * ms}, attempts: 4,
			min: []time.Duration{40 * ms, 60 * ms, 60 * ms}, max: []time.Duration{100 * ms, 120 * ms, 120 * ms}},
		{name: "backoff ignores retry-after", retry: scenario.Retry{Strategy: "backoff", MaxAttempts: 2, Base: 20 * ms}, hintMs: 400, attempts: 2,
			min: []time.Duration{20 * ms}, max: []time.Duration{150 * ms}},
		{name: "jittered stays under the cap", retry: scenario.Retry{Strategy: "jittered", MaxAttempts: 4, Base: 30 * ms, Cap: 30 * ms}, attempts: 4,
			min: []time.Duration{0, 0, 0}, max: []time.Duration{90 * ms, 90 * ms, 90 * ms}},
		{name: "jittered honours retry-after-ms", retry: scenario.Retry{Strategy: "jittered", MaxAttempts: 3, Base: 10 * ms, Cap: 20 * ms}, hintMs: 150, attempts: 3,
			min: []time.Duration{150 * ms, 150 * ms}, max: []time.Duration{250 * ms, 250 * ms}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) { answerShed(w, c.hintMs) })
			row := mustRun(t, loadScenario(t, "basic.yaml", func(s *scenario.Scenario) {
				one(s)
				s.Clients.Retry = c.retry
			}), Options{Target: g.url})
			hits := g.seen()
			if len(hits) != c.attempts || row.Attempts != c.attempts || row.Unique != 1 || row.Counts[report.Shed] != 1 {
				t.Fatalf("server saw %d, row: attempts %d unique %d counts %v; want %d attempts, one shed", len(hits), row.Attempts, row.Unique, row.Counts, c.attempts)
			}
			if n := len(row.Rejection[1]); n != c.attempts {
				t.Errorf("%d rejection samples, want one per attempt (%d)", n, c.attempts)
			}
			for i, gap := range gaps(hits) {
				if gap < c.min[i] || gap > c.max[i] {
					t.Errorf("gap %d: %v, want %v..%v", i+1, gap, c.min[i], c.max[i])
				}
			}
		})
	}
}

func TestRetryThenSuccess(t *testing.T) {
	g := newFake(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n < 2 {
			answerShed(w, 0)
			return
		}
		answerOK(w)
	})
	row := mustRun(t, loadScenario(t, "basic.yaml", func(s *scenario.Scenario) {
		one(s)
		s.Clients.Retry = scenario.Retry{Strategy: "backoff", Base: 50 * ms}
	}), Options{Target: g.url})
	if row.Counts[report.OK] != 1 || row.Attempts != 3 || row.Amplification() != 3 {
		t.Fatalf("counts %v, attempts %d; want OK after 3 attempts", row.Counts, row.Attempts)
	}
	// Latency is the user's: from the first attempt, retries included.
	if l := row.Latency[1][0]; l < 150*ms {
		t.Errorf("latency %v, want at least the 50+100ms of backoff", l)
	}
}

func TestNoRetryPastPatience(t *testing.T) {
	g := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) { answerShed(w, 0) })
	row := mustRun(t, loadScenario(t, "basic.yaml", func(s *scenario.Scenario) {
		one(s)
		s.Clients.Patience = time.Second
		s.Clients.Retry = scenario.Retry{Strategy: "backoff", MaxAttempts: 5, Base: 600 * ms}
	}), Options{Target: g.url})
	// 0 ms, then 600 ms; the next would go out at 1.8 s, past patience.
	// The second answer has 400 ms to come back before patience ends,
	// room enough for a busy machine (50 ms was not, under -race -count=20
	// beside a CPU hog).
	if row.Attempts != 2 || row.Counts[report.Shed] != 1 {
		t.Errorf("attempts %d, counts %v; want 2 attempts then give up shed", row.Attempts, row.Counts)
	}
}

func TestClassification(t *testing.T) {
	const (
		openaiErr    = `{"error":{"message":"x","type":"server_error"}}`
		anthropicOvl = `{"type":"error","error":{"type":"overloaded_error","message":"busy"}}`
	)
	for _, c := range []struct {
		name     string
		answer   func(w http.ResponseWriter, r *http.Request)
		want     report.Outcome
		attempts int // with up to two attempts, immediate
	}{
		{"200 json", func(w http.ResponseWriter, _ *http.Request) { answerOK(w) }, report.OK, 1},
		{"200 malformed", func(w http.ResponseWriter, _ *http.Request) { answerStatus(w, 200, `{"id":`) }, report.Failed, 1},
		{"503 overloaded", func(w http.ResponseWriter, _ *http.Request) { answerShed(w, 0) }, report.Shed, 2},
		{"529 overloaded", func(w http.ResponseWriter, _ *http.Request) { answerStatus(w, 529, anthropicOvl) }, report.Shed, 2},
		{"503 not a shed", func(w http.ResponseWriter, _ *http.Request) { answerStatus(w, 503, openaiErr) }, report.Failed, 2},
		{"504", func(w http.ResponseWriter, _ *http.Request) { answerStatus(w, 504, openaiErr) }, report.TimedOut, 1},
		{"429", func(w http.ResponseWriter, _ *http.Request) { answerStatus(w, 429, openaiErr) }, report.RateLimited, 2},
		{"413", func(w http.ResponseWriter, _ *http.Request) { answerStatus(w, 413, openaiErr) }, report.Failed, 1},
		{"500", func(w http.ResponseWriter, _ *http.Request) { answerStatus(w, 500, openaiErr) }, report.Failed, 2},
		{"400", func(w http.ResponseWriter, _ *http.Request) { answerStatus(w, 400, openaiErr) }, report.Failed, 1},
		{"stream error event", func(w http.ResponseWriter, r *http.Request) {
			sse(w, r, "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n", "data: "+openaiErr+"\n\n")
		}, report.Failed, 1},
		{"anthropic stream error event", func(w http.ResponseWriter, r *http.Request) {
			sse(w, r, "event: error\ndata: "+anthropicOvl+"\n\n")
		}, report.Failed, 1},
		{"truncated stream", func(w http.ResponseWriter, r *http.Request) {
			sse(w, r, "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n")
		}, report.Failed, 1},
		{"malformed stream event", func(w http.ResponseWriter, r *http.Request) {
			sse(w, r, "data: {\"choices\":[{\"del\n\n", "data: [DONE]\n\n")
		}, report.Failed, 1},
		{"complete stream", func(w http.ResponseWriter, r *http.Request) {
			sse(w, r, "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n", "data: [DONE]\n\n")
		}, report.OK, 1},
		{"reset before a status", func(w http.ResponseWriter, _ *http.Request) {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.(*net.TCPConn).SetLinger(0)
				conn.Close()
			}
		}, report.Lost, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := newFake(t, func(_ int, w http.ResponseWriter, r *http.Request) { c.answer(w, r) })
			row := mustRun(t, loadScenario(t, "basic.yaml", func(s *scenario.Scenario) {
				one(s)
				s.Clients.Retry = scenario.Retry{Strategy: "immediate", MaxAttempts: 2}
			}), Options{Target: g.url})
			if row.Counts[c.want] != 1 || row.Attempts != c.attempts {
				t.Errorf("counts %v after %d attempts; want %v after %d", row.Counts, row.Attempts, c.want, c.attempts)
			}
		})
	}
}

// Every shed answer's latency counts in the rejections; only those that
// never reached a provider (no X-Sluice-Attempts) count as refused, the
// others having been answered early with their call already upstream.
func TestRefusedAreShedAnswersThatReachedNoProvider(t *testing.T) {
	g := newFake(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n%2 == 1 {
			w.Header().Set("X-Sluice-Attempts", "1")
		}
		answerShed(w, 0)
	})
	row := mustRun(t, loadScenario(t, "basic.yaml", func(s *scenario.Scenario) {
		one(s)
		s.Clients.Retry = scenario.Retry{Strategy: "immediate", MaxAttempts: 4}
	}), Options{Target: g.url})
	var shed, refused int
	for p := range row.Rejection {
		shed += len(row.Rejection[p])
		refused += len(row.Refused[p])
	}
	if row.Attempts != 4 || shed != 4 || refused != 2 {
		t.Errorf("%d attempts, %d shed answers, %d refused; want 4, 4 and the 2 without X-Sluice-Attempts", row.Attempts, shed, refused)
	}
}

func TestAbandonAtPatienceCancelsTheRequest(t *testing.T) {
	var cancelledAfter atomic.Int64
	g := newFake(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		select {
		case <-r.Context().Done():
			cancelledAfter.Store(int64(time.Since(start)))
		case <-time.After(5 * time.Second):
			answerOK(w)
		}
	})
	start := time.Now()
	row := mustRun(t, loadScenario(t, "basic.yaml", func(s *scenario.Scenario) {
		one(s)
		s.Clients.Patience = 200 * ms
		s.Clients.Retry = scenario.Retry{Strategy: "immediate"}
	}), Options{Target: g.url})
	if row.Counts[report.TimedOut] != 1 || row.Attempts != 1 {
		t.Errorf("counts %v, attempts %d; want one timedOut, not retried", row.Counts, row.Attempts)
	}
	deadline := time.Now().Add(time.Second)
	for cancelledAfter.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * ms)
	}
	if d := time.Duration(cancelledAfter.Load()); d < 150*ms || d > 600*ms {
		t.Errorf("server saw the cancel after %v, want about 200ms", d)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("run took %v; an abandoned request should not hold it", took)
	}
}

func TestLateWhenNotAbandoning(t *testing.T) {
	g := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		time.Sleep(250 * ms)
		answerOK(w)
	})
	row := mustRun(t, loadScenario(t, "basic.yaml", func(s *scenario.Scenario) {
		one(s)
		s.Clients.Patience = 100 * ms
		s.Clients.Abandon = boolp(false)
	}), Options{Target: g.url})
	if row.Counts[report.Late] != 1 || len(row.Latency[1]) != 0 {
		t.Errorf("counts %v, %d latency samples; want one late and no OK latency", row.Counts, len(row.Latency[1]))
	}
}

func TestLostWhenNothingListens(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	row := mustRun(t, loadScenario(t, "basic.yaml", func(s *scenario.Scenario) {
		one(s)
		s.Clients.Retry = scenario.Retry{Strategy: "immediate", MaxAttempts: 3}
	}), Options{Target: "http://" + addr})
	if row.Counts[report.Lost] != 1 || row.Attempts != 3 {
		t.Errorf("counts %v after %d attempts; want lost after 3", row.Counts, row.Attempts)
	}
}

func TestStreamingTTFT(t *testing.T) {
	openai := func(w http.ResponseWriter, r *http.Request) {
		sse(w, r,
			"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n",
			150*ms, "data: {\"choices\":[{\"delta\":{\"content\":\" hi\"}}]}\n\n",
			100*ms, "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n", "data: [DONE]\n\n")
	}
	anthropic := func(w http.ResponseWriter, r *http.Request) {
		sse(w, r,
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n",
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
			150*ms, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\" hi\"}}\n\n",
			100*ms, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"}}\n\n",
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	}
	// Not streaming: TTFT is the headers, which come well before the body.
	slowBody := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		time.Sleep(250 * ms)
		w.Write([]byte(`{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}]}`))
	}
	for _, c := range []struct {
		name, model      string
		stream           bool
		answer           func(http.ResponseWriter, *http.Request)
		ttftMin, ttftMax time.Duration
	}{
		{"openai", "gpt", true, openai, 150 * ms, 240 * ms},
		{"anthropic", "claude", true, anthropic, 150 * ms, 240 * ms},
		{"not streaming", "gpt", false, slowBody, 0, 100 * ms},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := newFake(t, func(_ int, w http.ResponseWriter, r *http.Request) { c.answer(w, r) })
			row := mustRun(t, loadScenario(t, "basic.yaml", func(s *scenario.Scenario) {
				one(s)
				s.Clients.Model, s.Clients.Stream = c.model, c.stream
			}), Options{Target: g.url})
			if row.Counts[report.OK] != 1 {
				t.Fatalf("counts %v, want one OK", row.Counts)
			}
			ttft, lat := row.TTFT[1][0], row.Latency[1][0]
			if ttft < c.ttftMin || ttft > c.ttftMax || lat < 250*ms {
				t.Errorf("TTFT %v (want %v..%v), latency %v (want >= 250ms)", ttft, c.ttftMin, c.ttftMax, lat)
			}
		})
	}
}

// A client that abandons at patience tells the gateway how much is left
// with each attempt; one that waits, or is told not to, sends nothing.
func TestDeadlineHeader(t *testing.T) {
	for _, tc := range []struct {
		name   string
		set    func(*scenario.Clients)
		header bool
	}{
		{"abandoning", func(c *scenario.Clients) { c.Patience = 2 * time.Second }, true},
		{"waiting", func(c *scenario.Clients) { c.Patience, c.Abandon = 2*time.Second, new(false) }, false},
		{"told not to", func(c *scenario.Clients) { c.Patience, c.SendDeadline = 2*time.Second, new(false) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) { answerOK(w) })
			mustRun(t, loadScenario(t, "basic.yaml", func(s *scenario.Scenario) { one(s); tc.set(&s.Clients) }), Options{Target: g.url})
			h := g.seen()
			if len(h) != 1 {
				t.Fatalf("%d requests", len(h))
			}
			v := h[0].hdr.Get("X-Sluice-Timeout")
			if !tc.header {
				if v != "" {
					t.Errorf("X-Sluice-Timeout %q, want none", v)
				}
				return
			}
			d, err := time.ParseDuration(v)
			if err != nil || d <= time.Second || d > 2*time.Second {
				t.Errorf("X-Sluice-Timeout %q, want the 2 s patience less the time to send", v)
			}
		})
	}
}

// Several targets are a fleet: attempts go to each in turn.
func TestTargetsRoundRobin(t *testing.T) {
	a := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) { answerOK(w) })
	b := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) { answerOK(w) })
	f := loadScenario(t, "basic.yaml", func(s *scenario.Scenario) {
		s.Duration = 500 * time.Millisecond
		s.Clients.Rate = []scenario.RateStep{{RPS: 200}}
	})
	row := mustRun(t, f, Options{Target: a.url + "," + b.url})
	na, nb := len(a.seen()), len(b.seen())
	if na+nb != row.Attempts || na-nb > 1 || nb-na > 1 {
		t.Fatalf("%d and %d attempts at the two targets (of %d): want them taken in turn", na, nb, row.Attempts)
	}
}

// An answer counts only in the request's own dialect: a gateway that
// hands an OpenAI client an Anthropic message (or the reverse), whole or
// streamed, failed it, however fast it was.
func TestAnswersHeldToTheClientsDialect(t *testing.T) {
	openaiJSON := `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}]}`
	anthropicJSON := `{"id":"msg_x","type":"message","role":"assistant","content":[{"type":"text","text":"hi"}]}`
	openaiSSE := "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n"
	anthropicSSE := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	for _, c := range []struct {
		name   string
		d      protocol.Dialect
		stream bool
		body   string
		want   report.Outcome
	}{
		{"openai whole", protocol.OpenAI, false, openaiJSON, report.OK},
		{"anthropic whole", protocol.Anthropic, false, anthropicJSON, report.OK},
		{"openai client, anthropic answer", protocol.OpenAI, false, anthropicJSON, report.Failed},
		{"anthropic client, openai answer", protocol.Anthropic, false, openaiJSON, report.Failed},
		{"openai stream", protocol.OpenAI, true, openaiSSE, report.OK},
		{"anthropic stream", protocol.Anthropic, true, anthropicSSE, report.OK},
		{"openai client, anthropic stream", protocol.OpenAI, true, anthropicSSE, report.Failed},
		{"anthropic client, openai stream", protocol.Anthropic, true, openaiSSE, report.Failed},
	} {
		var a attempt
		if c.stream {
			readStream(context.Background(), strings.NewReader(c.body), c.d, &a)
		} else {
			readJSON(context.Background(), strings.NewReader(c.body), c.d, &a)
		}
		if a.outcome != c.want {
			t.Errorf("%s: %s (%v), want %s", c.name, a.outcome, a.err, c.want)
		}
	}
}
