package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/sluice-gw/sluice/internal/harness/procs"
)

// kind names one way of reaching the upstream.
type kind string

const (
	direct  kind = "direct"
	goProxy kind = "go-proxy"
	haProxy kind = "haproxy"
	sluice  kind = "sluice"
	portkey kind = "portkey"
	// sluiceBefore is an earlier sluice binary (--sluice-baseline), run
	// with the same generated configuration as sluice.
	sluiceBefore kind = "sluice-before"
)

// isSluice reports whether a kind is a sluice serve process, which has an
// admin listener with /metrics and writes the JSON request log.
func (k kind) isSluice() bool { return k == sluice || k == sluiceBefore }

// mockProfile is the upstream behaviour for one phase.
type mockProfile struct {
	ttft   time.Duration // time to first token
	tpot   time.Duration // time per token after the first
	tokens int           // output tokens per reply
	// failStatus, when set, makes the mock answer every call with this
	// status at once (the overload phase's measurement floor).
	failStatus int
}

// env is what every phase needs to start targets.
type env struct {
	sup        *procs.Group
	dir        string // temp dir
	self       string // this harness's executable, for baseline-proxy
	sluiceBin  string
	baseline   string // sluice-before's binary; empty without --sluice-baseline
	haproxyBin string // empty when HAProxy is unavailable
	portkeyDir string // the installed package's dir; empty when disabled
	maxConn    int    // HAProxy maxconn
	// abortOnClose adds "option abortonclose" to HAProxy's config.
	abortOnClose bool
	logf         func(format string, args ...any)
}

// target is one running proxy (or none, for direct) in front of its own
// freshly started mock, so upstream counters belong to this target alone.
type target struct {
	kind    kind
	url     string      // root URL the load generator calls (no /v1)
	header  http.Header // extra request headers (Portkey's config)
	proc    *procs.Proc // the measured process: the proxy, or the mock for direct
	mock    *mockCtl
	admin   string // Sluice's admin root URL
	env     *env
	started []*procs.Proc
}

// available reports whether a kind can run on this machine.
func (e *env) available(k kind) bool {
	switch k {
	case haProxy:
		return e.haproxyBin != ""
	case portkey:
		return e.portkeyDir != ""
	case sluiceBefore:
		return e.baseline != ""
	}
	return true
}

// start launches a mock with profile p and, unless k is direct, a proxy of
// kind k in front of it; it returns once both answer.
func (e *env) start(ctx context.Context, k kind, p mockProfile, l limits) (*target, error) {
	t := &target{kind: k, env: e, header: http.Header{}}
	mockPort, err := procs.FreePort()
	if err != nil {
		return nil, err
	}
	mockURL := "http://" + addr(mockPort)
	argv := []string{e.sluiceBin, "mock",
		"--listen", addr(mockPort),
		"--ttft", p.ttft.String(),
		"--tpot", p.tpot.String(),
		"--output-tokens", strconv.Itoa(p.tokens),
		"--seed", "1",
		"--grace", "100ms",
	}
	if p.failStatus != 0 {
		argv = append(argv, "--fail-rate", "1", "--fail-kind", "status", "--fail-status", strconv.Itoa(p.failStatus))
	}
	m, err := e.sup.Start(ctx, childSpec("mock-"+string(k), "", argv, procs.HTTPOK(mockURL+"/health"), 10*time.Second))
	if err != nil {
		return nil, err
	}
	t.started = append(t.started, m)
	t.mock = &mockCtl{url: mockURL, proc: m}
	if k == direct {
		t.url, t.proc = mockURL, m
	} else if err := e.startProxy(ctx, t, mockPort, l); err != nil {
		t.stop()
		return nil, err
	}
	if p.ttft < time.Second && p.failStatus == 0 {
		if err := sanityCheck(ctx, t); err != nil {
			t.stop()
			return nil, fmt.Errorf("%s: sanity request failed: %w (logs: %s)", k, err, t.proc.LogPath())
		}
	}
	return t, nil
}

func (e *env) startProxy(ctx context.Context, t *target, mockPort int, l limits) error {
	port, err := procs.FreePort()
	if err != nil {
		return err
	}
	mockURL := "http://" + addr(mockPort)
	t.url = "http://" + addr(port)
	var (
		argv    []string
		workDir string
		ready   = procs.TCPOpen(addr(port))
		wait    = 10 * time.Second
	)
	switch t.kind {
	case goProxy:
		argv = []string{e.self, "baseline-proxy", "--listen", addr(port), "--upstream", mockURL}
	case haProxy:
		cfg := filepath.Join(e.dir, fmt.Sprintf("haproxy-%d.cfg", port))
		if err := os.WriteFile(cfg, []byte(haproxyConfig(addr(port), addr(mockPort), l, e.maxConn, e.abortOnClose)), 0o644); err != nil {
			return err
		}
		argv = []string{e.haproxyBin, "-db", "-f", cfg}
	case sluice, sluiceBefore:
		adminPort, err := procs.FreePort()
		if err != nil {
			return err
		}
		cfg := filepath.Join(e.dir, fmt.Sprintf("sluice-%d.yaml", port))
		if err := os.WriteFile(cfg, []byte(sluiceConfig(addr(port), addr(adminPort), mockURL, l)), 0o644); err != nil {
			return err
		}
		bin := e.sluiceBin
		if t.kind == sluiceBefore {
			bin = e.baseline
		}
		argv = []string{bin, "serve", "--config", cfg}
		t.admin = "http://" + addr(adminPort)
		ready = procs.HTTPOK(t.admin + "/readyz")
	case portkey:
		argv = []string{"node", "build/start-server.js", "--port=" + strconv.Itoa(port), "--headless"}
		workDir = e.portkeyDir
		t.header.Set("x-portkey-config", portkeyConfig(mockURL))
		wait = 60 * time.Second
	default:
		return fmt.Errorf("unknown target %q", t.kind)
	}
	c, err := e.sup.Start(ctx, childSpec(string(t.kind), workDir, argv, ready, wait))
	if err != nil {
		return err
	}
	t.started = append(t.started, c)
	t.proc = c
	return nil
}

// childSpec is how the benchmark runs every child: output to a log file
// in the temp dir (the group's), ready when ready passes within wait, and
// stopped by SIGTERM with 2 s to go.
func childSpec(name, workDir string, argv []string, ready procs.Check, wait time.Duration) procs.Spec {
	return procs.Spec{Name: name, Path: argv[0], Args: argv[1:], Dir: workDir, Ready: ready, ReadyWithin: wait, Grace: 2 * time.Second}
}

func addr(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }

// stop ends the proxy, then its mock.
func (t *target) stop() {
	for i := len(t.started) - 1; i >= 0; i-- {
		t.started[i].Stop()
	}
	t.started = nil
}

// sanityCheck sends one short chat completion and wants a 200.
func sanityCheck(ctx context.Context, t *target) error {
	c := newClient(t, chatBody(false, 1), 10)
	defer c.close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	r := c.do(ctx)
	if r.err != nil {
		return r.err
	}
	if r.status != http.StatusOK {
		return fmt.Errorf("status %d", r.status)
	}
	return nil
}
