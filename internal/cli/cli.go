// Package cli implements the sluice command's subcommands.
package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/sluice-gw/sluice/internal/harness/chaos"
	"github.com/sluice-gw/sluice/internal/harness/loadgen"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/sim"
)

const usage = `sluice: an LLM API gateway that says no early and cheaply.

Usage:
  sluice demo [--duration 60s]             the 60-second tour: fake providers, the gateway and load on loopback,
                                           a brownout watched live (terminal and dashboard), then with/without Sluice
  sluice serve [--config FILE] [--check] [--listen ADDR] [--admin-listen ADDR]
                                           run the gateway (no config: embedded default with a built-in fake provider)
  sluice mock [flags]                      run a fake OpenAI/Anthropic-compatible provider
  sluice sim SCENARIO [flags]              simulate a scenario's policies on a virtual clock
  sluice load SCENARIO --target URL [flags] replay a scenario's traffic against a running gateway
  sluice chaos [--short] [--only F] [--out FILE]
                                           play faults against real processes and check the outcomes (docs/RELIABILITY.md)
  sluice keys create|list|show|rotate|revoke|disable|enable
                                           manage keys at run time through a gateway's admin API (docs/KEYS.md)
  sluice keys new|hash                     make a virtual key and the config entry for it (declarative keys:)
  sluice prices [--config FILE] [--json]   the price table requests are costed at (shipped, and the config's prices:)
  sluice version                           print the version and build
  sluice help                              show this help

Run "sluice COMMAND --help" for a command's flags.
`

// Main runs the subcommand named by args[0] and returns the exit code:
// 0 on success, 2 for bad usage or configuration, 1 for other failures.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return Serve(args[1:], stdout, stderr)
	case "demo":
		return Demo(args[1:], stdout, stderr)
	case "mock":
		return mock.Main(args[1:], stdout, stderr)
	case "sim":
		return sim.Main(args[1:], stdout, stderr)
	case "load":
		return loadgen.Main(args[1:], stdout, stderr)
	case "chaos":
		return chaos.Main(args[1:], stdout, stderr)
	case "keys":
		return Keys(args[1:], os.Stdin, stdout, stderr)
	case "prices":
		return Prices(args[1:], stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, Version())
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "sluice: unknown command %q\n\n%s", args[0], usage)
	return 2
}
