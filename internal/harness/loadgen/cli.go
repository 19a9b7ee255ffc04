package loadgen

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sluice-gw/sluice/internal/sim/report"
	"github.com/sluice-gw/sluice/internal/sim/scenario"
)

const usage = `Usage: sluice load SCENARIO --target URL [flags]

Replays a scenario file's clients against a running gateway: open-loop
arrivals at the scenario's rate, each request with its priority, patience
and retries, and prints the same outcome table as sluice sim (and, with
--minutes or a scenario's reference, the same minute-by-minute table).

Flags:
`

// cmd is the parsed command line.
type cmd struct {
	path      string
	opts      Options
	csv, json string
	quiet     bool
	minutes   bool
}

// Main is `sluice load SCENARIO --target URL [flags]`. It returns 2 for
// bad flags or an unreadable scenario, 1 when a result file cannot be
// written, and 0 after printing the report. SIGINT or SIGTERM stops the
// run early; the report then covers what was sent.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return run(ctx, args, stdout, stderr)
}

// run is Main with the signal replaced by ctx, so tests can stop it.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c, err := parseArgs(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "sluice load: %v\n", err)
		return 2
	}
	f, err := scenario.Load(c.path)
	if err != nil {
		fmt.Fprintf(stderr, "sluice load: %v\n", err)
		return 2
	}
	c.opts.Notes = stderr // even with --quiet: a note qualifies the report
	if !c.quiet {
		c.opts.Progress = stderr
	}
	row, err := Run(ctx, f, c.opts)
	var cfgErr *ConfigError
	switch {
	case errors.As(err, &cfgErr):
		fmt.Fprintf(stderr, "sluice load: %v\n", err)
		return 2
	case row == nil:
		fmt.Fprintf(stderr, "sluice load: %v\n", err)
		return 1
	case err != nil:
		fmt.Fprintf(stderr, "sluice load: interrupted; the report covers the requests sent so far\n")
	}
	rows := []*report.Row{row}
	report.WriteTable(stdout, rows)
	fmt.Fprintln(stdout)
	fmt.Fprintln(stdout, summaryLine(row))
	f.WriteTimelines(stdout, rows, c.minutes)
	code := 0
	if c.csv != "" {
		if err := writeFile(c.csv, func(w io.Writer) error { report.WriteCSV(w, rows); return nil }); err != nil {
			fmt.Fprintf(stderr, "sluice load: %v\n", err)
			code = 1
		}
	}
	if c.json != "" {
		if err := writeFile(c.json, func(w io.Writer) error { return report.WriteJSON(w, rows) }); err != nil {
			fmt.Fprintf(stderr, "sluice load: %v\n", err)
			code = 1
		}
	}
	return code
}

// parseArgs accepts the scenario path before, between or after the flags,
// as the usage line puts it first while the flag package stops at the
// first argument that is not a flag.
func parseArgs(args []string, stderr io.Writer) (*cmd, error) {
	c := &cmd{}
	fs := flag.NewFlagSet("sluice load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	fs.StringVar(&c.opts.Target, "target", "", "base URL of the gateway, e.g. http://127.0.0.1:8080 (required); several, comma-separated, are taken in turn")
	fs.DurationVar(&c.opts.Duration, "duration", 0, "how long to issue requests, in wall-clock time (default: the scenario's duration, time-scaled)")
	fs.Float64Var(&c.opts.RPSScale, "rps-scale", 1, "multiply every rate")
	fs.Float64Var(&c.opts.TimeScale, "time-scale", 1, "multiply every time in the scenario and divide every rate: 0.1 replays it ten times faster")
	fs.IntVar(&c.opts.MaxRequests, "max-requests", DefaultMaxRequests, "stop issuing after this many unique requests")
	fs.StringVar(&c.opts.Metrics, "metrics", "", "the gateway's admin `URL` for /metrics, e.g. http://127.0.0.1:9090/metrics: report its hedges, retries, rescues and probes as extra calls")
	fs.StringVar(&c.opts.CriticalKey, "critical-key", "", "client `key` sent with the scenario's critical requests, which the gateway must declare critical (default: $SLUICE_LOAD_CRITICAL_KEY)")
	fs.StringVar(&c.csv, "csv", "", "also write the outcome counts as CSV to `FILE`")
	fs.StringVar(&c.json, "json", "", "also write the report as JSON to `FILE`")
	fs.BoolVar(&c.quiet, "quiet", false, "no progress lines on stderr")
	fs.StringVar(&c.opts.Policy, "policy", "", "replay the clients of the scenario's policy `NAME` (its retry and send_deadline) and name the row after it; serve the gateway with sluice serve --config SCENARIO --policy NAME")
	fs.BoolVar(&c.minutes, "minutes", false, "also print the run minute by minute, in scenario time: demand, retries, peak queue, rejection p99, interactive TTFT p99, sheds by class (printed anyway when the scenario names a reference)")
	fs.Func("upstream-stats", "an upstream's /stats `URL`, e.g. http://127.0.0.1:8000/stats, whose \"waiting\" is sampled with the gateway's queue (--metrics) for the minute-by-minute peak queue; repeat or comma-separate for several", func(v string) error {
		c.opts.UpstreamStats = append(c.opts.UpstreamStats, v)
		return nil
	})
	c.opts.QueuePoll = DefaultQueuePoll
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	switch {
	case len(pos) == 0:
		return nil, errors.New("give a scenario file: sluice load SCENARIO --target URL")
	case len(pos) > 1:
		return nil, fmt.Errorf("one scenario file at a time, not %q", pos)
	case c.opts.Target == "":
		return nil, errors.New("--target is required, e.g. --target http://127.0.0.1:8080")
	case !(c.opts.RPSScale > 0) || !(c.opts.TimeScale > 0):
		return nil, errors.New("--rps-scale and --time-scale must be positive")
	case c.opts.Duration < 0:
		return nil, errors.New("--duration must not be negative")
	case c.opts.MaxRequests <= 0:
		return nil, errors.New("--max-requests must be positive")
	}
	c.path = pos[0]
	if _, err := targetURLs(c.opts.Target); err != nil {
		return nil, err
	}
	if _, err := statsURLs(c.opts.UpstreamStats); err != nil {
		return nil, err
	}
	if c.opts.CriticalKey == "" {
		// Read after parsing, so the key never shows in --help.
		c.opts.CriticalKey = os.Getenv("SLUICE_LOAD_CRITICAL_KEY")
	}
	return c, nil
}

// summaryLine gives what the table leaves out: the traffic the clients
// made, retries included, and how fast refusals came back.
func summaryLine(r *report.Row) string {
	var rej report.Samples
	for _, s := range r.Rejection {
		rej = append(rej, s...)
	}
	ms := func(d time.Duration) string {
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	}
	line := fmt.Sprintf("attempts %d, unique requests %d, retry amplification %.2f",
		r.Attempts, r.Unique, r.Amplification())
	if len(rej) == 0 {
		return line + ", no shed answers"
	}
	return fmt.Sprintf("%s, rejection latency p50 %s p99 %s max %s (%d shed answers)", line,
		ms(rej.Quantile(.5)), ms(rej.Quantile(.99)), ms(rej.Quantile(1)), len(rej))
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}
