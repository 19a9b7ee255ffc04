package native_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/internal/wire/native"
	"github.com/sluice-gw/sluice/internal/wire/native/nativetest"
)

// A hub handler's flush of a whole answer's headers reaches the vendor's
// client before the body: a stall after the headers stays one.
func TestHandlerWholeHeadersBeforeBody(t *testing.T) {
	release := make(chan struct{})
	hub := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != native.HubPath || r.Header.Get("X-Toy-Key") != "k" {
			t.Errorf("hub request %s with key %q", r.URL.Path, r.Header.Get("X-Toy-Key"))
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		http.NewResponseController(w).Flush()
		<-release
		io.WriteString(w, `{"content":[{"type":"text","text":"late"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`)
	})
	srv := httptest.NewServer(native.Handler([]native.Server{nativetest.Server{}}, hub))
	t.Cleanup(srv.Close)
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/toy/m:say", strings.NewReader(`{"turns":[{"who":"user","text":"hi"}]}`))
	req.Header.Set("X-Toy-Key", "k")
	resp, err := http.DefaultClient.Do(req) // returns at the headers
	close(release)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(body) != `{"text":"late","in":1,"out":1,"end":"done"}` {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
}

func TestHandlerRefusals(t *testing.T) {
	hub := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { t.Error("the hub was called") })
	srv := httptest.NewServer(native.Handler([]native.Server{nativetest.Server{}}, hub))
	t.Cleanup(srv.Close)
	for _, c := range []struct {
		method, path, body string
		status             int
		says               string
	}{
		{http.MethodGet, "/toy/m:say", "", 405, "use POST"},
		{http.MethodPost, "/toy/m:say", `{"turns":"no"}`, 400, "not a toy request"},
		{http.MethodPost, "/elsewhere", `{}`, 404, "no such endpoint"},
	} {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader(c.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || !strings.Contains(string(b), c.says) {
			t.Errorf("%s %s: %d %s", c.method, c.path, resp.StatusCode, b)
		}
	}
}
