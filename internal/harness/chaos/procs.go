package chaos

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is a process a fault run started. Every one is stopped by its own
// PID when the run ends (stopAll), whatever happened to the run.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  *logBuffer
	done chan struct{} // closed when the process has exited
	err  error         // its exit status, once done is closed
}

// logBuffer keeps a process's output for the report of a failed row,
// bounded so that a chatty gateway under 10k connections cannot fill
// the harness's memory.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

const logKeep = 64 << 10

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len()+len(p) > 2*logKeep {
		tail := append([]byte(nil), l.b.Bytes()[l.b.Len()-logKeep:]...)
		l.b.Reset()
		l.b.Write(tail)
	}
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// start runs bin with args, its output kept in the proc.
func (r *run) start(name, bin string, args ...string) (*proc, error) {
	p := &proc{name: name, out: &logBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	r.procs = append(r.procs, p)
	return p, nil
}

// exited reports whether p has exited, without waiting.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signal sends sig to p unless it has already exited.
func (p *proc) signal(sig os.Signal) {
	if !p.exited() {
		p.cmd.Process.Signal(sig)
	}
}

// stop interrupts p and kills it if it has not exited within grace.
func (p *proc) stop(grace time.Duration) {
	p.signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.signal(syscall.SIGKILL)
		<-p.done
	}
}

// stopAll stops every process the run started, newest first.
func (r *run) stopAll() {
	for i := len(r.procs) - 1; i >= 0; i-- {
		r.procs[i].stop(3 * time.Second)
	}
	r.procs = nil
}

// freeAddr picks a free loopback port. The port is free when it returns
// and is taken by the process it is handed to moments later; on loopback
// nothing else races for it in practice.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// waitUntil polls cond every 10 ms until it holds or d has passed.
func waitUntil(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitHTTP waits until url answers 200, or p exits, or 15 s pass.
func waitHTTP(p *proc, url string) error {
	ok := waitUntil(15*time.Second, func() bool {
		if p.exited() {
			return true
		}
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if p.exited() {
		return fmt.Errorf("%s exited before %s answered: %v\n%s", p.name, url, p.err, p.out)
	}
	if !ok {
		return fmt.Errorf("%s never answered at %s\n%s", p.name, url, p.out)
	}
	return nil
}

// mockProc is one sluice mock.
type mockProc struct {
	*proc
	addr string
}

// startMock runs sluice mock on a free port with args added to the
// run's own: a distinct seed per mock, so response ids differ between
// mocks and the double-answer check can trust them.
func (r *run) startMock(args ...string) (*mockProc, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	r.mocks++
	all := append([]string{"mock", "--listen", addr, "--seed", fmt.Sprint(r.mocks), "--grace", "1s"}, args...)
	p, err := r.start(fmt.Sprintf("mock%d", r.mocks), r.bin, all...)
	if err != nil {
		return nil, err
	}
	m := &mockProc{proc: p, addr: addr}
	return m, waitHTTP(p, "http://"+addr+"/health")
}

// mockStats is the part of sluice mock's GET /stats the checks read.
type mockStats struct {
	InFlight          int64 `json:"in_flight"`
	Total             int64 `json:"total"`
	CancelledByClient int64 `json:"cancelled_by_client"`
	ErrorsInjected    int64 `json:"errors_injected"`
}

// stats reads the mock's counters.
func (m *mockProc) stats() (mockStats, error) {
	var st mockStats
	resp, err := http.Get("http://" + m.addr + "/stats")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// gatewayProc is one sluice serve.
type gatewayProc struct {
	*proc
	listen, admin, config string
}

// startGateway writes cfg (with ${LISTEN} and ${ADMIN} filled in) and
// runs sluice serve on it, ready when /readyz answers 200.
func (r *run) startGateway(cfg string) (*gatewayProc, error) {
	listen, err := freeAddr()
	if err != nil {
		return nil, err
	}
	admin, err := freeAddr()
	if err != nil {
		return nil, err
	}
	g := &gatewayProc{listen: listen, admin: admin, config: filepath.Join(r.dir, fmt.Sprintf("gateway%d.yaml", len(r.procs)))}
	if err := g.write(cfg); err != nil {
		return nil, err
	}
	p, err := r.start("gateway", r.bin, "serve", "--config", g.config)
	if err != nil {
		return nil, err
	}
	g.proc = p
	return g, waitHTTP(p, "http://"+admin+"/readyz")
}

// write replaces the gateway's configuration file (a SIGHUP applies it)
// by a rename, as configuration management does, so a reload never
// reads a file half written.
func (g *gatewayProc) write(cfg string) error {
	cfg = strings.NewReplacer("${LISTEN}", g.listen, "${ADMIN}", g.admin).Replace(cfg)
	tmp := g.config + ".new"
	if err := os.WriteFile(tmp, []byte(cfg), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, g.config)
}

// startRedis runs a redis-server of the run's own on a free loopback
// port, keeping nothing on disk. It never touches another Redis.
func (r *run) startRedis(addr string) (*proc, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("this fault needs redis-server: %w", err)
	}
	_, port, _ := strings.Cut(addr, ":")
	p, err := r.start("redis", bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", r.dir)
	if err != nil {
		return nil, err
	}
	up := waitUntil(10*time.Second, func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil || p.exited()
	})
	if p.exited() || !up {
		return nil, fmt.Errorf("redis-server on %s did not start: %v\n%s", addr, p.err, p.out)
	}
	return p, nil
}

// raiseFileLimit lifts this process's open-file limit toward want: to
// want where the process may raise its hard limit (as root), else to
// the hard limit. The processes it starts inherit it. It returns the
// limit now in force.
func raiseFileLimit(want uint64) (uint64, error) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, err
	}
	if l.Cur >= want {
		return l.Cur, nil
	}
	if l.Max < want {
		raised := syscall.Rlimit{Cur: want, Max: want}
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised) == nil {
			return want, nil
		}
	}
	l.Cur = min(want, l.Max)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, err
	}
	return l.Cur, nil
}

// locateBinary finds the sluice binary to run: the one named, or this
// very executable, which is sluice when the run is `sluice chaos`.
func locateBinary(named string) (string, error) {
	if named != "" {
		return named, nil
	}
	return os.Executable()
}
