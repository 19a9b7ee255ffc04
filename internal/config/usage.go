package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Usage is how the gateway keeps its usage records: per key, team,
// model, upstream model and UTC day, the requests, tokens and cost
// (docs/USAGE.md). They are kept in the store when store: is set, else
// in state.dir, else in memory only.
type Usage struct {
	// Retention is how long a day's records are kept after the day ends
	// (default 400d: a year, and a month to close its books); older days
	// are deleted. RetentionDays reads it with its default.
	Retention Days `yaml:"retention"`
}

// DefaultUsageRetention is usage.retention's default.
const DefaultUsageRetention Days = 400

// Days is a whole number of days, written with a d: 400d.
type Days int

// UnmarshalYAML reads a number of days such as 400d.
func (d *Days) UnmarshalYAML(n *yaml.Node) error {
	n = resolveAlias(n)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		*d = 0 // the default
		return nil
	}
	if n.Kind != yaml.ScalarNode {
		return nodeError(n, "want a number of days such as 400d, got %s", describe(n))
	}
	s := strings.TrimSpace(n.Value)
	num, ok := strings.CutSuffix(s, "d")
	v, err := strconv.Atoi(num)
	if !ok || err != nil || v < 0 {
		return nodeError(n, "%s is not a number of days; write whole days with a d, e.g. 400d", short(s))
	}
	if v == 0 {
		return nodeError(n, "0d would keep nothing; keep at least a day, e.g. 400d (the default)")
	}
	*d = Days(v)
	return nil
}

// D is d as a duration.
func (d Days) D() time.Duration { return time.Duration(d) * 24 * time.Hour }

// String gives the form UnmarshalYAML reads.
func (d Days) String() string { return fmt.Sprintf("%dd", int(d)) }

// MarshalYAML writes the d, so a marshalled config parses again; zero,
// the default, is null.
func (d Days) MarshalYAML() (any, error) {
	if d == 0 {
		return nil, nil
	}
	return d.String(), nil
}

// RetentionDays is Retention, or its default when unset.
func (u Usage) RetentionDays() Days {
	if u.Retention <= 0 {
		return DefaultUsageRetention
	}
	return u.Retention
}

func (c *Config) validateUsage(v *checker) {
	if r := c.Usage.Retention; r < 0 || r > 36600 {
		v.add("usage.retention", "%s is out of range; keep at least a day and at most 100 years (36600d), e.g. 400d", r)
	}
}
