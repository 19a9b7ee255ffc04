package mock

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// streamAny is a streamed request every generation endpoint takes.
const streamAny = `{"stream":true,"max_tokens":1024,"messages":[{"role":"user","content":"hi"}]}`

func TestStreamArrivesIncrementally(t *testing.T) {
	const tpot = 100 * time.Millisecond
	cfg := Config{TPOT: tpot, OutputTokens: TokenRange{Min: 4}}
	_, url := startMock(t, cfg)
	for _, p := range []string{"/v1/chat/completions", "/v1/completions", "/v1/messages"} {
		start := time.Now()
		resp := postJSON(t, context.Background(), url+p, streamAny)
		sse := newSSE(resp.Body)
		for {
			ev, err := sse.next()
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if ev.name == "content_block_delta" || strings.Contains(ev.data, `" `) {
				break // the first token
			}
		}
		first := time.Since(start)
		if _, err := sse.all(); err != nil {
			t.Fatal(err)
		}
		total := time.Since(start)
		// The last token is due 3 TPOTs after the first.
		if total < 3*tpot || first > total-2*tpot {
			t.Errorf("%s: first token after %v, stream done after %v: not incremental", p, first, total)
		}
	}
}

func TestCancelMidStreamIsCountedPromptly(t *testing.T) {
	s, url := startMock(t, Config{TPOT: time.Second, OutputTokens: TokenRange{Min: 100}})
	for i, p := range []string{"/v1/chat/completions", "/v1/messages"} {
		ctx, cancel := context.WithCancel(context.Background())
		resp := postJSON(t, ctx, url+p, streamAny)
		if _, err := newSSE(resp.Body).next(); err != nil {
			t.Fatal(err)
		}
		cancel()
		start := time.Now()
		eventually(t, "cancelled_by_client", func() bool {
			st := s.Stats()
			return st.CancelledByClient == int64(i+1) && st.InFlight == 0 && st.Running == 0
		})
		if d := time.Since(start); d > 200*time.Millisecond {
			t.Errorf("%s: cancel took %v to reach the mock", p, d)
		}
	}
}

func TestCancelWhileQueuedOrWaitingForFirstToken(t *testing.T) {
	s, url := startMock(t, Config{TTFT: 10 * time.Second, MaxRunning: 1})
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions", strings.NewReader(tinyChat))
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				resp.Body.Close()
			}
			errs <- err
		}()
	}
	eventually(t, "one running and one queued", func() bool {
		st := s.Stats()
		return st.Running == 1 && st.Waiting == 1
	})
	cancel()
	<-errs
	<-errs
	eventually(t, "both cancels counted", func() bool {
		st := s.Stats()
		return st.CancelledByClient == 2 && st.Running == 0 && st.Waiting == 0 && st.InFlight == 0
	})
}

// A client that leaves while still sending its body is a cancel, not a
// bad request.
func TestCancelWhileSendingTheBody(t *testing.T) {
	s, url := startMock(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions", pr)
	req.ContentLength = int64(len(tinyChat)) // the body never finishes
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	pw.Write([]byte(tinyChat[:5]))
	eventually(t, "the call to begin", func() bool { return s.Stats().InFlight == 1 })
	cancel()
	pw.Close()
	<-done
	eventually(t, "the cancel counted", func() bool {
		st := s.Stats()
		return st.CancelledByClient == 1 && st.BadRequests == 0 && st.InFlight == 0
	})
}

func TestStatsEndpointAndReset(t *testing.T) {
	s, url := startMock(t, instant())
	for range 3 {
		decode(t, postJSON(t, context.Background(), url+"/v1/chat/completions", tinyChat), http.StatusOK)
	}
	resp, err := http.Get(url + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	m := decode(t, resp, http.StatusOK)
	resp.Body.Close()
	for _, k := range []string{"in_flight", "peak_in_flight", "completed", "cancelled_by_client", "errors_injected", "running", "waiting", "total"} {
		if _, ok := m[k]; !ok {
			t.Errorf("/stats lacks %s: %v", k, m)
		}
	}
	if m["completed"] != 3.0 || m["total"] != 3.0 || m["peak_in_flight"] != 1.0 {
		t.Errorf("/stats %v", m)
	}
	var st Stats
	b, _ := json.Marshal(decode(t, postJSON(t, context.Background(), url+"/stats/reset", ""), http.StatusOK))
	json.Unmarshal(b, &st)
	if st != (Stats{}) || s.Stats() != (Stats{}) {
		t.Errorf("after reset: %+v / %+v", st, s.Stats())
	}
}

func TestUnknownPathAndMethod(t *testing.T) {
	_, url := startMock(t, instant())
	resp, err := http.Get(url + "/v1/nope")
	if err != nil {
		t.Fatal(err)
	}
	if m := decode(t, resp, http.StatusNotFound); path(m, "error", "message") == nil {
		t.Errorf("404 body %v", m)
	}
	resp.Body.Close()
	resp, err = http.Get(url + "/v1/chat/completions")
	if err != nil {
		t.Fatal(err)
	}
	decode(t, resp, http.StatusMethodNotAllowed)
	resp.Body.Close()
}

func TestStopEndsHungCalls(t *testing.T) {
	s := New(instant())
	url, stop, err := s.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		req, _ := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", strings.NewReader(tinyChat))
		req.Header.Set(HeaderFail, "hang")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	eventually(t, "the hang to start", func() bool { return s.Stats().InFlight == 1 })
	start := time.Now()
	stop()
	stop() // idempotent
	<-done
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("stop took %v", d)
	}
	if s.Stats().InFlight != 0 {
		t.Errorf("calls outlived stop: %+v", s.Stats())
	}
}
