package mock

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/internal/wire/native/nativetest"
	"github.com/sluice-gw/sluice/internal/wire/vendors"
)

// startToy serves cfg with the toy native API registered.
func startToy(t *testing.T, cfg Config) (*Server, string) {
	t.Helper()
	undo := vendors.Register(nativetest.Kind("toy"))
	t.Cleanup(undo)
	return startMock(t, cfg)
}

const toyBody = `{"system":"be brief","turns":[{"who":"user","text":"hello"}],"limit":50}`

// toyEvents reads a toy stream's events until it ends or fails.
func toyEvents(t *testing.T, resp *http.Response, until func([]map[string]any) bool) ([]map[string]any, error) {
	t.Helper()
	var evs []map[string]any
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var e map[string]any
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("a toy event that is not JSON: %q", line)
		}
		evs = append(evs, e)
		if until != nil && until(evs) {
			return evs, nil
		}
	}
	return evs, sc.Err()
}

func TestNativeWhole(t *testing.T) {
	s, url := startToy(t, instant())
	resp := postJSON(t, context.Background(), url+"/toy/fam%2Fm1:say", toyBody, "X-Toy-Key", "k1", HeaderOutputTokens, "4")
	got := decode(t, resp, 200)
	if got["end"] != "done" || got["out"] != float64(4) || got["in"].(float64) <= 0 || len(strings.Fields(got["text"].(string))) != 4 {
		t.Fatalf("toy answer %v", got)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	last := s.LastRequest()
	if last.Path != "/toy/fam/m1:say" || last.Model != "fam/m1" || last.Header.Get("X-Toy-Key") != "k1" {
		t.Errorf("recorded %s model %q key %q", last.Path, last.Model, last.Header.Get("X-Toy-Key"))
	}
	if !strings.Contains(string(last.Body), `"system":"be brief"`) {
		t.Errorf("recorded hub body %s", last.Body)
	}
}

func TestNativeStreamFlushesAsItGoes(t *testing.T) {
	_, url := startToy(t, instant())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A stall with no end after 2 tokens: the 2 tokens can only be read
	// if each event left as soon as it was made.
	resp := postJSON(t, ctx, url+"/toy/m:stream", toyBody, HeaderFail, "stall:2", HeaderOutputTokens, "6")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	evs, err := toyEvents(t, resp, func(evs []map[string]any) bool { return len(evs) == 2 })
	if err != nil || len(evs) != 2 || evs[0]["text"] == nil || evs[1]["text"] == nil {
		t.Fatalf("events %v, err %v", evs, err)
	}
}

func TestNativeStreamWhole(t *testing.T) {
	_, url := startToy(t, instant())
	resp := postJSON(t, context.Background(), url+"/toy/m:stream", toyBody, HeaderOutputTokens, "3")
	evs, err := toyEvents(t, resp, nil)
	if err != nil || len(evs) != 4 || evs[3]["end"] != "done" || evs[3]["out"] != float64(3) {
		t.Fatalf("events %v, err %v", evs, err)
	}
}

func TestNativeStreamCut(t *testing.T) {
	_, url := startToy(t, instant())
	resp := postJSON(t, context.Background(), url+"/toy/m:stream", toyBody, HeaderFail, "truncate:2", HeaderOutputTokens, "6")
	evs, err := toyEvents(t, resp, nil)
	if !errors.Is(err, io.ErrUnexpectedEOF) || len(evs) != 2 {
		t.Fatalf("events %v, err %v; want 2 tokens and a cut", evs, err)
	}
	for _, e := range evs {
		if e["end"] != nil {
			t.Errorf("a cut stream ended: %v", e)
		}
	}
}

func TestNativeFailure(t *testing.T) {
	s, url := startToy(t, instant())
	for _, tc := range []struct {
		fail   string
		status int
	}{{"429", 429}, {"529", 503}, {"500", 500}} {
		resp := postJSON(t, context.Background(), url+"/toy/m:say", toyBody, HeaderFail, tc.fail, "X-Mock-Retry-After", "3s")
		got := decode(t, resp, tc.status)
		if p, _ := got["problem"].(string); !strings.Contains(p, "injected by sluice mock") {
			t.Errorf("%s: toy error %v", tc.fail, got)
		}
		if tc.status == 429 && (resp.Header.Get("Retry-After") != "3" || got["wait_s"] != float64(3)) {
			t.Errorf("429: Retry-After %q, wait_s %v", resp.Header.Get("Retry-After"), got["wait_s"])
		}
	}
	if st := s.Stats(); st.ErrorsInjected != 3 {
		t.Errorf("stats %+v, want 3 injected errors", st)
	}
}

func TestNativeBadRequest(t *testing.T) {
	_, url := startToy(t, instant())
	got := decode(t, postJSON(t, context.Background(), url+"/toy/m:say", `{"turns":[]}`), 400)
	if p, _ := got["problem"].(string); !strings.Contains(p, "turns") {
		t.Errorf("toy error %v", got)
	}
	resp := postJSON(t, context.Background(), url+"/toy/m:shout", toyBody)
	if resp.StatusCode != 404 {
		t.Errorf("an unknown toy verb: status %d", resp.StatusCode)
	}
}

// The mock serves Gemini's API (this build's gemini kind) with the
// same faults as the others.
func TestGeminiRoutes(t *testing.T) {
	if _, ok := vendors.Lookup("gemini"); !ok {
		t.Skip("this build has no gemini kind")
	}
	s, url := startMock(t, instant())
	const body = `{"contents":[{"role":"user","parts":[{"text":"hello"}]}],"generationConfig":{"maxOutputTokens":20}}`
	for _, path := range []string{"/v1beta/models/gemini-2.5-flash:generateContent",
		"/v1/projects/my-project/locations/us-central1/publishers/google/models/gemini-2.5-pro:generateContent"} {
		got := decode(t, postJSON(t, context.Background(), url+path, body, "X-Goog-Api-Key", "k", HeaderOutputTokens, "3"), 200)
		c, _ := got["candidates"].([]any)
		if len(c) != 1 {
			t.Errorf("%s: %v", path, got)
		}
		if last := s.LastRequest(); last.Path != path || last.Header.Get("X-Goog-Api-Key") != "k" {
			t.Errorf("recorded %s, key %q", last.Path, last.Header.Get("X-Goog-Api-Key"))
		}
	}
	resp := postJSON(t, context.Background(), url+"/v1beta/models/g:streamGenerateContent?alt=sse", body, HeaderOutputTokens, "3")
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") || strings.Count(string(b), "data: ") < 3 {
		t.Errorf("stream: %d %q\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	resp = postJSON(t, context.Background(), url+"/v1beta/models/g:generateContent", body, HeaderFail, "429", "X-Mock-Retry-After", "4s")
	b, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != 429 || !strings.Contains(string(b), "RESOURCE_EXHAUSTED") {
		t.Errorf("429: %d %s", resp.StatusCode, b)
	}
}
