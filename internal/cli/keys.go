package cli

import (
	"crypto/rand"
	"flag"
	"fmt"
	"io"

	"github.com/sluice-gw/sluice/internal/config"
)

// Keys runs "sluice keys": "new" makes a virtual key and prints it, once,
// with the SHA-256 that goes in the config; "hash" prints the SHA-256 of
// a key read from standard input, for a key made elsewhere.
func Keys(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	const usage = `usage:
  sluice keys new [--name NAME]   make a key; print it and the keys: entry for the config
  sluice keys hash < KEYFILE      print the SHA-256 of a key read from standard input
`
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "new":
		fs := flag.NewFlagSet("keys new", flag.ContinueOnError)
		fs.SetOutput(stderr)
		name := fs.String("name", "my-team", "the key's name in the config")
		if err := fs.Parse(args[1:]); err != nil {
			return 2
		}
		var b [24]byte
		if _, err := rand.Read(b[:]); err != nil {
			fmt.Fprintf(stderr, "sluice keys new: %v\n", err)
			return 1
		}
		key := fmt.Sprintf("sk-sluice-%x", b)
		fmt.Fprintf(stdout, "key (give it to the client; it is not stored anywhere):\n  %s\n\nconfig:\nkeys:\n  - name: %s\n    sha256: %s\n", key, *name, config.KeyHash(key))
		return 0
	case "hash":
		data, err := io.ReadAll(io.LimitReader(stdin, 4096))
		if err != nil {
			fmt.Fprintf(stderr, "sluice keys hash: %v\n", err)
			return 1
		}
		key := string(trimSpace(data))
		if key == "" {
			fmt.Fprintln(stderr, "sluice keys hash: no key on standard input")
			return 2
		}
		fmt.Fprintln(stdout, config.KeyHash(key))
		return 0
	}
	fmt.Fprintf(stderr, "sluice keys: unknown command %q\n%s", args[0], usage)
	return 2
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r' || b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	return b
}
