package sim

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/sluice-gw/sluice/internal/sim/report"
	"github.com/sluice-gw/sluice/internal/sim/scenario"
)

// Main implements "sluice sim SCENARIO".
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sluice sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: sluice sim SCENARIO [flags]\n\nRun a scenario's policies on a virtual clock and print the outcome table.\n\n")
		fs.PrintDefaults()
	}
	rps := fs.Float64("rps-scale", 1, "multiply every arrival rate by this `factor`")
	csvPath := fs.String("csv", "", "write the time series (one row per policy and second) to this CSV `file`")
	plotPath := fs.String("plot", "", "draw in-flight, limit, queues, p99 and outcomes over time, with the scripted events and breaker transitions, to this `file` (.svg or .png)")
	policies := fs.String("policies", "", "run only these policies (comma-separated `names`), in the scenario's order")
	jsonPath := fs.String("json", "", "write the table as JSON to this `file`")
	every := fs.Duration("sample", time.Second, "time-series sampling `period`")
	minutes := fs.Bool("minutes", false, "also print each policy minute by minute: demand, retries, peak queue, rejection p99, interactive TTFT p99, sheds by class")
	// Accept flags after the scenario path too.
	var path string
	rest := args
	for len(rest) > 0 {
		if err := fs.Parse(rest); err != nil {
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		if path != "" {
			fmt.Fprintf(stderr, "sluice sim: unexpected argument %q\n", fs.Arg(0))
			return 2
		}
		path, rest = fs.Arg(0), fs.Args()[1:]
	}
	if path == "" {
		fs.Usage()
		return 2
	}
	if *rps <= 0 || *every <= 0 {
		fmt.Fprintln(stderr, "sluice sim: --rps-scale and --sample must be positive")
		return 2
	}
	f, err := scenario.Load(path)
	if err == nil && *policies != "" {
		err = f.KeepPolicies(strings.Split(*policies, ","))
	}
	if err != nil {
		fmt.Fprintf(stderr, "sluice sim: %v\n", err)
		return 2
	}
	format := ""
	if *plotPath != "" {
		if format, err = PlotFormat(*plotPath); err != nil {
			fmt.Fprintf(stderr, "sluice sim: %v\n", err)
			return 2
		}
	}
	res, err := Run(f, Options{RPSScale: *rps, SampleEvery: *every})
	if err != nil {
		fmt.Fprintf(stderr, "sluice sim: %v\n", err)
		return 1
	}
	title := f.Scenario.Name
	if title == "" {
		title = path
	}
	if *rps != 1 {
		title += fmt.Sprintf(" (rates ×%g)", *rps)
	}
	fmt.Fprintf(stdout, "%s: %s simulated, seed %d\n\n", title, f.Scenario.Duration, f.Scenario.Seed)
	report.WriteTable(stdout, res.Rows)
	f.WriteTimelines(stdout, res.Rows, *minutes)
	for _, out := range []struct {
		path  string
		write func(io.Writer) error
	}{
		{*csvPath, func(w io.Writer) error { WriteCSV(w, res.Series); return nil }},
		{*plotPath, func(w io.Writer) error { return WritePlot(w, format, title, res.Series, res.Events, *every) }},
		{*jsonPath, func(w io.Writer) error { return report.WriteJSON(w, res.Rows) }},
	} {
		if out.path == "" {
			continue
		}
		if err := writeFile(out.path, out.write); err != nil {
			fmt.Fprintf(stderr, "sluice sim: %v\n", err)
			return 1
		}
	}
	return 0
}

func writeFile(path string, write func(io.Writer) error) error {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(fh); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}
