package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/sluice-gw/sluice/internal/harness/procs"
)

// logKeep bounds the output kept of each process for the report of a
// failed row, so that a chatty gateway under 10k connections cannot fill
// the harness's memory.
const logKeep = 64 << 10

// start runs bin with args among the run's processes, its output kept in
// memory, and returns once ready passes. Every process is stopped by its
// own PID when the run ends (run.close), whatever happened to the run:
// sluice serve by an interrupt, which skips its drain delay, as a process
// being torn down has no load balancer to tell.
func (r *run) start(name, bin string, ready procs.Check, within time.Duration, args ...string) (*procs.Proc, error) {
	return r.group.Start(context.Background(), procs.Spec{Name: name, Path: bin, Args: args, Keep: logKeep,
		Ready: ready, ReadyWithin: within, StopSignal: os.Interrupt, Grace: 3 * time.Second})
}

// mockProc is one sluice mock.
type mockProc struct {
	*procs.Proc
	addr string
}

// startMock runs sluice mock on a free port with args added to the
// run's own: a distinct seed per mock, so response ids differ between
// mocks and the double-answer check can trust them.
func (r *run) startMock(args ...string) (*mockProc, error) {
	addr, err := procs.FreeAddr()
	if err != nil {
		return nil, err
	}
	r.mocks++
	all := append([]string{"mock", "--listen", addr, "--seed", fmt.Sprint(r.mocks), "--grace", "1s"}, args...)
	p, err := r.start(fmt.Sprintf("mock%d", r.mocks), r.bin, procs.HTTPOK("http://"+addr+"/health"), 15*time.Second, all...)
	if err != nil {
		return nil, err
	}
	return &mockProc{Proc: p, addr: addr}, nil
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
	*procs.Proc
	listen, admin, config string
}

// startGateway writes cfg (with ${LISTEN} and ${ADMIN} filled in) and
// runs sluice serve on it, ready when /readyz answers 200.
func (r *run) startGateway(cfg string) (*gatewayProc, error) {
	listen, err := procs.FreeAddr()
	if err != nil {
		return nil, err
	}
	admin, err := procs.FreeAddr()
	if err != nil {
		return nil, err
	}
	_, port, _ := strings.Cut(listen, ":")
	g := &gatewayProc{listen: listen, admin: admin, config: filepath.Join(r.dir, "gateway-"+port+".yaml")}
	if err := g.write(cfg); err != nil {
		return nil, err
	}
	p, err := r.start("gateway", r.bin, procs.HTTPOK("http://"+admin+"/readyz"), 15*time.Second, "serve", "--config", g.config)
	if err != nil {
		return nil, err
	}
	g.Proc = p
	return g, nil
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
// port, keeping nothing on disk. It never touches another Redis. The
// fault kills it mid-run and restarts it on the same port (Restart).
func (r *run) startRedis(addr string) (*procs.Proc, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("this fault needs redis-server: %w", err)
	}
	_, port, _ := strings.Cut(addr, ":")
	return r.start("redis", bin, procs.TCPOpen(addr), 10*time.Second, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", r.dir)
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
