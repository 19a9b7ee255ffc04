package gateway

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
)

// count_tokens floods took every core and raised other clients' chat
// p50 from 1.1 to 59 ms. Counting has its own small share of the CPU
// (countSlots): with every slot taken, a count is refused at once with
// 503/529 and a Retry-After, while chat, which takes no counting slot,
// is served; once a slot frees, counts are served again.
func TestCountTokensHasItsOwnShareOfCPU(t *testing.T) {
	base, stop, err := mock.New(mock.Config{}).Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	cfg := config.Default(base)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	g, err := New(cfg, Options{Logger: NewLogger(io.Discard, cfg.Log)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(srv.Close)
	post := func(path, body string) (int, http.Header, string) {
		req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("anthropic-version", "2023-06-01")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(b)
	}
	const count = `{"model":"mock-gpt","messages":[{"role":"user","content":"how many tokens is this"}]}`
	for range cap(countSlots) {
		countSlots <- struct{}{} // every slot busy counting
	}
	freed := false
	free := func() {
		if !freed {
			for range cap(countSlots) {
				<-countSlots
			}
			freed = true
		}
	}
	t.Cleanup(free)
	if st, h, b := post("/v1/messages/count_tokens", count); st != 529 || h.Get("Retry-After") != "1" || !strings.Contains(b, "retry") {
		t.Errorf("a count with every counting slot taken: %d Retry-After %q %s; want 529 with Retry-After: 1", st, h.Get("Retry-After"), b)
	}
	if st, _, b := post("/v1/messages", `{"model":"mock-claude","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`); st != 200 {
		t.Errorf("a chat request while counting is full: %d %s; want 200", st, b)
	}
	free()
	if st, _, b := post("/v1/messages/count_tokens", count); st != 200 || !strings.Contains(b, "input_tokens") {
		t.Errorf("a count with a slot free: %d %s; want 200", st, b)
	}
	if len(countSlots) != 0 {
		t.Errorf("%d counting slots still held after the counts ended", len(countSlots))
	}
}
