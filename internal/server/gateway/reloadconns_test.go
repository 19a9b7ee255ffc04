package gateway_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluice-gw/sluice/internal/harness/mock"
)

// A reload keeps the upstream connections: the configuration it
// replaces must not take its idle connections with it, to linger
// unused until their idle timeout while the new one dials afresh. One
// request after each of several reloads reuses one connection (found by
// sluice chaos's sighup-under-load row, where the gateway's goroutines
// grew by two per connection left behind by each reload).
func TestReloadKeepsUpstreamConnections(t *testing.T) {
	var dialed atomic.Int64
	up := httptest.NewUnstartedServer(mock.New(mock.Config{}))
	up.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dialed.Add(1)
		}
	}
	up.Start()
	t.Cleanup(up.Close)
	hs := hostStackAt(t, up.URL, nil)
	url := hs.url + "/v1/chat/completions"
	const reloads = 5
	for i := range reloads + 1 {
		if i > 0 {
			if err := hs.h.Reload(hostConfig(up.URL, nil)); err != nil {
				t.Fatal(err)
			}
		}
		resp, err := http.Post(url, "application/json", strings.NewReader(`{"model":"mock-gpt","messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: %d", i, resp.StatusCode)
		}
	}
	if n := dialed.Load(); n != 1 {
		t.Errorf("%d requests across %d reloads opened %d upstream connections, want 1", reloads+1, reloads, n)
	}
}
