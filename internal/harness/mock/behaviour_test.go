package mock

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

const ms = time.Millisecond

// serve runs one request in-process and reports how long it took on the
// (fake, inside synctest) clock.
func serve(s *Server, path, body string, hdr ...string) (*httptest.ResponseRecorder, time.Duration) {
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	start := time.Now()
	s.ServeHTTP(rec, req)
	return rec, time.Since(start)
}

const tinyChat = `{"model":"m","messages":[{"role":"user","content":"hi"}]}`

// tinyMessages is tinyChat for the Messages API, which requires max_tokens.
const tinyMessages = `{"model":"m","max_tokens":1024,"messages":[{"role":"user","content":"hi"}]}`

func TestBrownoutJudgedByFakeClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var offset atomic.Int64
		epoch := time.Now()
		s := NewWithClock(Config{
			TTFT: 100 * ms, TPOT: 10 * ms, OutputTokens: TokenRange{Min: 3},
			Brownouts: []Brownout{
				{Start: 10 * time.Second, End: 20 * time.Second, Multiplier: 5},
				{Start: 30 * time.Second, Latency: 2 * time.Second},
			},
		}, func() time.Time { return epoch.Add(time.Duration(offset.Load())) })
		for _, c := range []struct{ at, want time.Duration }{
			{0, 120 * ms},
			{10 * time.Second, 600 * ms}, // 5×100ms TTFT + 2 tokens × 5×10ms
			{19 * time.Second, 600 * ms},
			{20 * time.Second, 120 * ms},
			{30 * time.Second, 2020 * ms}, // fixed TTFT, TPOT unchanged
			{time.Hour, 2020 * ms},        // end 0: open-ended
		} {
			offset.Store(int64(c.at))
			rec, took := serve(s, "/v1/chat/completions", tinyChat)
			if rec.Code != http.StatusOK || took != c.want {
				t.Errorf("call at %v: status %d, took %v, want %v", c.at, rec.Code, took, c.want)
			}
		}
	})
}

func TestBrownoutByStartNotEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(Config{
			TTFT: 100 * ms, OutputTokens: TokenRange{Min: 1},
			Brownouts: []Brownout{{Start: time.Second, End: 2 * time.Second, Latency: 500 * ms}},
		})
		time.Sleep(950 * ms) // this call ends inside the window, but began before it
		if _, took := serve(s, "/v1/chat/completions", tinyChat); took != 100*ms {
			t.Errorf("call begun before the window took %v", took)
		}
		time.Sleep(900 * ms) // 1.95s: begins inside, ends after the window
		if _, took := serve(s, "/v1/chat/completions", tinyChat); took != 500*ms {
			t.Errorf("call begun inside the window took %v", took)
		}
	})
}

// A ramp moves a call's latency linearly with when it starts.
func TestBrownoutRamp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(Config{
			TTFT: 100 * ms, OutputTokens: TokenRange{Min: 1},
			Brownouts: []Brownout{{Start: time.Second, End: 5 * time.Second, Latency: time.Second, LatencyTo: 5 * time.Second}},
		})
		time.Sleep(3 * time.Second) // halfway: 3 s
		if _, took := serve(s, "/v1/chat/completions", tinyChat); took != 3*time.Second {
			t.Errorf("call begun halfway up the ramp took %v, want 3s", took)
		}
	})
	if err := (Config{Brownouts: []Brownout{{Start: time.Second, Multiplier: 2, LatencyTo: time.Second}}}).Validate(); err == nil {
		t.Error("a ramp without latency and end was accepted")
	}
}

func TestBrownoutFraction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(Config{Seed: 7, OutputTokens: TokenRange{Min: 1},
			Brownouts: []Brownout{{Fraction: 0.25, Latency: time.Second}}})
		slow := 0
		for range 400 {
			if _, took := serve(s, "/v1/chat/completions", tinyChat); took == time.Second {
				slow++
			}
		}
		if slow < 60 || slow > 140 {
			t.Errorf("%d of 400 calls slowed, want about 100", slow)
		}
	})
}

func TestJitterDistributions(t *testing.T) {
	ttfts := func(j Jitter, seed uint64) []time.Duration {
		s := New(Config{Seed: seed, TTFT: 10 * ms, Jitter: j})
		var out []time.Duration
		for range 2000 {
			p, err := s.newPlan(httptest.NewRequest(http.MethodPost, "/", nil))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, p.ttft)
		}
		return out
	}
	u := ttfts(Jitter{Kind: "uniform", Max: 40 * ms}, 1)
	if slices.Min(u) < 10*ms || slices.Max(u) > 50*ms || slices.Max(u) < 45*ms {
		t.Errorf("uniform jitter range %v..%v", slices.Min(u), slices.Max(u))
	}
	if !slices.Equal(u, ttfts(Jitter{Kind: "uniform", Max: 40 * ms}, 1)) {
		t.Error("same seed drew different jitter")
	}
	l := ttfts(Jitter{Kind: "lognormal", P50: 20 * ms, P99: 200 * ms}, 2)
	slices.Sort(l)
	p50, p99 := l[len(l)/2]-10*ms, l[len(l)*99/100]-10*ms
	if p50 < 17*ms || p50 > 23*ms || p99 < 140*ms || p99 > 280*ms {
		t.Errorf("lognormal jitter p50 %v p99 %v, want about 20ms and 200ms", p50, p99)
	}
}

func TestCapacityQueuesThenRejects(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(Config{TTFT: time.Second, OutputTokens: TokenRange{Min: 1}, MaxRunning: 1, MaxWaiting: 1})
		var (
			wg    sync.WaitGroup
			mu    sync.Mutex
			tooks []time.Duration
		)
		for range 2 {
			wg.Go(func() {
				rec, took := serve(s, "/v1/chat/completions", tinyChat)
				mu.Lock()
				defer mu.Unlock()
				if rec.Code != http.StatusOK {
					t.Errorf("queued call got %d", rec.Code)
				}
				tooks = append(tooks, took)
			})
		}
		synctest.Wait()
		if st := s.Stats(); st.Running != 1 || st.Waiting != 1 || st.InFlight != 2 {
			t.Errorf("stats while busy %+v", st)
		}
		rec, took := serve(s, "/v1/chat/completions", tinyChat)
		if rec.Code != http.StatusServiceUnavailable || took != 0 {
			t.Errorf("third OpenAI call: %d after %v, want immediate 503", rec.Code, took)
		}
		rec, _ = serve(s, "/v1/messages", tinyMessages)
		var e struct{ Error struct{ Type string } }
		json.Unmarshal(rec.Body.Bytes(), &e)
		if rec.Code != 529 || e.Error.Type != "overloaded_error" {
			t.Errorf("third Anthropic call: %d %s", rec.Code, rec.Body)
		}
		wg.Wait()
		slices.Sort(tooks)
		// The queued call's wait is added to its TTFT.
		if !slices.Equal(tooks, []time.Duration{time.Second, 2 * time.Second}) {
			t.Errorf("durations %v, want 1s and 2s", tooks)
		}
		if st := s.Stats(); st.Rejected != 2 || st.Completed != 2 || st.Running != 0 {
			t.Errorf("final stats %+v", st)
		}
	})
}

func TestCapacityNoQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(Config{TTFT: time.Second, OutputTokens: TokenRange{Min: 1}, MaxRunning: 1, MaxWaiting: -1})
		var wg sync.WaitGroup
		wg.Go(func() { serve(s, "/v1/chat/completions", tinyChat) })
		synctest.Wait()
		if rec, _ := serve(s, "/v1/chat/completions", tinyChat); rec.Code != http.StatusServiceUnavailable {
			t.Errorf("got %d, want 503 with no queue", rec.Code)
		}
		wg.Wait()
	})
}

// A failure that replaces the whole call never reaches admission: with
// the only slot taken and no queue, it still answers with its own status
// (the simulator plays it the same way).
func TestEarlyFailureSkipsCapacity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(Config{TTFT: time.Second, OutputTokens: TokenRange{Min: 1}, MaxRunning: 1, MaxWaiting: -1})
		var wg sync.WaitGroup
		wg.Go(func() { serve(s, "/v1/chat/completions", tinyChat) })
		synctest.Wait()
		if rec, took := serve(s, "/v1/chat/completions", tinyChat, HeaderFail, "429"); rec.Code != http.StatusTooManyRequests || took != 0 {
			t.Errorf("got %d after %v, want the injected 429 at once", rec.Code, took)
		}
		if st := s.Stats(); st.Running != 1 || st.Rejected != 0 {
			t.Errorf("stats %+v: the failure must not take a slot or count as a refusal", st)
		}
		wg.Wait()
	})
}

func TestBatchSlowdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The TTFT lets both calls join the batch before either times a token.
		s := New(Config{TTFT: 10 * ms, TPOT: 100 * ms, BatchSlowdown: 0.5, OutputTokens: TokenRange{Min: 3}})
		if _, took := serve(s, "/v1/chat/completions", tinyChat); took != 210*ms {
			t.Errorf("alone: %v, want 210ms", took)
		}
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				if _, took := serve(s, "/v1/chat/completions", tinyChat); took != 310*ms {
					t.Errorf("batched: %v, want 310ms", took)
				}
			})
		}
		wg.Wait()
	})
}

func TestHeaderOverrides(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(Config{TTFT: 10 * ms})
		rec, took := serve(s, "/v1/chat/completions", tinyChat, HeaderLatency, "250ms", HeaderOutputTokens, "7")
		var m map[string]any
		json.Unmarshal(rec.Body.Bytes(), &m)
		if took != 250*ms || path(m, "usage", "completion_tokens") != 7.0 {
			t.Errorf("took %v, body %s", took, rec.Body)
		}
		rec, _ = serve(s, "/v1/chat/completions", tinyChat, HeaderFail, "teapot")
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), HeaderFail) {
			t.Errorf("bad X-Mock-Fail: %d %s", rec.Code, rec.Body)
		}
	})
}

func TestSameSeedSameText(t *testing.T) {
	run := func(seed uint64) []string {
		s := New(Config{Seed: seed})
		var out []string
		for _, path := range []string{"/v1/chat/completions", "/v1/messages", "/v1/chat/completions"} {
			body := tinyChat
			if path == "/v1/messages" {
				body = tinyMessages
			}
			rec, _ := serve(s, path, body)
			var m struct {
				ID      string
				Choices []struct{ Message struct{ Content string } }
				Content []struct{ Text string }
			}
			json.Unmarshal(rec.Body.Bytes(), &m)
			text := ""
			if len(m.Choices) > 0 {
				text = m.Choices[0].Message.Content
			} else if len(m.Content) > 0 {
				text = m.Content[0].Text
			}
			if text == "" {
				t.Fatalf("no text in %s", rec.Body)
			}
			out = append(out, m.ID, text, rec.Header().Get("x-request-id")+rec.Header().Get("request-id"))
		}
		return out
	}
	a, b, c := run(42), run(42), run(43)
	if !slices.Equal(a, b) {
		t.Errorf("same seed, different output:\n%q\n%q", a, b)
	}
	if a[1] == c[1] || a[1] == a[7] {
		t.Errorf("texts should differ across seeds and calls: %q / %q", a, c)
	}
}

func TestNewPanicsOnInvalidConfig(t *testing.T) {
	defer func() {
		if v := recover(); v == nil || !strings.Contains(v.(string), "fraction") {
			t.Errorf("recovered %v", v)
		}
	}()
	New(Config{Brownouts: []Brownout{{Fraction: 2, Multiplier: 2}}})
}
