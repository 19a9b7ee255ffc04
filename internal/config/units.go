package config

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// bareNumber matches what an operator writes when they forget the unit;
// only then is "write 15s" a sensible suggestion.
var bareNumber = regexp.MustCompile(`^[+-]?[0-9]+(\.[0-9]+)?$`)

// UnmarshalYAML insists on a unit: a bare 15 has meant seconds in one
// tool and nanoseconds in another, and guessing wrong turns a timeout into
// an outage.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	n = resolveAlias(n)
	if n.Kind != yaml.ScalarNode {
		return nodeError(n, "want a duration such as 15s, got %s", describe(n))
	}
	s := strings.TrimSpace(n.Value)
	switch n.ShortTag() {
	case "!!null":
		*d = 0
		return nil
	case "!!str", "!!int", "!!float":
	default:
		return nodeError(n, "want a duration such as 15s, got %s", describe(n))
	}
	if bareNumber.MatchString(s) {
		what := bare(s)
		if n.ShortTag() == "!!str" {
			what = short(s)
		}
		return nodeError(n, "%s has no unit; write %ss", what, strings.TrimLeft(s, "+-"))
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return nodeError(n, "%s is not a duration; write a number with a unit (ms, s, m, h), e.g. 15s or 1m30s", short(s))
	}
	if v < 0 {
		return nodeError(n, "%s is negative; write a positive duration such as %s", short(s), strings.TrimPrefix(s, "-"))
	}
	*d = Duration(v)
	return nil
}

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String gives the form UnmarshalYAML accepts, e.g. "1m30s".
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalYAML writes the unit too, so a marshalled config parses again.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// sizeUnits are matched case-insensitively: "10mib" is unambiguous, and
// rejecting it would be pedantry.
var sizeUnits = map[string]int64{
	"": 1, "b": 1,
	"kb": 1000, "kib": 1 << 10,
	"mb": 1000 * 1000, "mib": 1 << 20,
	"gb": 1000 * 1000 * 1000, "gib": 1 << 30,
}

var sizeText = regexp.MustCompile(`^([0-9]+)\s*([A-Za-z]*)$`)

const sizeHint = "write a whole number of bytes, or one with a unit (B, KB, KiB, MB, MiB, GB, GiB) such as 10MiB"

// UnmarshalYAML accepts a plain byte count (1048576) or a count with a unit
// ("1MiB", "512KiB", "1MB").
func (b *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	n = resolveAlias(n)
	if n.Kind != yaml.ScalarNode {
		return nodeError(n, "want a size, got %s; %s", describe(n), sizeHint)
	}
	s := strings.TrimSpace(n.Value)
	switch n.ShortTag() {
	case "!!null":
		*b = 0
		return nil
	case "!!int":
		v, err := parseInt(s)
		if err != nil {
			return nodeError(n, "%s is out of range; %s", bare(s), sizeHint)
		}
		if v < 0 {
			return nodeError(n, "%s is negative; %s", bare(s), sizeHint)
		}
		*b = ByteSize(v)
		return nil
	case "!!str":
	default:
		return nodeError(n, "want a size, got %s; %s", describe(n), sizeHint)
	}
	m := sizeText.FindStringSubmatch(s)
	if m == nil {
		return nodeError(n, "%s is not a size; %s", short(s), sizeHint)
	}
	mult, ok := sizeUnits[strings.ToLower(m[2])]
	if !ok {
		return nodeError(n, "%s has unknown unit %s; use B, KB, KiB, MB, MiB, GB or GiB", short(s), short(m[2]))
	}
	v, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil || v > math.MaxInt64/mult {
		return nodeError(n, "%s is too large; %s", short(s), sizeHint)
	}
	*b = ByteSize(v * mult)
	return nil
}

// Int64 returns b as a byte count.
func (b ByteSize) Int64() int64 { return int64(b) }

// String uses the largest unit that divides b exactly, so the result is
// short and parses back to the same value.
func (b ByteSize) String() string {
	v := int64(b)
	if v != 0 {
		for _, u := range [...]struct {
			name string
			size int64
		}{{"GiB", 1 << 30}, {"GB", 1e9}, {"MiB", 1 << 20}, {"MB", 1e6}, {"KiB", 1 << 10}, {"KB", 1e3}} {
			if v%u.size == 0 {
				return fmt.Sprintf("%d%s", v/u.size, u.name)
			}
		}
	}
	return fmt.Sprintf("%dB", v)
}

// MarshalYAML writes the unit form, so a marshalled config parses again.
func (b ByteSize) MarshalYAML() (any, error) { return b.String(), nil }

// parseInt reads a YAML 1.2 integer as the yaml package resolves one
// (underscores, 0x/0o/0b prefixes, sign). Doing it here rather than via
// Node.Decode keeps overflow a message, not a type error string.
func parseInt(s string) (int64, error) {
	return strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 0, 64)
}

// resolveAlias follows *name to the anchored node. Anchors cannot be put on
// aliases, so one step is enough.
func resolveAlias(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

// nodeError makes an *Error for n with no file or field; the decoder fills
// those in, and yaml.Unmarshal users still get the line.
func nodeError(n *yaml.Node, format string, args ...any) *Error {
	return &Error{Line: n.Line, Msg: fmt.Sprintf(format, args...)}
}

// describe names what a node holds, for "want X, got Y" messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an unresolved alias"
	case yaml.ScalarNode:
	default:
		return "nothing"
	}
	switch tag := n.ShortTag(); tag {
	case "!!str":
		return "string " + short(n.Value)
	case "!!int":
		return "integer " + bare(n.Value)
	case "!!float":
		return "number " + bare(n.Value)
	case "!!bool":
		return "boolean " + bare(n.Value)
	case "!!null":
		return "nothing"
	case "!!timestamp":
		return "date " + bare(n.Value)
	default:
		return fmt.Sprintf("%s value %s", tag, short(n.Value))
	}
}
