// Command bench is Sluice's benchmark harness. In one run, on one machine,
// it measures a direct connection to a mock provider, a bare Go reverse
// proxy, HAProxy, Sluice and optionally the Portkey gateway, each in front
// of its own `sluice mock` process on 127.0.0.1:
//
//  1. closed-loop throughput and CPU per request;
//  2. open-loop latency at a fixed rate, and latency added over direct;
//  3. the latency of 503 rejections at 10x overload (Sluice, HAProxy);
//  4. RSS per in-flight SSE stream with thousands of streams open;
//  5. whether an abandoned call is cancelled upstream during a brownout;
//  6. what hostile clients and large answers cost: idle sockets declaring
//     10 MiB bodies, concurrent 100 MB answers, a critical-header flood.
//
// With --sluice-baseline BINARY an earlier sluice runs beside the current
// one as target sluice-before in phases 2 and 6.
//
// It prints tables and PASS/FAIL against Sluice's targets, and writes the
// figures into docs/BENCHMARKS.md. Every load loop is bounded in count and
// time; every child process is stopped by PID on exit, Ctrl-C included.
//
//	go run ./cmd/sluice-bench [flags]                  # or scripts/bench.sh [flags]
//	go run ./cmd/sluice-bench --quick                  # about a minute, smoke test
//	go run ./cmd/sluice-bench baseline-proxy --listen 127.0.0.1:9000 --upstream http://127.0.0.1:8000
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/sluice-gw/sluice/internal/harness/procs"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "baseline-proxy" {
		os.Exit(baselineProxy(os.Args[2:]))
	}
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	o, err := parseOptions(args, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		return 2
	}
	// The load generator allocates per request; collecting less often
	// takes its GC out of the tail latencies it measures.
	debug.SetGCPercent(400)
	started := time.Now()
	logf := func(format string, a ...any) {
		fmt.Printf("[%6.1fs] %s\n", time.Since(started).Seconds(), fmt.Sprintf(format, a...))
	}

	// Thousands of streams need as many descriptors as the hard limit
	// allows; the children inherit the raised limit.
	nofile, err := procs.RaiseFileLimit(math.MaxUint64)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: raising RLIMIT_NOFILE: %v\n", err)
	}
	if need := uint64(2*o.streams + 1024); nofile < need && o.runs("streams") {
		fmt.Fprintf(os.Stderr, "bench: RLIMIT_NOFILE is %d; %d streams need about %d (raise it with ulimit -n)\n", nofile, o.streams, need)
	}

	dir, err := os.MkdirTemp("", "sluice-bench-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		return 1
	}
	sup := &procs.Group{LogDir: dir}
	cleanup := func() {
		sup.StopAll()
		if o.keep {
			fmt.Printf("bench: kept %s\n", dir)
		} else {
			os.RemoveAll(dir)
		}
	}
	defer cleanup()

	// First Ctrl-C: stop after the current step, clean up, report what
	// there is. Second: kill the children now and exit.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		fmt.Fprintln(os.Stderr, "bench: interrupted; stopping (again to force)")
		cancel()
		<-sigs
		sup.KillAll()
		if !o.keep {
			os.RemoveAll(dir)
		}
		os.Exit(130)
	}()

	e, ri, err := setup(ctx, o, sup, dir, logf)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		return 1
	}
	ri.NoFile = nofile
	ri.Started = started

	all := []kind{direct, goProxy, haProxy, sluice}
	if o.portkey {
		all = append(all, portkey)
	}
	r := &results{}
	if o.runs("throughput") && ctx.Err() == nil {
		r.Throughput = runThroughput(ctx, e, o, withBaseline(e, all))
	}
	if o.runs("latency") && ctx.Err() == nil {
		r.Latency = runLatency(ctx, e, o, withBaseline(e, all))
	}
	if o.runs("overload") && ctx.Err() == nil {
		r.Overload = runOverload(ctx, e, o, withBaseline(e, []kind{direct, sluice, haProxy}))
	}
	if o.runs("streams") && ctx.Err() == nil {
		r.Streams = runStreams(ctx, e, o, withBaseline(e, []kind{goProxy, haProxy, sluice}))
	}
	if o.runs("brownout") && ctx.Err() == nil {
		r.Brownout = runBrownout(ctx, e, o, all)
	}
	if o.runs("hostile") && ctx.Err() == nil {
		r.Hostile = runHostile(ctx, e, o)
	}
	ri.Took = time.Since(started)

	fmt.Printf("\nSluice benchmark, %s, %d CPUs (%s), %s\n", ri.Command, ri.Machine.CPUs, ri.Machine.CPUModel, ri.Machine.GoVersion)
	for _, t := range r.tables(o) {
		t.text(os.Stdout)
	}
	r.verdictTable(o).text(os.Stdout)

	if ctx.Err() != nil {
		fmt.Println("\nbench: interrupted; the doc is not updated")
		return 130
	}
	if o.doc != "" && (!o.quick || o.docSet) {
		if err := writeDoc(o.doc, ri, r, o); err != nil {
			fmt.Fprintf(os.Stderr, "bench: writing %s: %v\n", o.doc, err)
			return 1
		}
		fmt.Printf("\nbench: figures written to %s\n", o.doc)
	}
	return 0
}

// setup finds or builds the binaries the targets need.
func setup(ctx context.Context, o *options, sup *procs.Group, dir string, logf func(string, ...any)) (*env, runInfo, error) {
	ri := runInfo{Command: command(), Source: sourceVersion(), Machine: describeMachine(), Settings: o.settings(), HAProxy: "not installed: skipped", Portkey: "not enabled (--portkey)"}
	self, err := os.Executable()
	if err != nil {
		return nil, ri, err
	}
	e := &env{sup: sup, dir: dir, self: self, sluiceBin: o.sluiceBin, maxConn: o.streams + 1024, abortOnClose: o.haproxyAbort, logf: logf}
	if e.sluiceBin == "" {
		root, err := moduleRoot()
		if err != nil {
			return nil, ri, err
		}
		b := procs.Build{Out: filepath.Join(dir, "sluice"), Root: root}
		logf("building sluice into %s", b.Out)
		if e.sluiceBin, err = b.Path(ctx); err != nil {
			return nil, ri, err
		}
	}

	if o.baseline != "" {
		if st, err := os.Stat(o.baseline); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return nil, ri, fmt.Errorf("--sluice-baseline %s: not an executable file", o.baseline)
		}
		e.baseline = o.baseline
		logf("sluice-before: %s", o.baseline)
	}

	e.haproxyBin = o.haproxyBin
	if e.haproxyBin == "" {
		e.haproxyBin, _ = exec.LookPath("haproxy")
	}
	if e.haproxyBin != "" {
		ri.HAProxy = firstLine(e.haproxyBin, "-v")
		logf("haproxy: %s", ri.HAProxy)
	} else {
		logf("haproxy not found: its rows are skipped (install it, or run scripts/bench.sh as root)")
	}

	if o.portkey {
		pdir := o.portkeyDir
		if pdir == "" {
			pdir = filepath.Join(dir, "portkey")
		}
		logf("installing %s into %s", portkeyPackage, pdir)
		pkg, version, err := installPortkey(ctx, pdir)
		if err != nil {
			ri.Portkey = "skipped: " + err.Error()
			logf("portkey %s", ri.Portkey)
		} else {
			e.portkeyDir = pkg
			ri.Portkey = fmt.Sprintf("%s %s on node %s", portkeyPackage, version, firstLine("node", "--version"))
		}
	}
	return e, ri, nil
}

// withBaseline puts sluice-before right after sluice when --sluice-baseline
// was given; otherwise it returns kinds unchanged.
func withBaseline(e *env, kinds []kind) []kind {
	if !e.available(sluiceBefore) {
		return kinds
	}
	var out []kind
	for _, k := range kinds {
		out = append(out, k)
		if k == sluice {
			out = append(out, sluiceBefore)
		}
	}
	return out
}

// sourceVersion describes the working tree Sluice was built from.
func sourceVersion() string {
	root, err := moduleRoot()
	if err != nil {
		return ""
	}
	rev, err := exec.Command("git", "-C", root, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return ""
	}
	v := "git commit " + strings.TrimSpace(string(rev))
	if out, err := exec.Command("git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(out) > 0 {
		v += " plus uncommitted changes"
	}
	return v
}

// command is how this run was started, for the report. scripts/bench.sh
// passes its own command line in BENCH_COMMAND.
func command() string {
	if c := os.Getenv("BENCH_COMMAND"); c != "" {
		return c
	}
	parts := []string{"go run ./cmd/sluice-bench"}
	for _, a := range os.Args[1:] {
		if strings.ContainsAny(a, " \t'\"$") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

// moduleRoot walks up from the working directory to go.mod.
func moduleRoot() (string, error) {
	d, err := procs.ModuleRoot()
	if err != nil {
		return "", fmt.Errorf("%w; pass --sluice", err)
	}
	return d, nil
}
