package gateway_test

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
)

// dripAnswer sends a request's headers to addr and then its body a byte
// every 100 ms, and returns the status line of the answer and how many
// of the body's bytes had been sent when it came (the connection closed
// without one: an empty line).
func dripAnswer(t *testing.T, addr, head, body string) (string, int) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := fmt.Fprintf(c, "%sContent-Length: %d\r\n\r\n", head, len(body)); err != nil {
		t.Fatal(err)
	}
	answered := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(c).ReadString('\n')
		answered <- strings.TrimSpace(line)
	}()
	for sent := range len(body) {
		select {
		case line := <-answered:
			return line, sent
		case <-time.After(100 * time.Millisecond):
		}
		if _, err := c.Write([]byte{body[sent]}); err != nil {
			return <-answered, sent
		}
	}
	return <-answered, len(body)
}

// A request answered before its body is read (a Host the gateway does
// not answer to, no key, no admin token) must not wait for that body:
// net/http reads the rest of a small body before it writes an answer,
// so without a deadline a client sending it a byte at a time held its
// connection for as long as it liked (the chaos suite's slowloris kept
// one 7 s against a 1 s body_read_timeout). Each answer comes within
// server.body_read_timeout (300 ms here), long before the 60-byte body
// has dripped in (6 s).
func TestEarlyAnswersDoNotWaitForASlowBody(t *testing.T) {
	t.Parallel()
	hs := newHostStack(t, mock.Config{}, func(c *config.Config) {
		c.Server.BodyReadTimeout = config.Duration(300 * time.Millisecond)
		c.Keys = []config.Key{{Name: "k", SHA256: config.KeyHash("sk-k")}}
	})
	body := strings.Repeat(" ", 60)
	for _, tc := range []struct {
		name, addr, head, status string
	}{
		{"a Host the gateway does not answer to", hs.url, "POST /v1/chat/completions HTTP/1.1\r\nHost: evil.example\r\nContent-Type: application/json\r\n", " 421 "},
		{"no key", hs.url, "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n", " 401 "},
		{"no route, on the admin listener", hs.admin, "POST /nowhere HTTP/1.1\r\nHost: 127.0.0.1\r\n", " 40"},
	} {
		line, sent := dripAnswer(t, strings.TrimPrefix(tc.addr, "http://"), tc.head, body)
		if !strings.Contains(line+" ", tc.status) || sent > len(body)/2 {
			t.Errorf("%s, body sent a byte every 100 ms: answered %q after %d of %d bytes; want %s before half the body", tc.name, line, sent, len(body), strings.TrimSpace(tc.status))
		}
	}
}
