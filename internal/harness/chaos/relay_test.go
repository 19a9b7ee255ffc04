package chaos

import (
	"bufio"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"
)

// echoServer answers every line it reads with the same line.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

func relayTo(t *testing.T, target string, tox toxics) *relay {
	t.Helper()
	r, err := newRelay(target)
	if err != nil {
		t.Fatal(err)
	}
	r.set(tox)
	t.Cleanup(r.close)
	return r
}

func TestRelayStallsAfterItsBytes(t *testing.T) {
	r := relayTo(t, echoServer(t), toxics{StallAfter: 4})
	c, err := net.Dial("tcp", r.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("abcdefgh"))
	got := make([]byte, 8)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c, got[:4]); err != nil || string(got[:4]) != "abcd" {
		t.Fatalf("the first 4 bytes: %q %v", got[:4], err)
	}
	// Then nothing, on a connection still open.
	c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if n, err := c.Read(got); !errors.Is(err, syscall.ETIMEDOUT) && !isTimeout(err) {
		t.Fatalf("after the stall: %d bytes, %v; want a timeout", n, err)
	}
	if !waitUntil(5*time.Second, func() bool { return r.stalls.Load() == 1 }) {
		t.Errorf("%d stalls counted, want 1", r.stalls.Load())
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestRelayDownResetsPooledConnections(t *testing.T) {
	r := relayTo(t, echoServer(t), toxics{})
	c, err := net.Dial("tcp", r.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(c)
	c.Write([]byte("up\n"))
	if line, err := br.ReadString('\n'); err != nil || line != "up\n" {
		t.Fatalf("while up: %q %v", line, err)
	}
	if !waitUntil(time.Second, func() bool { return r.open() == 1 }) {
		t.Fatalf("%d connections counted open, want 1", r.open())
	}
	r.set(toxics{Down: true})
	c.Write([]byte("down\n"))
	if _, err := br.ReadString('\n'); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("a connection made before the host went down read %v, want a reset", err)
	}
	if !waitUntil(5*time.Second, func() bool { return r.open() == 0 }) {
		t.Errorf("%d connections still counted open", r.open())
	}
}

func TestRelaySlowLink(t *testing.T) {
	r := relayTo(t, echoServer(t), toxics{BytesPerSecond: 1000})
	c, err := net.Dial("tcp", r.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	c.Write(make([]byte, 200))
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c, make([]byte, 200)); err != nil {
		t.Fatal(err)
	}
	// 200 bytes at 1000 a second take at least 200 ms, whatever the box.
	if took := time.Since(start); took < 200*time.Millisecond {
		t.Errorf("200 bytes at 1000 B/s took %v", took)
	}
}
