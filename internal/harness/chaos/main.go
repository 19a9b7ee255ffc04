package chaos

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"
)

// Options are one chaos run's settings; Main fills them from flags.
type Options struct {
	// Bin is the sluice binary to run (default: this executable).
	Bin string
	// Span is how long each fault's traffic runs.
	Span time.Duration
	// Short marks a smoke run: fewer slow clients.
	Short bool
	// Overload is how long overload-10x runs (default: Span).
	Overload time.Duration
	// Connections is how many clients many-connections holds open at
	// once, lowered to what the open-file limit allows.
	Connections int
	// Only, when set, names the faults to run.
	Only []string
	// Progress, when set, gets a line per fault as it ends.
	Progress io.Writer
}

// Run runs the faults and returns the report. An error means the run
// could not be made at all (an unknown fault); a fault whose processes
// would not start is a row that does not hold.
func Run(o Options) (report, error) {
	rep := report{Started: time.Now(), Span: o.Span, Machine: fmt.Sprintf("%d CPUs, %s %s/%s", runtime.NumCPU(), runtime.Version(), runtime.GOOS, runtime.GOARCH)}
	chosen, err := choose(o.Only)
	if err != nil {
		return rep, err
	}
	if o.Overload == 0 {
		o.Overload = o.Span
	}
	for _, f := range chosen {
		row := runFault(f, o)
		rep.Rows = append(rep.Rows, row)
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "%-30s %-4s sent %d, ok %d, error %d, cut %d, left %d, bad %d (%v)\n",
				f.name, map[bool]string{true: "ok", false: "FAIL"}[row.Holds()], row.Sent, row.OK, row.Errors, row.Cut, row.Left, row.Bad, row.Took.Round(100*time.Millisecond))
			for _, s := range row.Fails {
				fmt.Fprintf(o.Progress, "    %s\n", s)
			}
		}
	}
	return rep, nil
}

// choose picks the faults named, in the table's order.
func choose(only []string) ([]fault, error) {
	if len(only) == 0 {
		return faults, nil
	}
	want := map[string]bool{}
	for _, n := range only {
		want[n] = true
	}
	var out []fault
	for _, f := range faults {
		if want[f.name] {
			out = append(out, f)
			delete(want, f.name)
		}
	}
	for n := range want {
		return nil, fmt.Errorf("no fault named %q (sluice chaos --list names them)", n)
	}
	return out, nil
}

// runFault plays one fault on fresh processes and measures it.
func runFault(f fault, o Options) row {
	start := time.Now()
	r := &run{bin: o.Bin, span: o.Span, short: o.Short, overload: o.Overload, connections: o.Connections}
	r.row = row{Fault: f.name, Injected: f.injected}
	dir, err := os.MkdirTemp("", "sluice-chaos-")
	if err != nil {
		r.fail("%v", err)
		return r.row
	}
	r.dir = dir
	defer r.close()
	if err := f.play(r); err != nil {
		r.fail("the fault could not be played: %v", err)
	}
	r.measure()
	r.row.Took = time.Since(start)
	if !r.row.Holds() && o.Progress != nil && r.gw != nil {
		fmt.Fprintf(o.Progress, "--- %s: the gateway's log, last lines\n%s\n---\n", f.name, tail(r.gw.Output(), 30))
	}
	return r.row
}

const helpText = `usage: sluice chaos [flags]

Play each fault against real processes on loopback (sluice serve, sluice
mock, a fault-injecting TCP relay, redis-server), check every client got
one well-formed answer and that nothing leaked, and print the table (or
write it, --out docs/RELIABILITY.md). Exits 1 when a row does not hold.

`

// Main is sluice chaos.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sluice chaos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, helpText); fs.PrintDefaults() }
	var (
		o     Options
		only  = fs.String("only", "", "comma-separated `faults` to run (default: all; --list names them)")
		out   = fs.String("out", "", "write the Markdown report to `file` (default: stdout)")
		list  = fs.Bool("list", false, "list the faults and exit")
		short = fs.Bool("short", false, "the smoke run CI does: 2s per fault, fewer connections")
	)
	fs.StringVar(&o.Bin, "bin", "", "the sluice `binary` to run (default: this one)")
	fs.DurationVar(&o.Span, "span", 0, "traffic time per fault (default 20s, or 2s with --short)")
	fs.DurationVar(&o.Overload, "overload", 0, "how long overload-10x runs (default: --span; the issue's soak is 10m)")
	fs.IntVar(&o.Connections, "connections", 0, "clients many-connections holds open at once (default 10000, or 500 with --short)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *list {
		for _, f := range faults {
			fmt.Fprintf(stdout, "%-30s %s\n", f.name, f.injected)
		}
		return 0
	}
	o.Short = *short
	o.Span = or(o.Span, 20*time.Second, 2*time.Second, o.Short)
	if o.Connections == 0 {
		o.Connections = map[bool]int{true: 500, false: 10000}[o.Short]
	}
	if *only != "" {
		o.Only = strings.Split(*only, ",")
	}
	bin, err := locateBinary(o.Bin)
	if err != nil {
		fmt.Fprintf(stderr, "sluice chaos: %v\n", err)
		return 2
	}
	o.Bin, o.Progress = bin, stderr
	rep, err := Run(o)
	if err != nil {
		fmt.Fprintf(stderr, "sluice chaos: %v\n", err)
		return 2
	}
	rep.Command = strings.TrimSpace("go run ./cmd/sluice chaos " + strings.Join(args, " "))
	var b bytes.Buffer
	rep.write(&b)
	if *out == "" {
		stdout.Write(b.Bytes())
	} else if err := os.WriteFile(*out, b.Bytes(), 0o644); err != nil {
		fmt.Fprintf(stderr, "sluice chaos: %v\n", err)
		return 1
	}
	if !rep.holds() {
		fmt.Fprintln(stderr, "sluice chaos: some rows do not hold")
		return 1
	}
	return 0
}

// tail is s's last n lines.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// locateBinary finds the sluice binary to run: the one named, or this
// very executable, which is sluice when the run is `sluice chaos`.
func locateBinary(named string) (string, error) {
	if named != "" {
		return named, nil
	}
	return os.Executable()
}

// or is v if set, else the short or the full default.
func or(v, full, short time.Duration, isShort bool) time.Duration {
	switch {
	case v != 0:
		return v
	case isShort:
		return short
	}
	return full
}
