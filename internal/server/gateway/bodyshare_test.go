package gateway_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
)

// A hostile client's partial bodies, as in the report: each socket
// declares a body and sends a quarter of it plus a byte, then waits.
const (
	partialDeclared = 1 << 20
	partialSent     = 256<<10 + 1
	partialSockets  = 16
)

// smallBodyStack is a gateway whose body budget a few partial bodies
// fill: 4 MiB in flight, 1 MiB bodies, the default share per client.
func smallBodyStack(t *testing.T, mutate func(*config.Config)) *stack {
	return newStack(t, mock.Config{}, func(c *config.Config) {
		c.MaxBodyBytes = 1 << 20
		c.Server.MaxBodyBytesInFlight = 4 << 20
		if mutate != nil {
			mutate(c)
		}
	})
}

// partialFlood opens partialSockets connections from 127.0.0.1, each
// sending the head (with extra header lines hdr) and partialSent bytes
// of a partialDeclared body, and waits until every one is either held
// by the gateway with all its bytes read, or answered. It returns the
// statuses of the answered ones.
func partialFlood(t *testing.T, s *stack, hdr string) (statuses func() map[int]int) {
	t.Helper()
	var (
		mu       sync.Mutex
		answered = map[int]int{}
		count    atomic.Int64
	)
	pad := strings.Repeat("x", partialSent-len(`{"model":"mock-gpt","pad":"`))
	for range partialSockets {
		c, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		head := fmt.Sprintf("POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n%sContent-Length: %d\r\n\r\n", hdr, partialDeclared)
		go func() {
			// The write may fail once the gateway has refused and closed.
			_, _ = io.WriteString(c, head+`{"model":"mock-gpt","pad":"`+pad)
		}()
		go func() {
			c.SetReadDeadline(time.Now().Add(60 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				return // held until the test closes it
			}
			resp.Body.Close()
			mu.Lock()
			answered[resp.StatusCode]++
			mu.Unlock()
			count.Add(1)
		}()
	}
	// A socket the gateway holds is still reading its body, and holds
	// at least the bytes that arrived; an answered one is done reading.
	waitFor(t, "every partial body to be held whole or answered", func() bool {
		reading := s.gw.ReadingBodies()
		return count.Load()+reading == partialSockets && s.gw.BodyBytesHeld() >= reading*partialSent
	})
	return func() map[int]int {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(answered)
	}
}

// One client holding many partial bodies cannot push another client's
// small request into a 503: the flood from 127.0.0.1 is held to its
// share of the body budget and refused 429 past it, and a request from
// 127.0.0.2 is served. (Before, the flood took the whole budget and
// every other request was refused 503 until it ended.)
func TestPartialBodiesOfOneAddressLeaveRoomForAnother(t *testing.T) {
	s := smallBodyStack(t, nil)
	other := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{
		LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}).DialContext}}
	probe, err := other.Get(s.url + "/healthz")
	if err != nil {
		t.Skipf("cannot connect from 127.0.0.2 on this machine: %v", err)
	}
	probe.Body.Close()

	answered := partialFlood(t, s, "")
	held := s.gw.BodyBytesHeld()

	req, _ := http.NewRequest(http.MethodPost, s.url+"/v1/chat/completions", strings.NewReader(chatBody))
	req.Header.Set("Content-Type", "application/json")
	resp, err := other.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	t.Logf("%d partial bodies from 127.0.0.1: %d held (%d bytes of the 4 MiB budget), answered %v; 127.0.0.2's request: %d",
		partialSockets, s.gw.ReadingBodies(), held, answered(), resp.StatusCode)
	if resp.StatusCode != 200 {
		t.Fatalf("a small request from another address beside %d partial bodies: status %d: %s", partialSockets, resp.StatusCode, body)
	}
	if got := answered(); got[429] == 0 || len(got) != 1 {
		t.Errorf("the flooding address's refusals: %v; want 429s only (it is over its own share, not the gateway over its budget)", got)
	}
	if held > 2<<20 {
		t.Errorf("one address holds %d bytes of bodies; its share is 2 MiB (twice max_body_bytes, above a quarter of the budget)", held)
	}
}

// Behind a proxy every keyless client arrives from the proxy's address.
// With the proxy in server.trusted_proxies, each is known by the address
// the proxy saw (X-Forwarded-For), so one of them flooding partial
// bodies leaves room for another's large request; without it, they are
// one client and that request is refused with the flooder's.
func TestPartialBodiesBehindATrustedProxy(t *testing.T) {
	for _, trust := range []bool{true, false} {
		s := smallBodyStack(t, func(c *config.Config) {
			if trust {
				c.Server.TrustedProxies = []string{"127.0.0.0/8"}
			}
		})
		// The flooder also writes an X-Forwarded-For of its own, naming
		// the other client; its proxy appends what it saw.
		answered := partialFlood(t, s, "X-Forwarded-For: 203.0.113.9, 203.0.113.5\r\n")
		// Half a megabyte: more than the flooder's share has left, well
		// within the budget.
		large := `{"model":"mock-gpt","pad":"` + strings.Repeat("x", 512<<10) + `","messages":[{"role":"user","content":"hi"}]}`
		req, _ := http.NewRequest(http.MethodPost, s.url+"/v1/chat/completions", strings.NewReader(large))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Forwarded-For", "203.0.113.9")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Logf("trusted proxy %v: the flood's refusals %v; another client's request: %d", trust, answered(), resp.StatusCode)
		switch {
		case trust && resp.StatusCode != 200:
			t.Errorf("behind a trusted proxy, another client's request beside a flood: %d %s; want 200", resp.StatusCode, body)
		case !trust && resp.StatusCode != 429:
			t.Errorf("without trusted_proxies, the same request: %d %s; want 429 (the proxy's address is one client)", resp.StatusCode, body)
		}
	}
}

// With virtual keys, the client is the key: one key's partial bodies
// cannot crowd out another key's request from the same address.
func TestPartialBodiesOfOneKeyLeaveRoomForAnother(t *testing.T) {
	hash := func(k string) string { h := sha256.Sum256([]byte(k)); return hex.EncodeToString(h[:]) }
	s := smallBodyStack(t, func(c *config.Config) {
		c.Keys = []config.Key{{Name: "flood", SHA256: hash("sk-flood")}, {Name: "calm", SHA256: hash("sk-calm")}}
	})
	answered := partialFlood(t, s, "Authorization: Bearer sk-flood\r\n")
	status, _, body := s.do("/v1/chat/completions", chatBody, map[string]string{"Authorization": "Bearer sk-calm"})
	t.Logf("%d partial bodies from key flood: %d held (%d bytes), answered %v; key calm's request: %d",
		partialSockets, s.gw.ReadingBodies(), s.gw.BodyBytesHeld(), answered(), status)
	if status != 200 {
		t.Fatalf("another key's small request beside %d partial bodies: status %d: %s", partialSockets, status, body)
	}
}

// The budget counts what is really allocated. A chunked body of 8 MiB
// that has arrived and waits for its end: every byte the gateway
// allocated for it is in the budget, with no old buffers from growth
// left uncounted. (Before, a doubling buffer charged 16 MiB and had
// allocated 32 MiB: half of it garbage the budget never saw.)
func TestBodyBudgetCountsWhatIsAllocated(t *testing.T) {
	const sent = 8 << 20
	for _, declared := range []int64{-1, 32 << 20} {
		t.Run(fmt.Sprintf("declared=%d", declared), func(t *testing.T) {
			s := newStack(t, mock.Config{}, func(c *config.Config) {
				c.MaxBodyBytes = 32 << 20
				c.Server.MaxBodyBytesInFlight = 256 << 20
			})
			pr, pw := io.Pipe()
			req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", pr)
			req.Host, req.RemoteAddr, req.ContentLength = "localhost", "127.0.0.1:40000", declared
			req.Header.Set("Content-Type", "application/json")
			done := make(chan struct{})
			go func() {
				defer close(done)
				s.gw.Handler().ServeHTTP(httptest.NewRecorder(), req)
			}()
			chunk := []byte(`{"model":"mock-gpt","pad":"` + strings.Repeat("x", 64<<10))
			if _, err := pw.Write(chunk[:1]); err != nil { // the read has begun
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			for n := 1; n < sent; {
				k, err := pw.Write(chunk[n%len(chunk) : min(len(chunk), n%len(chunk)+sent-n)])
				if err != nil {
					t.Fatal(err)
				}
				n += k
			}
			runtime.ReadMemStats(&after)
			held := s.gw.BodyBytesHeld()
			allocated := int64(after.TotalAlloc - before.TotalAlloc)
			pw.CloseWithError(io.ErrUnexpectedEOF)
			<-done
			t.Logf("8 MiB of a body arrived: allocated %.1f MiB while reading it, budget holds %.1f MiB", float64(allocated)/(1<<20), float64(held)/(1<<20))
			// Slack for what else the process allocated meanwhile.
			if allocated > held+1<<20 {
				t.Errorf("allocated %d bytes while the body arrived, but the budget holds %d: %d bytes it never counted", allocated, held, allocated-held)
			}
			if held < sent || held > sent+256<<10 {
				t.Errorf("the budget holds %d bytes for %d that arrived; want what arrived and at most one block more", held, sent)
			}
			waitFor(t, "the budget to come back", func() bool { return s.gw.BodyBytesHeld() == 0 })
		})
	}
}
