package gateway_test

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
)

// A reload under calls in flight: the new configuration counts the
// calls the old one still runs upstream, so the provider never has more
// than the limit at once. Before, the new configuration started with an
// empty count and ran its own three beside the old three.
func TestReloadInheritsCallsInFlight(t *testing.T) {
	const limit = 3
	srv := mock.New(mock.Config{TTFT: 1500 * time.Millisecond})
	base, stop, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	mutate := func(c *config.Config) {
		c.Admission.MaxInFlight = limit
		c.Admission.Queue.MaxWait = config.Duration(30 * time.Second)
	}
	hs := hostStackAt(t, base, mutate)
	post := func() int {
		resp, err := http.Post(hs.url+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"model":"mock-gpt","messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			t.Error(err)
			return 0
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	var wg sync.WaitGroup
	codes := make(chan int, 2*limit)
	send := func(n int) {
		for range n {
			wg.Add(1)
			go func() { defer wg.Done(); codes <- post() }()
		}
	}
	send(limit)
	waitWithin(t, 10*time.Second, 5*time.Millisecond, "the first calls upstream", func() bool { return srv.Stats().InFlight == limit })
	if err := hs.h.Reload(hostConfig(base, mutate)); err != nil {
		t.Fatal(err)
	}
	send(limit)
	// The new configuration's requests wait for the old ones' slots.
	waitWithin(t, 10*time.Second, 5*time.Millisecond, "the new requests queued", func() bool {
		return hs.h.Gateway().Runner().Snapshot().Queued[1] == limit
	})
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != http.StatusOK {
			t.Errorf("a request answered %d", c)
		}
	}
	if st := srv.Stats(); st.PeakInFlight > limit || st.Total != 2*limit {
		t.Fatalf("upstream peak %d calls in flight under a limit of %d (%d calls)", st.PeakInFlight, limit, st.Total)
	}
	if n := hs.h.Gateway().Runner().Snapshot().InFlight; n != 0 {
		t.Fatalf("%d calls still counted in flight after all ended", n)
	}
}
