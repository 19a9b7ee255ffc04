package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// child is one process the harness started. It is only ever signalled by
// its own PID.
type child struct {
	name string
	pid  int
	log  string // file holding its stdout and stderr
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has been reaped
}

// supervisor owns every child process, so that a normal exit, an error and
// Ctrl-C all end them the same way.
type supervisor struct {
	dir string // temp dir for logs and configs

	mu       sync.Mutex
	children map[int]*child
	seq      int
}

func newSupervisor(dir string) *supervisor {
	return &supervisor{dir: dir, children: map[int]*child{}}
}

// start runs argv in workDir (empty: the current directory) with stdout and
// stderr sent to a log file in the temp dir. The child gets its own process
// group, so a Ctrl-C in the terminal reaches only the harness, which then
// stops children in order; Pdeathsig kills it if the harness dies hard.
func (s *supervisor) start(name, workDir string, argv []string, env []string) (*child, error) {
	s.mu.Lock()
	s.seq++
	logPath := filepath.Join(s.dir, fmt.Sprintf("%02d-%s.log", s.seq, name))
	s.mu.Unlock()
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = workDir
	cmd.Stdout, cmd.Stderr = f, f
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	c := &child{name: name, pid: cmd.Process.Pid, log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(c.done)
	}()
	s.mu.Lock()
	s.children[c.pid] = c
	s.mu.Unlock()
	return c, nil
}

// exited reports whether the child has already ended.
func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the child's PID, waits up to grace, then SIGKILL.
func (s *supervisor) stop(c *child, grace time.Duration) {
	if c == nil {
		return
	}
	if !c.exited() {
		syscall.Kill(c.pid, syscall.SIGTERM)
		select {
		case <-c.done:
		case <-time.After(grace):
			syscall.Kill(c.pid, syscall.SIGKILL)
			<-c.done
		}
	}
	s.mu.Lock()
	delete(s.children, c.pid)
	s.mu.Unlock()
}

// stopAll stops every child still running, concurrently.
func (s *supervisor) stopAll(grace time.Duration) {
	s.mu.Lock()
	var all []*child
	for _, c := range s.children {
		all = append(all, c)
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range all {
		wg.Go(func() { s.stop(c, grace) })
	}
	wg.Wait()
}

// freePort asks the kernel for an unused loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func addr(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }

// waitReady polls until check succeeds, the child exits, or timeout.
func waitReady(ctx context.Context, c *child, timeout time.Duration, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if c.exited() {
			return fmt.Errorf("%s exited during start-up; see %s:\n%s", c.name, c.log, tail(c.log, 1500))
		}
		if last = check(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %s (%v); see %s", c.name, timeout, last, c.log)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// httpOK is a readiness check: GET url answers 2xx.
func httpOK(url string) func(context.Context) error {
	return func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("GET %s: status %d", url, resp.StatusCode)
		}
		return nil
	}
}

// tcpOpen is a readiness check: the port accepts connections.
func tcpOpen(a string) func(context.Context) error {
	return func(ctx context.Context) error {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", a)
		if err != nil {
			return err
		}
		return conn.Close()
	}
}

// tail returns up to the last n bytes of a file, for error messages.
func tail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max(0, st.Size()-n)
	buf := make([]byte, st.Size()-off)
	f.ReadAt(buf, off)
	return string(buf)
}
