package usage

import (
	"context"
	"sort"
	"strings"
	"time"
)

// Gap is a writer's span of days whose records the store may lack: it
// lost them, and the writer has not written them back.
type Gap struct {
	From, To string // UTC days, both included
	Writer   string
	// Label is the writer's replica (fleet.id); Durable, whether it
	// keeps its records in a state.dir, and so may yet write them back.
	Label   string
	Durable bool
}

// gapper is a store that can say which days may lack records.
type gapper interface {
	Gaps(ctx context.Context) ([]Gap, error)
}

// Gaps is the writers' records the store lost and nobody wrote back,
// as Redis holds them now.
func (s *RedisStore) Gaps(ctx context.Context) ([]Gap, error) {
	all, err := s.c.HGetAll(ctx, s.gapsKey()).Result()
	if err != nil {
		return nil, err
	}
	return gapsOf(all), nil
}

func gapsOf(m map[string]string) []Gap {
	var out []Gap
	for w, e := range m {
		if en, ok := parseEntry(e); ok {
			out = append(out, Gap{From: en.first, To: en.last, Writer: w, Label: en.label, Durable: en.durable})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].From != out[j].From {
			return out[i].From < out[j].From
		}
		return out[i].Writer < out[j].Writer
	})
	return out
}

// daysCovered is how many days from..to (both included) the gaps cover.
func daysCovered(gaps []Gap, from, to string) int {
	w := windows(gaps, from, to)
	n := 0
	for _, s := range w {
		a, _ := time.Parse(time.DateOnly, s.From)
		b, _ := time.Parse(time.DateOnly, s.To)
		n += int(b.Sub(a).Hours()/24) + 1
	}
	return n
}

// Window is a span of UTC days, both included.
type Window struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// windows are the gaps' spans within from..to, merged where they
// overlap or touch, in order.
func windows(gaps []Gap, from, to string) []Window {
	var w []Window
	for _, g := range gaps {
		a, b := max(g.From, from), min(g.To, to)
		if a > b {
			continue
		}
		w = append(w, Window{a, b})
	}
	sort.Slice(w, func(i, j int) bool { return w[i].From < w[j].From })
	var out []Window
	for _, x := range w {
		if n := len(out); n > 0 && x.From <= nextDay(out[n-1].To) {
			out[n-1].To = max(out[n-1].To, x.To)
			continue
		}
		out = append(out, x)
	}
	return out
}

func nextDay(d string) string {
	t, err := time.Parse(time.DateOnly, d)
	if err != nil {
		return d
	}
	return Day(t.AddDate(0, 0, 1))
}

// mergeSpans merges "from..to" spans for the log.
func mergeSpans(spans []string) []string {
	gaps := make([]Gap, 0, len(spans))
	for _, s := range spans {
		a, b, _ := strings.Cut(s, "..")
		gaps = append(gaps, Gap{From: a, To: b})
	}
	var out []string
	for _, w := range windows(gaps, "0000-00-00", "9999-99-99") {
		out = append(out, w.From+".."+w.To)
	}
	return out
}
