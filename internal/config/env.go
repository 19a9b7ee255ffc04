package config

import (
	"os"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Environment references. A config value may name environment variables:
// ${NAME} is replaced by the variable's value, ${NAME:-fallback} by the
// fallback when the variable is unset or empty, and $${ stands for a
// literal ${. Only values are expanded, never keys or comments, and the
// expansion happens after YAML parsing, so a value cannot change the
// file's structure, and a number or duration may come from a variable
// (max_in_flight: ${MAX_IN_FLIGHT:-64}). A reference to an unset variable
// without a fallback is an error that names it.
//
// Keys are still best named with api_key_env, which keeps them out of the
// Config altogether; a value that came from the environment is never
// quoted in an error message either way.

var envRef = regexp.MustCompile(`\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}`)

// expansion is one variable substituted into the file.
type expansion struct{ name, value string }

// expandEnv expands the references in every scalar value under n.
func expandEnv(n *yaml.Node, file string, lookup func(string) (string, bool), used *[]expansion) []*Error {
	var errs []*Error
	var walk func(n *yaml.Node, isKey bool)
	walk = func(n *yaml.Node, isKey bool) {
		switch n.Kind {
		case yaml.DocumentNode, yaml.SequenceNode:
			for _, c := range n.Content {
				walk(c, false)
			}
		case yaml.MappingNode:
			for i, c := range n.Content {
				walk(c, i%2 == 0)
			}
		case yaml.ScalarNode:
			if isKey || !strings.Contains(n.Value, "${") {
				return
			}
			out := envRef.ReplaceAllStringFunc(n.Value, func(ref string) string {
				if ref == "$${" {
					return "${"
				}
				m := envRef.FindStringSubmatch(ref)
				name, fallback := m[1], m[2]
				v, ok := lookup(name)
				if ok && v != "" {
					*used = append(*used, expansion{name, v})
					return v
				}
				if fallback != "" {
					return fallback[2:]
				}
				errs = append(errs, &Error{File: file, Line: n.Line,
					Msg: "${" + name + "} names an environment variable that is not set; export it, or write ${" + name + ":-value} for a fallback"})
				return ref
			})
			if out != n.Value {
				n.Value = out
				if n.Style&yaml.TaggedStyle == 0 && n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0 {
					n.Tag = "" // a plain value is typed by what it now says: 64 is a number
				}
			}
		}
	}
	walk(n, false)
	return errs
}

// scrub keeps values that came from the environment out of error
// messages, naming their variable instead.
func scrub(errs []*Error, used []expansion) {
	for _, e := range errs {
		for _, x := range used {
			if len(x.value) < 4 {
				continue // too short to mistake, and "1" must not vanish from messages
			}
			ref := "${" + x.name + "}"
			e.Msg = strings.ReplaceAll(e.Msg, x.value, ref)
			if r := []rune(x.value); len(r) > 60 { // short() cuts long values
				e.Msg = strings.ReplaceAll(e.Msg, string(r[:60]), ref)
			}
		}
	}
}

// osLookup is the process environment.
func osLookup(name string) (string, bool) { return os.LookupEnv(name) }
