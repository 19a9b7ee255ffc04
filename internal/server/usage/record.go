package usage

import (
	"strings"
	"time"
)

// Row is what a usage record is kept per, besides its day.
type Row struct {
	Key  string // the virtual key's name, "-" for none
	Team string // the key's tenant (keys[].tenant, else its name)
	// Model is the client-facing model; Upstream the provider's name for
	// it, which prices are keyed by.
	Model, Upstream string
}

// Counts are what a row's upstream calls used on a day. Input excludes
// CachedInput: the prompt was Input + CachedInput tokens. Each billed
// call adds its tokens and cost to the row of its own upstream model
// (Calls); Requests counts the client requests a row's calls answered.
type Counts struct {
	Requests, Input, CachedInput, Output int64
	// Cost is in micro-dollars, at the effective prices (0 for a model
	// with no price).
	Cost int64
	// Calls is the billed upstream calls: every call a provider may
	// charge for (an answer, a hedge's loser, a continuation), so a
	// request can add several.
	Calls int64
}

// Add adds o to c.
func (c *Counts) Add(o Counts) {
	c.Requests += o.Requests
	c.Input += o.Input
	c.CachedInput += o.CachedInput
	c.Output += o.Output
	c.Cost += o.Cost
	c.Calls += o.Calls
}

// Record is one row's counts on one UTC day (YYYY-MM-DD).
type Record struct {
	Day string
	Row
	Counts
}

// Day is t's UTC day, as records name it.
func Day(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// sep joins a row's names in a store's field; clean takes it, and line
// breaks, out of names.
const sep = "\x1f"

func clean(s string) string {
	if strings.ContainsAny(s, sep+"\n\r") {
		s = strings.Map(func(r rune) rune {
			if r == 0x1f || r == '\n' || r == '\r' {
				return ' '
			}
			return r
		}, s)
	}
	return s
}

func (r Row) clean() Row {
	return Row{Key: clean(r.Key), Team: clean(r.Team), Model: clean(r.Model), Upstream: clean(r.Upstream)}
}

func (r Row) field() string { return r.Key + sep + r.Team + sep + r.Model + sep + r.Upstream }

func parseField(f string) (Row, bool) {
	p := strings.Split(f, sep)
	if len(p) != 4 {
		return Row{}, false
	}
	return Row{Key: p[0], Team: p[1], Model: p[2], Upstream: p[3]}, true
}
