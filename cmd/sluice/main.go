// Command sluice is an LLM API gateway that stays useful when a model
// provider slows down. See README.md.
package main

import (
	"os"

	"github.com/sluice-gw/sluice/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
