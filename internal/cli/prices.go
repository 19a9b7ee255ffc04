package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/sluice-gw/sluice/internal/config"
)

// Prices runs "sluice prices": the price table a configuration costs
// requests at (the shipped table, overridden model by model by the
// config's prices:), each row with its source, and the shipped table's
// date.
func Prices(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sluice prices", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "YAML configuration `file` whose prices: override the shipped table; without it, the shipped table alone")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: sluice prices [--config FILE] [--json]\n\nPrint the price table requests are costed at, in US dollars per million tokens,\nby upstream model (a target's model:): the table shipped in the binary, and\nthe config's prices:, which replace a shipped model's price whole.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "sluice prices: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	cfg := &config.Config{}
	if *path != "" {
		c, err := config.Load(*path)
		if err != nil {
			fmt.Fprintf(stderr, "sluice prices: invalid configuration:\n%v\n", err)
			return 2
		}
		cfg = c
	}
	rows := cfg.EffectivePrices()
	compiled := config.ShippedPrices().Compiled
	if *asJSON {
		type row struct {
			Model       string  `json:"model"`
			Input       float64 `json:"input"`
			CachedInput float64 `json:"cached_input"`
			Output      float64 `json:"output"`
			Source      string  `json:"source"`
		}
		out := struct {
			Compiled string `json:"shipped_compiled"`
			Unit     string `json:"unit"`
			Models   []row  `json:"models"`
		}{Compiled: compiled, Unit: "USD per million tokens", Models: make([]row, 0, len(rows))}
		for _, r := range rows {
			c := r.Price.CachedInput
			if c == 0 {
				c = r.Price.Input
			}
			out.Models = append(out.Models, row{r.Model, r.Price.Input, c, r.Price.Output, r.Source})
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			fmt.Fprintf(stderr, "sluice prices: %v\n", err)
			return 1
		}
		return 0
	}
	fmt.Fprintf(stdout, "US dollars per million tokens. Shipped table compiled %s from the vendors' list prices:\ncheck each model you use against the vendor's pricing page; a config's prices: overrides a model.\n\n", compiled)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MODEL\tINPUT\tCACHED INPUT\tOUTPUT\tSOURCE")
	dollars := func(v float64) string {
		// At least cents: 4.00, 0.80, 0.075.
		s := strconv.FormatFloat(v, 'f', -1, 64)
		if t := strconv.FormatFloat(v, 'f', 2, 64); len(t) > len(s) {
			return t
		}
		return s
	}
	for _, r := range rows {
		cached := dollars(r.Price.CachedInput)
		if r.Price.CachedInput == 0 {
			cached = "= input"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Model, dollars(r.Price.Input), cached, dollars(r.Price.Output), r.Source)
	}
	if err := tw.Flush(); err != nil {
		fmt.Fprintf(stderr, "sluice prices: %v\n", err)
		return 1
	}
	return 0
}
