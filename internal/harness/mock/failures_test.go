package mock

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestForcedStatusFailures(t *testing.T) {
	s, url := startMock(t, instant())
	for _, c := range []struct {
		path, fail string
		status     int
		errType    string
	}{
		{"/v1/chat/completions", "429", 429, "rate_limit_error"},
		{"/v1/chat/completions", "500", 500, "server_error"},
		{"/v1/embeddings", "503", 503, "server_error"},
		{"/v1/messages", "529", 529, "overloaded_error"},
		{"/v1/messages", "429", 429, "rate_limit_error"},
		{"/v1/messages", "500", 500, "api_error"},
	} {
		body := tinyChat
		if c.path == "/v1/messages" {
			body = tinyMessages
		}
		if c.path == "/v1/embeddings" {
			body = `{"input":"x"}`
		}
		resp := postJSON(t, context.Background(), url+c.path, body, HeaderFail, c.fail, HeaderRetryAfter, "1500ms")
		m := decode(t, resp, c.status)
		got := path(m, "error", "type")
		if got != c.errType {
			t.Errorf("%s %s: error type %v, want %s (%v)", c.path, c.fail, got, c.errType, m)
		}
		if strings.HasPrefix(c.path, "/v1/messages") && m["type"] != "error" {
			t.Errorf("%s: Anthropic error lacks type: %v", c.path, m)
		}
		if ra := resp.Header.Get("retry-after"); ra != "2" {
			t.Errorf("%s %s: retry-after %q, want 2", c.path, c.fail, ra)
		}
		if ms := resp.Header.Get("retry-after-ms"); (c.status == 429) != (ms == "1500") {
			t.Errorf("%s %s: retry-after-ms %q", c.path, c.fail, ms)
		}
	}
	if st := s.Stats(); st.ErrorsInjected != 6 || st.Completed != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestConfiguredFailureRateAndWindow(t *testing.T) {
	var offset atomic.Int64
	epoch := time.Now()
	cfg := instant()
	cfg.Failures = []Failure{
		{Kind: FailStatus, Status: 503, Rate: 0.5},
		{Kind: FailStatus, Status: 429, Start: time.Minute, End: 2 * time.Minute},
	}
	url, stop, err := NewWithClock(cfg, func() time.Time { return epoch.Add(time.Duration(offset.Load())) }).Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	count := map[int]int{}
	for range 100 {
		resp := postJSON(t, context.Background(), url+"/v1/chat/completions", tinyChat)
		io.Copy(io.Discard, resp.Body)
		count[resp.StatusCode]++
	}
	if count[503] < 30 || count[503] > 70 || count[200]+count[503] != 100 {
		t.Errorf("before the window: %v, want about half 503", count)
	}
	offset.Store(int64(90 * time.Second))
	count = map[int]int{}
	for range 20 {
		resp := postJSON(t, context.Background(), url+"/v1/chat/completions", tinyChat)
		io.Copy(io.Discard, resp.Body)
		count[resp.StatusCode]++
	}
	if count[200] != 0 || count[429] == 0 {
		t.Errorf("inside the 429 window: %v", count)
	}
}

func TestResetBeforeResponse(t *testing.T) {
	s, url := startMock(t, instant())
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", strings.NewReader(tinyChat))
	req.Header.Set(HeaderFail, "reset")
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("reset produced a response: %d", resp.StatusCode)
	}
	// The client can see the reset before the handler has returned.
	eventually(t, "the reset to be counted", func() bool {
		st := s.Stats()
		return st.ErrorsInjected == 1 && st.InFlight == 0
	})
}

func TestResetMidStream(t *testing.T) {
	_, url := startMock(t, instant())
	body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	resp := postJSON(t, context.Background(), url+"/v1/chat/completions", body, HeaderFail, "reset:2")
	evs, err := newSSE(resp.Body).all()
	if err == nil {
		t.Fatal("stream ended cleanly despite reset")
	}
	if len(evs) != 3 { // role chunk + 2 tokens
		t.Errorf("got %d events before the reset, want 3: %v", len(evs), evs)
	}
}

func TestTruncate(t *testing.T) {
	s, url := startMock(t, instant())
	for _, p := range []string{"/v1/chat/completions", "/v1/messages"} {
		body := `{"model":"m","stream":true,"max_tokens":99,"messages":[{"role":"user","content":"hi"}]}`
		resp := postJSON(t, context.Background(), url+p, body, HeaderOutputTokens, "6", HeaderFail, "truncate")
		evs, err := newSSE(resp.Body).all()
		if err == nil {
			t.Errorf("%s: truncated stream ended without an error", p)
		}
		var tokens int
		for _, ev := range evs {
			if ev.data == "[DONE]" || ev.name == "message_stop" || ev.name == "message_delta" {
				t.Errorf("%s: truncated stream has final event %v", p, ev)
			}
			if ev.name == "content_block_delta" || strings.Contains(ev.data, `"content":" `) {
				tokens++
			}
		}
		if tokens != 3 {
			t.Errorf("%s: %d tokens before the cut, want half of 6", p, tokens)
		}
	}
	resp := postJSON(t, context.Background(), url+"/v1/chat/completions", tinyChat, HeaderFail, "truncate")
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Error("truncated non-streaming body read without error")
	}
	eventually(t, "three injected errors", func() bool { return s.Stats().ErrorsInjected == 3 })
}

func TestMalformed(t *testing.T) {
	_, url := startMock(t, instant())
	resp := postJSON(t, context.Background(), url+"/v1/messages", tinyMessages, HeaderFail, "malformed")
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || json.Valid(b) {
		t.Errorf("malformed: %d %s", resp.StatusCode, b)
	}
	resp = postJSON(t, context.Background(), url+"/v1/chat/completions", `{"stream":true,"messages":[{"role":"user","content":"hi"}]}`, HeaderFail, "malformed")
	evs, _ := newSSE(resp.Body).all()
	if resp.StatusCode != 200 || len(evs) != 1 || json.Valid([]byte(evs[0].data)) {
		t.Errorf("malformed stream: %d %v", resp.StatusCode, evs)
	}
}

func TestHangCountsAsCancelled(t *testing.T) {
	s, url := startMock(t, instant())
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions", strings.NewReader(tinyChat))
	req.Header.Set(HeaderFail, "hang")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatal("hang answered")
	}
	eventually(t, "the hang to be counted", func() bool {
		st := s.Stats()
		return st.CancelledByClient == 1 && st.ErrorsInjected == 1 && st.InFlight == 0
	})
}
