// Package redistest gives tests the Redis they share: the one on
// 127.0.0.1:6379, or at SLUICE_TEST_REDIS, with a key prefix of each
// test's own; and a Redis that accepts connections and never answers.
// A test that needs Redis and finds none is skipped, saying so and how
// to start one; where CI is set (.ci/run) it fails instead: it never
// passes without having run.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Addr is the test Redis's address, once it has answered a PING.
func Addr(t testing.TB) string {
	t.Helper()
	addr := os.Getenv("SLUICE_TEST_REDIS")
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	c := newClient(addr)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		msg := t.Name() + " needs a Redis at " + addr + " (SLUICE_TEST_REDIS=host:port for another): " + err.Error() +
			"\nstart one with: apt-get install -y redis-server && redis-server --save '' --appendonly no --daemonize yes"
		if testing.Short() || os.Getenv("CI") == "" {
			// A newcomer's machine without Redis: said, and skipped. CI
			// (CI set) has one, and a test that cannot reach it fails
			// there: it never passes without having run.
			t.Skip("skipped: " + msg)
		}
		t.Fatal(msg)
	}
	return addr
}

// Client is a client of the test Redis, closed when the test ends, and a
// key prefix unique to the test (Prefix).
func Client(t testing.TB) (*redis.Client, string) {
	t.Helper()
	c := Conn(t)
	return c, Prefix(t, c)
}

// Conn is a client of the test Redis, closed when the test ends.
func Conn(t testing.TB) *redis.Client {
	t.Helper()
	c := newClient(Addr(t))
	t.Cleanup(func() { c.Close() })
	return c
}

// Prefix is a key prefix unique to the test; its keys are deleted, with
// c, when the test ends (before c is closed).
func Prefix(t testing.TB, c *redis.Client) string {
	t.Helper()
	var b [6]byte
	rand.Read(b[:])
	prefix := "sluicetest:" + strings.ReplaceAll(t.Name(), "/", ".") + ":" + hex.EncodeToString(b[:]) + ":"
	t.Cleanup(func() { Flush(c, prefix) })
	return prefix
}

// Flush deletes every key under prefix, at one instant (one script): as
// far as a test's keys go, Redis losing its data, as a restart without
// persistence loses it all at once. (Deleting them one by one, while
// the code under test writes, can leave some of the old state beside
// the new: a loss no real Redis has.)
func Flush(c *redis.Client, prefix string) { FlushCount(c, prefix) }

var flushScript = redis.NewScript(`
local n = 0
for _, k in ipairs(redis.call('KEYS', ARGV[1])) do
  redis.call('DEL', k)
  n = n + 1
end
return n
`)

// FlushCount is Flush, returning how many keys it deleted.
func FlushCount(c *redis.Client, prefix string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n, _ := flushScript.Run(ctx, c, nil, prefix+"*").Int()
	return n
}

// newClient has the options Sluice's own clients have
// (fleetstore.NewClient): a deadline from the context, a dial bounded
// to a second, no CLIENT SETINFO.
func newClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, DialTimeout: time.Second, DisableIdentity: true})
}

// Silent is the address of a Redis that accepts connections and never
// answers: a store that hangs. It closes when the test ends.
func Silent(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return ln.Addr().String()
}

// Server is a Redis of the test's own (redis-server on a free port,
// nothing saved), to kill, restart empty, or stop and continue.
type Server struct {
	t    testing.TB
	bin  string
	port string
	cmd  *exec.Cmd
}

// Own starts a Redis of the test's own, killed when the test ends. It
// needs redis-server on PATH; without it the test fails (under -short
// it is skipped).
func Own(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		msg := t.Name() + " runs a Redis of its own and needs redis-server on PATH (apt-get install -y redis-server): " + err.Error()
		if testing.Short() || os.Getenv("CI") == "" {
			// A newcomer's machine without Redis: said, and skipped. CI
			// (CI set) has one, and a test that cannot reach it fails
			// there: it never passes without having run.
			t.Skip("skipped: " + msg)
		}
		t.Fatal(msg)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()
	s := &Server{t: t, bin: bin, port: port}
	s.Start()
	t.Cleanup(s.Kill)
	return s
}

// Addr is the server's address.
func (s *Server) Addr() string { return "127.0.0.1:" + s.port }

// Start starts the server (again, empty) and waits until it answers.
func (s *Server) Start() {
	s.t.Helper()
	s.cmd = exec.Command(s.bin, "--port", s.port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	c := newClient(s.Addr())
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("the test's Redis on %s did not answer within 10s: %v", s.Addr(), err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Kill ends the server, by its PID, and waits for it.
func (s *Server) Kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	s.cmd.Process.Kill()
	s.cmd.Wait()
	s.cmd = nil
}

// Signal sends the server sig (SIGSTOP and SIGCONT: a stall).
func (s *Server) Signal(sig os.Signal) {
	if s.cmd != nil && s.cmd.Process != nil {
		s.cmd.Process.Signal(sig)
	}
}
