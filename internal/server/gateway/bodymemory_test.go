package gateway_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
)

// rawPost opens a connection and sends a request head declaring
// contentLength, then the first sent bytes of a body; the caller decides
// what happens next.
func rawPost(t *testing.T, url string, contentLength int, sent string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", contentLength, sent)
	return c
}

func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// What a client declares is not what the gateway allocates: 300 sockets
// each declaring a 10 MB body and sending nothing cost the gateway next to
// nothing (3 GB, reserved from Content-Length, before), and none of the
// body budget, so they cannot crowd out requests that send theirs.
func TestDeclaredBodiesAreNotReserved(t *testing.T) {
	s := newStack(t, mock.Config{}, nil) // max_body_bytes 10MiB
	before := heapInUse()
	var conns []net.Conn
	for range 300 {
		conns = append(conns, rawPost(t, s.url, 10<<20, ""))
	}
	waitFor(t, "every request to be reading its body", func() bool { return s.gw.ReadingBodies() == 300 })
	grown := int64(heapInUse()) - int64(before)
	held := s.gw.BodyBytesHeld()
	if status, _, body := s.do("/v1/chat/completions", chatBody, nil); status != 200 {
		t.Errorf("a request beside the idle sockets: status %d: %s", status, body)
	}
	for _, c := range conns {
		c.Close()
	}
	t.Logf("300 idle sockets declaring 10 MB each: heap grew %d KiB, body budget holds %d bytes", grown>>10, held)
	if grown > 32<<20 || held != 0 {
		t.Fatalf("heap grew %d MiB and the budget holds %d bytes for 300 sockets that sent no body", grown>>20, held)
	}
	waitFor(t, "the budget to come back", func() bool { return s.gw.BodyBytesHeld() == 0 })
}

// The bytes of request bodies held at once are bounded across all
// requests: past server.max_body_bytes_in_flight a request is refused as
// overload, at once, and the budget comes back when requests end.
func TestBodyBudgetRefusesPastTheCap(t *testing.T) {
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		c.MaxBodyBytes = 32 << 10
		// Room for three 30,000-byte bodies, and for the moment the third
		// is joined into one piece (its 16 KiB of blocks and the whole).
		c.Server.MaxBodyBytesInFlight = 110 << 10
		c.Server.MaxBodyBytesPerClient = 110 << 10 // one client may take it all: this is the budget's test
	})
	// Three slow uploads of 20 KB each hold a 30,000-byte buffer apiece
	// (grown with what arrived, then at half of it the declared length).
	var held []net.Conn
	for range 3 {
		held = append(held, rawPost(t, s.url, 30_000, `{"model":"mock-gpt","pad":"`+strings.Repeat("x", 20_000)))
	}
	waitFor(t, "three bodies held", func() bool { return s.gw.BodyBytesHeld() >= 3*30_000 })
	// A fourth has no room: refused now, not when the others finish.
	c := rawPost(t, s.url, 30_000, `{"model":"mock-gpt","pad":"`+strings.Repeat("x", 20_000))
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("fourth upload: status %d, Retry-After %q; want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	for _, c := range held {
		c.Close()
	}
	waitFor(t, "the budget to come back", func() bool { return s.gw.BodyBytesHeld() == 0 })
}

// A client that takes longer than body_read_timeout to send its body is
// answered 408, and the message names no socket address.
func TestSlowBodyGets408(t *testing.T) {
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		c.Server.BodyReadTimeout = config.Duration(200 * time.Millisecond)
	})
	c := rawPost(t, s.url, 1000, `{"model":`)
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b := make([]byte, 1024)
	n, _ := resp.Body.Read(b)
	if resp.StatusCode != 408 || !strings.Contains(string(b[:n]), "body_read_timeout") || strings.Contains(string(b[:n]), "127.0.0.1") {
		t.Fatalf("status %d: %s; want 408 naming body_read_timeout and no address", resp.StatusCode, b[:n])
	}
}

// Header fields past server.max_headers are refused with 431.
func TestTooManyHeaders(t *testing.T) {
	s := newStack(t, mock.Config{}, func(c *config.Config) { c.Server.MaxHeaders = 20 })
	hdr := map[string]string{}
	for i := range 30 {
		hdr[fmt.Sprintf("X-Pad-%d", i)] = "v"
	}
	status, _, body := s.do("/v1/chat/completions", chatBody, hdr)
	if status != 431 || errorType(t, body) != "invalid_request_error" || !strings.Contains(string(body), "max_headers") {
		t.Fatalf("status %d: %s", status, body)
	}
	if status, _, body := s.do("/v1/chat/completions", chatBody, nil); status != 200 {
		t.Fatalf("a request with few headers: status %d: %s", status, body)
	}
}
