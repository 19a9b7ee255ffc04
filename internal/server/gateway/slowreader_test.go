package gateway_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
)

// A client that stops reading loses its slot within write_timeout (plus
// the time for the socket buffers to fill), and its upstream call is
// cancelled: a few such clients cannot hold the gateway's slots for the
// length of the request's deadline.
//
// The gateway's side of each connection has a fixed 64 KiB send buffer
// (smallSendBuffers). Left to itself, Linux grows a loopback socket's
// send buffer up to 4 MiB, and filling three of them with a stream's
// small events, relayed under -race, is seconds of CPU: on a loaded
// machine it alone outlasted the wait, which measured the CPU rather
// than write_timeout.
func TestClientThatStopsReadingLosesItsSlot(t *testing.T) {
	s := newStack(t, mock.Config{TTFT: time.Millisecond, TPOT: 0}, func(c *config.Config) {
		c.Log.Format = "json"
		c.Server.WriteTimeout = config.Duration(300 * time.Millisecond)
		c.Providers[0].Timeout = config.Duration(30 * time.Second)
	})
	srv := httptest.NewUnstartedServer(s.gw.Handler())
	srv.Listener = smallSendBuffers{srv.Listener}
	srv.Start()
	t.Cleanup(srv.Close)
	cases := []struct{ name, body string }{
		// Each answer is far more than the 64 KiB send buffer and the
		// client's 4 KiB receive buffer hold: the stream about 20 MB,
		// the whole answer about 1 MB (which the mock builds whole
		// before its first byte, so it is kept no larger than needed).
		{"stream", `{"model":"mock-gpt","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
		{"whole answer", `{"model":"mock-embed","input":[` + strings.Repeat(`"x",`, 49) + `"x"],"dimensions":2048}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := "/v1/chat/completions"
			if strings.Contains(c.body, "mock-embed") {
				path = "/v1/embeddings"
			}
			s.mock.ResetStats()
			logged := len(s.requestLog()) // the lines of the cases before
			var conns []net.Conn
			for range 3 {
				conn, err := net.Dial("tcp", srv.Listener.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				conn.(*net.TCPConn).SetReadBuffer(4096)
				fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Mock-Output-Tokens: 200000\r\nContent-Length: %d\r\n\r\n%s",
					path, len(c.body), c.body)
				// Read the status line, then stop reading.
				conn.SetReadDeadline(time.Now().Add(10 * time.Second))
				if _, err := http.ReadResponse(bufio.NewReaderSize(conn, 16), nil); err != nil {
					t.Fatal(err)
				}
				conns = append(conns, conn)
			}
			start := time.Now()
			waitForLong(t, 10*time.Second, "the stalled clients' slots to be released", func() bool {
				return s.gw.Runner().Snapshot().InFlight == 0
			})
			t.Logf("three stalled clients released their slots %v after they stopped reading", time.Since(start))
			waitForLong(t, 5*time.Second, "the upstream calls to be cancelled", func() bool {
				st := s.mock.Stats()
				return st.InFlight == 0
			})
			// A request's log line is written after its slot and its
			// upstream call are given back, so it is waited for too.
			var reasons []string
			defer func() {
				if t.Failed() {
					t.Logf("reasons logged: %q", reasons)
				}
			}()
			waitForLong(t, 5*time.Second, "three requests logged as client_stalled", func() bool {
				reasons = reasons[:0]
				stalled := 0
				for _, l := range s.requestLog()[logged:] {
					reasons = append(reasons, l.Reason)
					if l.Reason == "client_stalled" {
						stalled++
					}
				}
				return stalled == 3
			})
		})
	}
}

// smallSendBuffers accepts connections whose send buffer is fixed at
// 64 KiB, as a client across a network would bound what it takes in
// before the gateway's writes block.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(64 << 10)
	}
	return c, err
}

// waitForLong is waitFor with a longer limit, for conditions that take
// seconds by design.
func waitForLong(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A provider that goes quiet mid-stream is cut off after
// stream_idle_timeout: the client gets an error event, not a hang until
// the request's deadline.
func TestStreamIdleTimeout(t *testing.T) {
	s := newStack(t, mock.Config{TTFT: time.Millisecond, TPOT: 2 * time.Second}, func(c *config.Config) {
		c.Server.StreamIdleTimeout = config.Duration(300 * time.Millisecond)
		c.Providers[0].Timeout = config.Duration(30 * time.Second)
	})
	start := time.Now()
	status, _, body := s.do("/v1/chat/completions", `{"model":"mock-gpt","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
		map[string]string{"X-Mock-Output-Tokens": "10"})
	took := time.Since(start)
	if status != 200 || !strings.Contains(string(body), "sent nothing for 300ms") || took > 1500*time.Millisecond {
		t.Fatalf("status %d after %v: %s", status, took, body)
	}
	waitFor(t, "the quiet call to be cancelled", func() bool { return s.mock.Stats().InFlight == 0 })
}

// deadlineRecorder is a ResponseWriter that records the write deadlines
// a handler sets through http.ResponseController.
type deadlineRecorder struct {
	*httptest.ResponseRecorder
	deadlines []time.Time
}

func (d *deadlineRecorder) SetWriteDeadline(t time.Time) error {
	d.deadlines = append(d.deadlines, t)
	return nil
}

func (d *deadlineRecorder) SetReadDeadline(time.Time) error { return nil }

// Every answer has write_timeout to be accepted, errors and the last
// flush after the handler returns included (net/http flushes after the
// handler, so the deadline in force then must not be "none"): a client
// that never reads cannot pin its connection, and with it a slot under
// server.max_connections.
func TestEveryAnswerHasAWriteDeadline(t *testing.T) {
	s := newStack(t, mock.Config{}, func(c *config.Config) { c.Server.WriteTimeout = config.Duration(3 * time.Second) })
	h := s.gw.Handler()
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1/chat/completions", `{"model":"nope"}`},
		{"POST", "/v1/chat/completions", chatBody},
		{"GET", "/v1/models", ""},
		{"GET", "/v1/chat/completions", ""},
		{"GET", "/nowhere", ""},
	} {
		rec := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
		req := httptest.NewRequest(c.method, c.path, strings.NewReader(c.body))
		start := time.Now()
		h.ServeHTTP(rec, req)
		if len(rec.deadlines) == 0 {
			t.Fatalf("%s %s: no write deadline set", c.method, c.path)
		}
		last := rec.deadlines[len(rec.deadlines)-1]
		if last.Before(start.Add(3*time.Second)) || last.After(time.Now().Add(3*time.Second)) {
			t.Errorf("%s %s: the deadline in force after the handler is %v from its start; want write_timeout (3 s) from its end",
				c.method, c.path, last.Sub(start))
		}
	}
}
