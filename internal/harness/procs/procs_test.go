package procs

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// child is the testdata program, built once by TestMain.
var child string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "procs-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	child = filepath.Join(dir, "child")
	if out, err := exec.Command("go", "build", "-o", child, "./testdata/child").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build ./testdata/child: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	a, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// gone checks that p has been reaped and its address refuses.
func gone(t *testing.T, p *Proc, addr string) {
	t.Helper()
	if !p.Exited() {
		t.Fatalf("%s (pid %d) is still running", p.Name, p.PID)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatalf("%s still answers after it was stopped", addr)
	}
}

func TestStartWaitsUntilReadyAndStopEnds(t *testing.T) {
	addr := freeAddr(t)
	began := time.Now()
	p, err := Start(context.Background(), Spec{Name: "child", Path: child,
		Args: []string{"-listen", addr, "-delay", "300ms"}, Ready: HTTPOK("http://" + addr + "/health")})
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took < 300*time.Millisecond {
		t.Errorf("Start returned after %v, before the child listened", took)
	}
	if err := TCPOpen(addr)(context.Background(), p); err != nil {
		t.Fatalf("ready, but %s refuses: %v", addr, err)
	}
	if err := p.Stop(); err != nil {
		t.Errorf("a child that stops on SIGTERM exited with %v", err)
	}
	gone(t, p, addr)
	if out := p.Output(); !strings.Contains(out, "listening on "+addr) || !strings.Contains(out, "stopping on terminated") {
		t.Errorf("output:\n%s", out)
	}
}

func TestEarlyExitIsReportedWithItsOutput(t *testing.T) {
	began := time.Now()
	_, err := Start(context.Background(), Spec{Name: "child", Path: child,
		Args: []string{"-fail", "no such flag --frobnicate"}, Ready: HTTPOK("http://" + freeAddr(t) + "/health")})
	if err == nil {
		t.Fatal("a child that exits at once was reported ready")
	}
	for _, want := range []string{"child (pid ", "exited (exit status 3) before it was ready", "no such flag --frobnicate"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("the early exit was reported after %v, not at once", took)
	}
}

func TestNotReadyInTimeIsStopped(t *testing.T) {
	addr := freeAddr(t)
	g := &Group{}
	_, err := g.Start(context.Background(), Spec{Name: "slow", Path: child,
		Args: []string{"-listen", addr, "-delay", "10s"}, Ready: TCPOpen(addr), ReadyWithin: 200 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "not ready after 200ms") || !strings.Contains(err.Error(), "starting") {
		t.Fatalf("error: %v", err)
	}
	if live := g.Live(); len(live) != 0 {
		t.Errorf("%d children left running after a failed start", len(live))
	}
}

func TestStopKillsAfterGrace(t *testing.T) {
	addr := freeAddr(t)
	p, err := Start(context.Background(), Spec{Name: "stubborn", Path: child,
		Args: []string{"-listen", addr, "-stubborn"}, Ready: LogLine("listening on"), Grace: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	err = p.Stop()
	took := time.Since(began)
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("a child deaf to SIGTERM exited with %v, want killed", err)
	}
	if took < 300*time.Millisecond || took > 5*time.Second {
		t.Errorf("stopped after %v, want just over the 300ms grace", took)
	}
	gone(t, p, addr)
}

func TestKillMidRunAndRestart(t *testing.T) {
	addr := freeAddr(t)
	g := &Group{}
	defer g.StopAll()
	spec := Spec{Name: "redis-like", Path: child, Args: []string{"-listen", addr}, Ready: TCPOpen(addr)}
	p, err := g.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	p.Kill()
	gone(t, p, addr)
	if err := p.Err(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("exit status after Kill: %v", err)
	}
	q, err := p.Restart(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if q.PID == p.PID {
		t.Errorf("the restart kept pid %d", p.PID)
	}
	if live := g.Live(); len(live) != 1 || live[0] != q {
		t.Errorf("the group holds %v, want only the restarted child", live)
	}
	if n := strings.Count(q.Output(), "listening on "+addr); n != 2 {
		t.Errorf("the restarted child's output tells of %d starts, want 2:\n%s", n, q.Output())
	}
	// A restart of a running child stops it first.
	r, err := q.Restart(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !q.Exited() || r.Exited() {
		t.Errorf("after a restart: old exited %v, new exited %v", q.Exited(), r.Exited())
	}
}

func TestGroupLogsToFilesAndStopsAll(t *testing.T) {
	g := &Group{LogDir: t.TempDir()}
	var addrs []string
	for _, name := range []string{"mock", "gateway"} {
		addr := freeAddr(t)
		p, err := g.Start(context.Background(), Spec{Name: name, Path: child, Args: []string{"-listen", addr}, Ready: LogLine("listening on")})
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, addr)
		if want := fmt.Sprintf("%02d-%s.log", len(addrs), name); filepath.Base(p.LogPath()) != want {
			t.Errorf("log file %s, want %s", p.LogPath(), want)
		}
	}
	live := g.Live()
	if len(live) != 2 {
		t.Fatalf("%d live, want 2", len(live))
	}
	g.StopAll()
	for i, p := range live {
		gone(t, p, addrs[i])
		if !strings.Contains(p.Tail(100), "stopping on terminated") {
			t.Errorf("%s's log ends:\n%s", p.Name, p.Tail(100))
		}
	}
	if len(g.Live()) != 0 {
		t.Errorf("%d still live after StopAll", len(g.Live()))
	}
}

func TestStopSignalAndKillAll(t *testing.T) {
	g := &Group{}
	addr := freeAddr(t)
	p, err := g.Start(context.Background(), Spec{Name: "c", Path: child, Args: []string{"-listen", addr},
		Ready: LogLine("listening on"), StopSignal: os.Interrupt})
	if err != nil {
		t.Fatal(err)
	}
	p.Stop()
	if !strings.Contains(p.Output(), "stopping on interrupt") {
		t.Errorf("StopSignal was not sent:\n%s", p.Output())
	}
	q, err := g.Start(context.Background(), Spec{Name: "s", Path: child, Args: []string{"-listen", addr, "-stubborn"},
		Ready: LogLine("listening on"), Grace: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	g.KillAll()
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("KillAll waited %v", took)
	}
	gone(t, q, addr)
}

func TestMemoryKeepsItsTail(t *testing.T) {
	m := &memory{keep: 10}
	for i := range 100 {
		fmt.Fprintf(m, "%02d,", i)
	}
	s := m.String()
	if len(s) > 2*10+3 || !strings.HasSuffix(s, "98,99,") {
		t.Errorf("kept %q", s)
	}
}

// The sluice binary, built once, starts as `sluice mock` and stops.
func TestSluiceMock(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the sluice binary")
	}
	var b Build
	defer b.Remove()
	bin, err := b.Path(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := b.Path(context.Background()); again != bin {
		t.Errorf("a second Path gave %s, not %s", again, bin)
	}
	addr := freeAddr(t)
	p, err := Start(context.Background(), Spec{Name: "mock", Path: bin, Args: []string{"mock", "--listen", addr, "--grace", "100ms"},
		Ready: HTTPOK("http://" + addr + "/health")})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(); err != nil {
		t.Errorf("sluice mock exited with %v on SIGTERM\n%s", err, p.Output())
	}
	gone(t, p, addr)
}
