package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/server/gateway"
	"github.com/sluice-gw/sluice/internal/server/redistest"
	"github.com/sluice-gw/sluice/internal/server/usage"
	wholeanswer "github.com/sluice-gw/sluice/internal/wire/answer"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// withCache turns the response cache on for every chat model, with
// set's settings.
func withCache(set config.ModelCache, more ...func(*config.Config)) func(*config.Config) {
	return func(c *config.Config) {
		for i := range c.Models {
			s := set
			c.Models[i].Cache = &s
		}
		for _, f := range more {
			f(c)
		}
	}
}

// cacheDialects are the two APIs' chat requests, whole; stream() makes
// the streamed request of the same meaning.
var cacheDialects = []struct {
	name, path, body string
	hdr              map[string]string
	d                protocol.Dialect
}{
	{"openai", "/v1/chat/completions", `{"model":"mock-gpt","temperature":0,"messages":[{"role":"user","content":"What is a sluice?"}]}`, nil, protocol.OpenAI},
	{"anthropic", "/v1/messages", `{"model":"mock-claude","max_tokens":64,"temperature":0,"messages":[{"role":"user","content":"What is a sluice?"}]}`,
		map[string]string{"anthropic-version": "2023-06-01"}, protocol.Anthropic},
}

// streamed is body with "stream": true, and for OpenAI the usage chunk
// asked for.
func streamed(body string, d protocol.Dialect) string {
	extra := `"stream":true,`
	if d == protocol.OpenAI {
		extra += `"stream_options":{"include_usage":true},`
	}
	return "{" + extra + body[1:]
}

func with(h map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range h {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// The second identical request is a hit, with no upstream call, in the
// client's dialect and mode: a whole answer the same as the first, and
// a streamed request of the same meaning gets that answer as its
// vendor's stream; a stream stored first answers a whole request.
func TestCacheHitWholeAndStreamed(t *testing.T) {
	for _, c := range cacheDialects {
		t.Run(c.name, func(t *testing.T) {
			s := newStack(t, mock.Config{}, withCache(config.ModelCache{}))
			status, h, first := s.do(c.path, c.body, c.hdr)
			if status != 200 || h.Get("X-Sluice-Cache") != "miss" {
				t.Fatalf("first: %d, X-Sluice-Cache %q: %s", status, h.Get("X-Sluice-Cache"), first)
			}
			waitFor(t, "the answer stored", func() bool { return s.counter("sluice_cache_writes_total", "result", "stored") == 1 })
			calls := s.mock.Stats().Total
			status, h, second := s.do(c.path, c.body, c.hdr)
			if status != 200 || h.Get("X-Sluice-Cache") != "hit" || h.Get("Age") == "" {
				t.Fatalf("second: %d, X-Sluice-Cache %q, Age %q", status, h.Get("X-Sluice-Cache"), h.Get("Age"))
			}
			if !bytes.Equal(first, second) {
				t.Errorf("the hit differs from the answer:\n%s\n%s", first, second)
			}
			if got := s.mock.Stats().Total; got != calls {
				t.Errorf("a hit called the provider: %d calls, want %d", got, calls)
			}
			// The same question streamed: the stored answer as a stream.
			status, h, sse := s.do(c.path, streamed(c.body, c.d), c.hdr)
			if status != 200 || h.Get("X-Sluice-Cache") != "hit" || !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("streamed: %d, %q, %q:\n%s", status, h.Get("X-Sluice-Cache"), h.Get("Content-Type"), sse)
			}
			if bytes.Contains(sse, []byte("X-Sluice")) || bytes.Contains(sse, []byte("cache")) {
				t.Errorf("the stream body speaks of the cache:\n%s", sse)
			}
			chk := protocol.NewStreamCheck(c.d)
			if _, ok, _ := chk.Feed(sse); !ok || !chk.Terminated() {
				t.Errorf("the replayed stream is not a whole, well-formed %s stream:\n%s", c.name, sse)
			}
			back, err := wholeanswer.Collect(c.d, sse)
			if err != nil {
				t.Fatalf("the replayed stream does not collect: %v\n%s", err, sse)
			}
			assertSameAnswer(t, c.d, first, back)
			if got := s.mock.Stats().Total; got != calls {
				t.Errorf("a streamed hit called the provider: %d calls, want %d", got, calls)
			}

			// A stream first: its answer, collected, answers the whole
			// request of the same meaning.
			body2 := strings.Replace(c.body, "What is a sluice?", "And a weir?", 1)
			status, h, sse2 := s.do(c.path, streamed(body2, c.d), c.hdr)
			if status != 200 || h.Get("X-Sluice-Cache") != "miss" {
				t.Fatalf("streamed miss: %d, %q", status, h.Get("X-Sluice-Cache"))
			}
			waitFor(t, "the stream stored", func() bool { return s.counter("sluice_cache_writes_total", "result", "stored") == 2 })
			calls = s.mock.Stats().Total
			status, h, whole := s.do(c.path, body2, c.hdr)
			if status != 200 || h.Get("X-Sluice-Cache") != "hit" || s.mock.Stats().Total != calls {
				t.Fatalf("whole after stream: %d, %q, calls %d (want %d)", status, h.Get("X-Sluice-Cache"), s.mock.Stats().Total, calls)
			}
			live, err := wholeanswer.Collect(c.d, sse2)
			if err != nil {
				t.Fatal(err)
			}
			assertSameAnswer(t, c.d, live, whole)
			if s.counter("sluice_cache_requests_total", "result", "hit") != 3 || s.counter("sluice_cache_requests_total", "result", "miss") != 2 {
				t.Errorf("hits %v, misses %v; want 3 and 2", s.counter("sluice_cache_requests_total", "result", "hit"), s.counter("sluice_cache_requests_total", "result", "miss"))
			}
		})
	}
}

// assertSameAnswer: two whole answers say the same to a client: text,
// finish and usage.
func assertSameAnswer(t *testing.T, d protocol.Dialect, a, b []byte) {
	t.Helper()
	fa, err1 := wholeanswer.Inspect(d, a)
	fb, err2 := wholeanswer.Inspect(d, b)
	if err1 != nil || err2 != nil || fa != fb || !fa.Finished || !fa.Usage.Known {
		t.Errorf("facts differ: %+v %v / %+v %v", fa, err1, fb, err2)
	}
	if ta, tb := answerText(t, d, a), answerText(t, d, b); ta != tb || ta == "" {
		t.Errorf("text differs: %q / %q", ta, tb)
	}
}

func answerText(t *testing.T, d protocol.Dialect, whole []byte) string {
	t.Helper()
	v := decode(t, whole)
	if d == protocol.Anthropic {
		var out string
		for _, b := range v["content"].([]any) {
			out += b.(map[string]any)["text"].(string)
		}
		return out
	}
	return v["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"].(string)
}

// One tenant's identical request is a miss for another; requests
// without a key have their own scope.
func TestCacheTenants(t *testing.T) {
	keys := func(c *config.Config) {
		c.Keys = []config.Key{
			{Name: "a1", Tenant: "team-a", SHA256: config.KeyHash("sk-a1")},
			{Name: "a2", Tenant: "team-a", SHA256: config.KeyHash("sk-a2")},
			{Name: "b1", Tenant: "team-b", SHA256: config.KeyHash("sk-b1")},
		}
	}
	s := newStack(t, mock.Config{}, withCache(config.ModelCache{}, keys))
	c := cacheDialects[0]
	ask := func(key string) string {
		status, h, body := s.do(c.path, c.body, map[string]string{"Authorization": "Bearer " + key})
		if status != 200 {
			t.Fatalf("%s: %d %s", key, status, body)
		}
		return h.Get("X-Sluice-Cache")
	}
	if got := ask("sk-a1"); got != "miss" {
		t.Fatalf("first: %s", got)
	}
	waitFor(t, "the answer stored", func() bool { return s.counter("sluice_cache_writes_total", "result", "stored") == 1 })
	if got := ask("sk-a2"); got != "hit" {
		t.Errorf("another key of the same tenant: %s; want hit", got)
	}
	calls := s.mock.Stats().Total
	if got := ask("sk-b1"); got != "miss" {
		t.Errorf("another tenant: %s; want miss", got)
	}
	if s.mock.Stats().Total != calls+1 {
		t.Error("another tenant's request did not reach the provider")
	}
}

// Cache-Control: no-store is answered and never stored; no-cache calls
// the provider and refreshes the entry; max-age accepts only entries
// that young. A key may forbid its clients these controls.
func TestCacheControls(t *testing.T) {
	c := cacheDialects[0]
	t.Run("no-store", func(t *testing.T) {
		s := newStack(t, mock.Config{}, withCache(config.ModelCache{}))
		for i := range 3 {
			status, h, _ := s.do(c.path, c.body, map[string]string{"Cache-Control": "no-store"})
			if status != 200 || h.Get("X-Sluice-Cache") != "miss" {
				t.Fatalf("request %d: %d, %q", i, status, h.Get("X-Sluice-Cache"))
			}
		}
		if s.mock.Stats().Total != 3 || s.counter("sluice_cache_writes_total", "result", "stored") != 0 {
			t.Errorf("%d calls, %v stored; want 3 calls, nothing stored", s.mock.Stats().Total, s.counter("sluice_cache_writes_total", "result", "stored"))
		}
		if _, h, _ := s.do(c.path, c.body, nil); h.Get("X-Sluice-Cache") != "miss" {
			t.Errorf("after no-store: %q; want miss", h.Get("X-Sluice-Cache"))
		}
	})
	t.Run("no-cache and max-age", func(t *testing.T) {
		s := newStack(t, mock.Config{}, withCache(config.ModelCache{}))
		s.do(c.path, c.body, nil)
		waitFor(t, "stored", func() bool { return s.counter("sluice_cache_writes_total", "result", "stored") == 1 })
		calls := s.mock.Stats().Total
		_, h, _ := s.do(c.path, c.body, map[string]string{"Cache-Control": "no-cache"})
		if h.Get("X-Sluice-Cache") != "bypass" || s.mock.Stats().Total != calls+1 {
			t.Errorf("no-cache: %q, %d calls; want bypass and a call", h.Get("X-Sluice-Cache"), s.mock.Stats().Total-calls)
		}
		waitFor(t, "refreshed", func() bool { return s.counter("sluice_cache_writes_total", "result", "stored") == 2 })
		if _, h, _ := s.do(c.path, c.body, map[string]string{"Cache-Control": "max-age=0"}); h.Get("X-Sluice-Cache") != "miss" {
			t.Errorf("max-age=0: %q; want miss", h.Get("X-Sluice-Cache"))
		}
		waitFor(t, "stored again", func() bool { return s.counter("sluice_cache_writes_total", "result", "stored") == 3 })
		if _, h, _ := s.do(c.path, c.body, map[string]string{"Cache-Control": "max-age=3600"}); h.Get("X-Sluice-Cache") != "hit" {
			t.Errorf("max-age=3600: %q; want hit", h.Get("X-Sluice-Cache"))
		}
	})
	t.Run("forbidden to a key", func(t *testing.T) {
		off := false
		s := newStack(t, mock.Config{}, withCache(config.ModelCache{}, func(cfg *config.Config) {
			cfg.Keys = []config.Key{{Name: "k", SHA256: config.KeyHash("sk-k"), Cache: &config.KeyCache{ClientControls: &off}}}
		}))
		hdr := map[string]string{"Authorization": "Bearer sk-k", "Cache-Control": "no-store, no-cache"}
		s.do(c.path, c.body, hdr)
		waitFor(t, "stored despite no-store", func() bool { return s.counter("sluice_cache_writes_total", "result", "stored") == 1 })
		if _, h, _ := s.do(c.path, c.body, hdr); h.Get("X-Sluice-Cache") != "hit" {
			t.Errorf("no-cache from a key without controls: %q; want hit", h.Get("X-Sluice-Cache"))
		}
	})
}

// What may be cached is the operator's to say: a request sampled above
// temperature 0 (or at the provider's default) only with temperature:
// true; a model without cache: only for a key that turns it on; a model
// whose cache is off for any key.
func TestCacheWhatMayBeCached(t *testing.T) {
	c := cacheDialects[0]
	sampled := strings.Replace(c.body, `"temperature":0`, `"temperature":0.7`, 1)
	unnamed := strings.Replace(c.body, `"temperature":0,`, ``, 1)
	t.Run("temperature", func(t *testing.T) {
		s := newStack(t, mock.Config{}, withCache(config.ModelCache{}))
		for _, b := range []string{sampled, unnamed} {
			if _, h, _ := s.do(c.path, b, nil); h.Get("X-Sluice-Cache") != "bypass" {
				t.Errorf("%s: %q; want bypass", b, h.Get("X-Sluice-Cache"))
			}
		}
		s2 := newStack(t, mock.Config{}, withCache(config.ModelCache{Temperature: true}))
		s2.do(c.path, sampled, nil)
		waitFor(t, "stored", func() bool { return s2.counter("sluice_cache_writes_total", "result", "stored") == 1 })
		if _, h, _ := s2.do(c.path, sampled, nil); h.Get("X-Sluice-Cache") != "hit" {
			t.Errorf("with temperature: true: %q; want hit", h.Get("X-Sluice-Cache"))
		}
	})
	t.Run("chat only", func(t *testing.T) {
		s := newStack(t, mock.Config{}, withCache(config.ModelCache{}))
		for _, r := range []struct{ path, body string }{
			{"/v1/embeddings", `{"model":"mock-embed","input":"a sluice"}`},
			{"/v1/responses", `{"model":"mock-gpt","temperature":0,"input":"What is a sluice?"}`},
		} {
			for range 2 {
				status, h, body := s.do(r.path, r.body, nil)
				if status != 200 || h.Get("X-Sluice-Cache") != "bypass" {
					t.Errorf("%s: %d, %q; want 200 and bypass: %s", r.path, status, h.Get("X-Sluice-Cache"), body)
				}
			}
		}
	})
	t.Run("by key", func(t *testing.T) {
		on, off := true, false
		s := newStack(t, mock.Config{}, func(cfg *config.Config) {
			cfg.Models[2].Cache = &config.ModelCache{Enabled: &off} // mock-claude: never
			cfg.Keys = []config.Key{
				{Name: "on", SHA256: config.KeyHash("sk-on"), Cache: &config.KeyCache{Enabled: &on}},
				{Name: "plain", SHA256: config.KeyHash("sk-plain")},
			}
		})
		if _, h, _ := s.do(c.path, c.body, map[string]string{"Authorization": "Bearer sk-plain"}); h.Get("X-Sluice-Cache") != "" {
			t.Errorf("a model and key that say nothing: X-Sluice-Cache %q; want none", h.Get("X-Sluice-Cache"))
		}
		if _, h, _ := s.do(c.path, c.body, map[string]string{"Authorization": "Bearer sk-on"}); h.Get("X-Sluice-Cache") != "miss" {
			t.Errorf("a key that turns it on: %q; want miss", h.Get("X-Sluice-Cache"))
		}
		cl := cacheDialects[1]
		if _, h, _ := s.do(cl.path, cl.body, with(cl.hdr, "Authorization", "Bearer sk-on")); h.Get("X-Sluice-Cache") != "" {
			t.Errorf("a model whose cache is off: %q; want none", h.Get("X-Sluice-Cache"))
		}
	})
}

// Only complete answers are stored: an error, an answer cut at the
// output cap and one past cache.max_entry_bytes are answered and never
// stored.
func TestCacheOnlyCompleteAnswers(t *testing.T) {
	c := cacheDialects[0]
	s := newStack(t, mock.Config{}, withCache(config.ModelCache{}, func(cfg *config.Config) {
		cfg.Cache.MaxEntryBytes = 4 << 10
		cfg.Cache.MaxBytes = 1 << 20
	}))
	if status, _, _ := s.do(c.path, c.body, map[string]string{"X-Mock-Fail": "500"}); status == 200 {
		t.Fatal("the mock did not fail")
	}
	long := map[string]string{"X-Mock-Output-Tokens": "3000"}
	for _, b := range []string{c.body, streamed(c.body, c.d)} {
		if status, _, body := s.do(c.path, b, long); status != 200 {
			t.Fatalf("%d %s", status, body)
		}
	}
	waitFor(t, "both counted too large", func() bool { return s.counter("sluice_cache_writes_total", "result", "too_large") == 2 })
	if n := s.counter("sluice_cache_writes_total", "result", "stored"); n != 0 {
		t.Errorf("%v answers stored; want none", n)
	}
	for _, hdr := range []map[string]string{{"X-Mock-Fail": "500"}, long} {
		if _, h, _ := s.do(c.path, c.body, hdr); h.Get("X-Sluice-Cache") == "hit" {
			t.Errorf("%v: a hit of an answer that was never to be stored", hdr)
		}
	}
}

// A provider that ignores max_tokens is cut at the request's output cap
// (relay_cap.go): the client gets a length stop, and that answer is
// never kept.
func TestCacheNotTheCutAnswer(t *testing.T) {
	c := cacheDialects[0]
	s := newStack(t, mock.Config{}, withCache(config.ModelCache{}), func(o *gateway.Options) { o.Transport = &endlessTransport{text: "word "} })
	capped := strings.Replace(streamed(c.body, c.d), `"temperature":0`, `"temperature":0,"max_tokens":20`, 1)
	for range 2 {
		status, h, body := s.do(c.path, capped, nil)
		if status != 200 || h.Get("X-Sluice-Cache") != "miss" || !bytes.Contains(body, []byte(`"finish_reason":"length"`)) {
			t.Fatalf("%d, %q: %s", status, h.Get("X-Sluice-Cache"), body)
		}
	}
	if s.counter("sluice_cache_writes_total", "result", "incomplete") != 2 || s.counter("sluice_cache_writes_total", "result", "stored") != 0 {
		t.Errorf("writes: incomplete %v, stored %v; want 2 and 0", s.counter("sluice_cache_writes_total", "result", "incomplete"), s.counter("sluice_cache_writes_total", "result", "stored"))
	}
}

// A crafted request cannot read or poison another's entry: one whose
// JSON differs in a field that changes the answer misses; one that
// differs only in spelling, delivery or who it says it is for hits.
func TestCacheCraftedRequests(t *testing.T) {
	c := cacheDialects[0]
	s := newStack(t, mock.Config{}, withCache(config.ModelCache{}))
	s.do(c.path, c.body, nil)
	waitFor(t, "stored", func() bool { return s.counter("sluice_cache_writes_total", "result", "stored") == 1 })
	for _, m := range []struct {
		body, want string
	}{
		{`{"messages":[{"content":"What is a sluice?","role":"user"}],"temperature":0.0,"model":"mock-gpt"}`, "hit"},
		{"{ \"model\":\"mock-gpt\", \"temperature\":0,\n \"messages\":[{\"role\":\"\\u0075ser\",\"content\":\"What is a sluice\\u003f\"}], \"user\":\"mallory\"}", "hit"},
		{`{"model":"mock-gpt","temperature":0,"messages":[{"role":"user","content":"What is a sluice?"}],"seed":1}`, "miss"},
		{`{"model":"mock-gpt","temperature":0,"messages":[{"role":"system","content":"What is a sluice?"}]}`, "miss"},
		{`{"model":"mock-gpt","temperature":0,"messages":[{"role":"user","content":"What is a sluice? "}]}`, "miss"},
		{`{"model":"mock-gpt","temperature":0,"messages":[{"role":"user","content":"What is a sluice?"}],"response_format":{"type":"json_object"}}`, "bypass-or-miss"},
		{`{"model":"mock-gpt","temperature":0,"messages":[{"role":"user","content":"What is a sluice?"}],"tools":[]}`, "miss"},
	} {
		_, h, _ := s.do(c.path, m.body, nil)
		got := h.Get("X-Sluice-Cache")
		if got != m.want && !(m.want == "bypass-or-miss" && got != "hit") {
			t.Errorf("%s: %q; want %s", m.body, got, m.want)
		}
	}
	// A forwarded header that changes the provider's answer is part of
	// the key too.
	if _, h, _ := s.do(c.path, c.body, map[string]string{"X-Mock-Output-Tokens": "3"}); h.Get("X-Sluice-Cache") != "miss" {
		t.Errorf("another forwarded header: %q; want miss", h.Get("X-Sluice-Cache"))
	}
}

// No flood of distinct requests grows the cache past cache.max_bytes.
func TestCacheByteBound(t *testing.T) {
	const maxBytes = 64 << 10
	c := cacheDialects[0]
	s := newStack(t, mock.Config{}, withCache(config.ModelCache{}, func(cfg *config.Config) {
		cfg.Cache.MaxBytes, cfg.Cache.MaxEntryBytes = maxBytes, 16<<10
	}))
	for i := range 60 {
		body := strings.Replace(c.body, "What is a sluice?", fmt.Sprintf("Question %d", i), 1)
		if status, _, _ := s.do(c.path, body, map[string]string{"X-Mock-Output-Tokens": "400"}); status != 200 {
			t.Fatal(status)
		}
		if held := gauge(t, s, `sluice_cache_bytes{model="mock-gpt"}`); held > maxBytes {
			t.Fatalf("after %d answers the cache holds %v bytes; the bound is %d", i+1, held, maxBytes)
		}
	}
	if n := s.counter("sluice_cache_writes_total", "result", "stored"); n != 60 {
		t.Errorf("%v stored; want 60, the oldest evicted", n)
	}
	if held := gauge(t, s, `sluice_cache_bytes{model="mock-gpt"}`); held < maxBytes/2 {
		t.Errorf("the cache holds %v bytes; want it near its bound after the flood", held)
	}
}

// An admin call clears a tenant's or a model's entries.
func TestCacheAdminClear(t *testing.T) {
	s := newStack(t, mock.Config{}, withCache(config.ModelCache{}, func(cfg *config.Config) {
		cfg.Keys = []config.Key{{Name: "a", Tenant: "ta", SHA256: config.KeyHash("sk-a")}, {Name: "b", Tenant: "tb", SHA256: config.KeyHash("sk-b")}}
	}))
	for _, c := range cacheDialects {
		for _, k := range []string{"sk-a", "sk-b"} {
			s.do(c.path, c.body, with(c.hdr, "Authorization", "Bearer "+k))
		}
	}
	waitFor(t, "four stored", func() bool { return s.counter("sluice_cache_writes_total", "result", "stored") == 4 })
	admin := func(method, q string) (int, map[string]any) {
		rec := &responseRecorder{header: http.Header{}}
		req, _ := http.NewRequest(method, "/admin/cache"+q, nil)
		s.gw.AdminHandler().ServeHTTP(rec, req)
		var v map[string]any
		json.Unmarshal([]byte(rec.body.String()), &v)
		return rec.status, v
	}
	if st, _ := admin(http.MethodDelete, ""); st != http.StatusBadRequest {
		t.Errorf("a DELETE that names nothing: %d; want 400", st)
	}
	if _, v := admin(http.MethodDelete, "?tenant=ta&model=mock-gpt"); v["cleared"] != 1.0 {
		t.Errorf("tenant ta's mock-gpt: %v", v)
	}
	if _, v := admin(http.MethodDelete, "?model=mock-claude"); v["cleared"] != 2.0 {
		t.Errorf("mock-claude: %v", v)
	}
	if _, v := admin(http.MethodGet, ""); v["entries"] != 1.0 {
		t.Errorf("left: %v; want tenant tb's mock-gpt", v)
	}
	c := cacheDialects[0]
	if _, h, _ := s.do(c.path, c.body, map[string]string{"Authorization": "Bearer sk-b"}); h.Get("X-Sluice-Cache") != "hit" {
		t.Errorf("tb's entry: %q", h.Get("X-Sluice-Cache"))
	}
	if _, h, _ := s.do(c.path, c.body, map[string]string{"Authorization": "Bearer sk-a"}); h.Get("X-Sluice-Cache") != "miss" {
		t.Errorf("ta's cleared entry: %q", h.Get("X-Sluice-Cache"))
	}
}

// A hit is billed at nothing and counted apart: the request log says
// cache=hit with no calls and no cost, the usage records put it on the
// cache's own row, and the provider's rows and spend are unchanged.
func TestCacheHitLedger(t *testing.T) {
	c := cacheDialects[0]
	s := newStack(t, mock.Config{}, withCache(config.ModelCache{}, func(cfg *config.Config) {
		cfg.Log.Format = "json"
	}))
	s.do(c.path, c.body, nil)
	waitFor(t, "stored", func() bool { return s.counter("sluice_cache_writes_total", "result", "stored") == 1 })
	tokens := s.counter("sluice_tokens_total")
	s.do(c.path, c.body, nil)
	if got := s.counter("sluice_tokens_total"); got != tokens {
		t.Errorf("a hit added %v to sluice_tokens_total", got-tokens)
	}
	if s.counter("sluice_cache_tokens_total", "direction", "output") <= 0 {
		t.Error("the hit's tokens are not counted apart")
	}
	if s.counter("sluice_requests_total", "reason", "cache_hit") != 1 {
		t.Error("sluice_requests_total has no cache_hit")
	}
	waitFor(t, "the hit's log line", func() bool { return strings.Contains(s.logText(), `"cache":"hit"`) })
	for _, l := range strings.Split(s.logText(), "\n") {
		if strings.Contains(l, `"cache":"hit"`) && (strings.Contains(l, `"calls"`) || strings.Contains(l, "cost_dollars")) {
			t.Errorf("the hit's log line has calls or cost: %s", l)
		}
	}
	var cacheRow, providerRow int64
	rec := s.gw.Usage()
	if err := rec.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	var rows []usage.Record
	rec.Store().Read(context.Background(), usage.Day(time.Now()), func(r usage.Record) error { rows = append(rows, r); return nil })
	for _, r := range rows {
		switch r.Upstream {
		case "(cache)":
			cacheRow += r.Requests
			if r.Cost != 0 || r.Calls != 0 || r.Output != 0 {
				t.Errorf("the cache's row bills: %+v", r)
			}
		default:
			providerRow += r.Requests
		}
	}
	if cacheRow != 1 || providerRow != 1 {
		t.Errorf("usage rows: %d requests on the cache's, %d on the provider's; want 1 and 1", cacheRow, providerRow)
	}
}

// Replicas that share a store share the cache: an answer one stored is
// a hit on another, whose provider is not called; another tenant's
// identical request misses on every replica.
func TestCacheFleetShares(t *testing.T) {
	replicas := newFleet(t, mock.Config{}, withCache(config.ModelCache{}, func(cfg *config.Config) {
		cfg.Keys = []config.Key{{Name: "a", Tenant: "ta", SHA256: config.KeyHash("sk-a")}, {Name: "b", Tenant: "tb", SHA256: config.KeyHash("sk-b")}}
	}))
	t.Cleanup(func() {
		rec := &responseRecorder{header: http.Header{}}
		req, _ := http.NewRequest(http.MethodDelete, "/admin/cache?all=true", nil)
		replicas[0].gw.AdminHandler().ServeHTTP(rec, req)
	})
	for _, c := range cacheDialects {
		hdr := with(c.hdr, "Authorization", "Bearer sk-a")
		if _, h, _ := replicas[0].do(c.path, c.body, hdr); h.Get("X-Sluice-Cache") != "miss" {
			t.Fatalf("%s first: %q", c.name, h.Get("X-Sluice-Cache"))
		}
	}
	waitFor(t, "both stored in the fleet's store", func() bool {
		return replicas[0].counter("sluice_cache_writes_total", "result", "stored") == 2
	})
	for _, c := range cacheDialects {
		for _, b := range []string{c.body, streamed(c.body, c.d)} {
			status, h, body := replicas[1].do(c.path, b, with(c.hdr, "Authorization", "Bearer sk-a"))
			if status != 200 || h.Get("X-Sluice-Cache") != "hit" {
				t.Errorf("%s on another replica: %d, %q: %s", c.name, status, h.Get("X-Sluice-Cache"), body)
			}
		}
		if _, h, _ := replicas[2].do(c.path, c.body, with(c.hdr, "Authorization", "Bearer sk-b")); h.Get("X-Sluice-Cache") != "miss" {
			t.Errorf("%s, another tenant: %q; want miss", c.name, h.Get("X-Sluice-Cache"))
		}
	}
	if n := replicas[1].mock.Stats().Total; n != 0 {
		t.Errorf("the replica that hit called its provider %d times", n)
	}
}

// A fleet whose store stops answering serves every request as a miss,
// within the fleet's timeout, and never fails one for the cache's sake;
// once the store answers again, its entries answer again.
func TestCacheStoreUnreachable(t *testing.T) {
	rs := redistest.Own(t)
	s := newStack(t, mock.Config{}, withCache(config.ModelCache{}, func(cfg *config.Config) {
		cfg.Store = "redis://" + rs.Addr() + "/0"
		cfg.Fleet.Timeout = config.Duration(time.Second) // a busy test machine stalls a round trip for hundreds of milliseconds
	}))
	c := cacheDialects[0]
	s.do(c.path, c.body, nil)
	waitFor(t, "stored in the store", func() bool { return s.counter("sluice_cache_writes_total", "result", "stored") == 1 })
	rs.Signal(syscall.SIGSTOP) // a store that hangs
	stopped := true
	t.Cleanup(func() {
		if stopped {
			rs.Signal(syscall.SIGCONT)
		}
	})
	calls := s.mock.Stats().Total
	for i := range 3 {
		start := time.Now()
		status, h, body := s.do(c.path, c.body, nil)
		if status != 200 || h.Get("X-Sluice-Cache") != "miss" {
			t.Fatalf("request %d with the store stopped: %d, %q: %s", i, status, h.Get("X-Sluice-Cache"), body)
		}
		// The lookup waits at most fleet.timeout; generous for a loaded
		// machine, the point is "not the store's own time".
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("request %d took %v with the store stopped", i, d)
		}
	}
	if got := s.mock.Stats().Total - calls; got != 3 {
		t.Errorf("%d provider calls with the store stopped; want every request served by it", got)
	}
	if s.counter("sluice_cache_store_errors_total", "op", "get") == 0 {
		t.Error("no lookup counted as the store's error")
	}
	rs.Signal(syscall.SIGCONT)
	stopped = false
	waitFor(t, "a hit once the store answers", func() bool {
		_, h, _ := s.do(c.path, c.body, nil)
		return h.Get("X-Sluice-Cache") == "hit"
	})
}
