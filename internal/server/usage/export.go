package usage

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Query is what an export asks for.
type Query struct {
	// From and To are the first and last UTC days (YYYY-MM-DD).
	From, To time.Time
	// Group is what rows are per, besides the day: "" (key, team, model
	// and upstream model: the records as kept), key (with its team),
	// team, model (with its upstream model) or day.
	Group string
	// Format is json or csv.
	Format string
	// Key, Team and Model, when set, keep only the records of that key,
	// team or client-facing model.
	Key, Team, Model string
}

// MaxExportDays bounds an export's span: ten years.
const MaxExportDays = 3660

// Groups and formats an export takes.
var (
	groups  = []string{"key", "team", "model", "day"}
	formats = []string{"json", "csv"}
	params  = []string{"from", "to", "group", "format", "key", "team", "model"}
)

// QueryError is a query that cannot be answered, and why, in words for
// the caller (a 400).
type QueryError struct{ Msg string }

func (e *QueryError) Error() string { return e.Msg }

// ParseQuery reads an export's query string: from and to (default: the
// 30 days to today), group, format (default json), and the key, team
// and model filters. today is the current UTC day.
func ParseQuery(v url.Values, today time.Time) (Query, error) {
	bad := func(format string, args ...any) (Query, error) {
		return Query{}, &QueryError{Msg: fmt.Sprintf(format, args...)}
	}
	for name, vals := range v {
		if !slices.Contains(params, name) {
			return bad("unknown parameter %s; the export takes %s", short(name), strings.Join(params, ", "))
		}
		if len(vals) > 1 {
			return bad("%s is given %d times; give it once", name, len(vals))
		}
	}
	q := Query{Group: v.Get("group"), Format: v.Get("format"), Key: v.Get("key"), Team: v.Get("team"), Model: v.Get("model")}
	day := func(name string, def time.Time) (time.Time, error) {
		s := v.Get(name)
		if s == "" {
			return def, nil
		}
		t, err := time.Parse(time.DateOnly, s)
		if err != nil {
			return time.Time{}, &QueryError{Msg: fmt.Sprintf("%s=%s is not a day; write YYYY-MM-DD, e.g. %s=%s", name, short(s), name, today.Format(time.DateOnly))}
		}
		return t, nil
	}
	today = today.UTC().Truncate(24 * time.Hour)
	var err error
	if q.To, err = day("to", today); err != nil {
		return Query{}, err
	}
	if q.From, err = day("from", q.To.AddDate(0, 0, -29)); err != nil {
		return Query{}, err
	}
	if q.From.After(q.To) {
		return bad("from=%s is after to=%s; the export covers from..to, both included", q.From.Format(time.DateOnly), q.To.Format(time.DateOnly))
	}
	if n := int(q.To.Sub(q.From).Hours()/24) + 1; n > MaxExportDays {
		return bad("from..to spans %d days; export at most %d at once", n, MaxExportDays)
	}
	if q.Group != "" && !slices.Contains(groups, q.Group) {
		return bad("group=%s: group by %s, or leave it out for a row per key and model", short(q.Group), strings.Join(groups, ", "))
	}
	if q.Format == "" {
		q.Format = "json"
	}
	if !slices.Contains(formats, q.Format) {
		return bad("format=%s: write format=json or format=csv", short(q.Format))
	}
	return q, nil
}

func short(s string) string {
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return strconv.Quote(s)
}

// columns are the names an export's rows have, for its group.
func (q Query) columns() []string {
	names := map[string][]string{
		"":      {"day", "key", "team", "model", "upstream_model"},
		"key":   {"day", "key", "team"},
		"team":  {"day", "team"},
		"model": {"day", "model", "upstream_model"},
		"day":   {"day"},
	}[q.Group]
	return append(names, "requests", "calls", "input_tokens", "cached_input_tokens", "output_tokens", "cost_micros", "cost_usd")
}

// group is rec's row as the query groups it: the names it keeps.
func (q Query) group(r Row) Row {
	switch q.Group {
	case "key":
		return Row{Key: r.Key, Team: r.Team}
	case "team":
		return Row{Team: r.Team}
	case "model":
		return Row{Model: r.Model, Upstream: r.Upstream}
	case "day":
		return Row{}
	}
	return r
}

func (q Query) keeps(r Row) bool {
	return (q.Key == "" || r.Key == q.Key) && (q.Team == "" || r.Team == q.Team) && (q.Model == "" || r.Model == q.Model)
}

// Stats say what an export did.
type Stats struct {
	Days, Rows int
	// MaxHeld is the most records it held in memory at once: one day's
	// records, as the store gave them, at most.
	MaxHeld int
	// Incomplete are the spans it marked as possibly incomplete.
	Incomplete []Window
}

// Export writes q's rows from s to w, one day at a time: each day's
// records are read, filtered and grouped, sorted, written and dropped
// before the next day is read. begin is called before the first byte is
// written, once the first day has been read, so a store that cannot be
// read is told before any answer has started; it is given the spans of
// q's days the store says may be incomplete (Gaps: records it lost that
// no replica has written back), which the export marks too (JSON:
// "incomplete"; CSV: a first line starting with #). An error after
// that ends the export short; the caller should not present it as
// whole.
func Export(ctx context.Context, w io.Writer, s Store, q Query, begin func(incomplete []Window)) (Stats, error) {
	var st Stats
	var incomplete []Window
	if g, ok := s.(gapper); ok {
		gaps, err := g.Gaps(ctx)
		if err != nil {
			return st, err
		}
		incomplete = windows(gaps, q.From.Format(time.DateOnly), q.To.Format(time.DateOnly))
	}
	st.Incomplete = incomplete
	bw := bufio.NewWriterSize(w, 32<<10)
	var out rowWriter
	if q.Format == "csv" {
		out = &csvRows{bw: bw, w: csv.NewWriter(bw), cols: q.columns(), incomplete: incomplete}
	} else {
		out = &jsonRows{w: bw, q: q, incomplete: incomplete}
	}
	started := false
	for d := q.From; !d.After(q.To); d = d.AddDate(0, 0, 1) {
		day := d.Format(time.DateOnly)
		rows := map[Row]*Counts{}
		held := 0
		err := s.Read(ctx, day, func(r Record) error {
			held++
			if !q.keeps(r.Row) {
				return nil
			}
			g := q.group(r.Row)
			c := rows[g]
			if c == nil {
				c = &Counts{}
				rows[g] = c
			}
			c.Add(r.Counts)
			return nil
		})
		if err != nil {
			return st, err
		}
		st.Days++
		st.MaxHeld = max(st.MaxHeld, held)
		if !started {
			started = true
			if begin != nil {
				begin(incomplete)
			}
			if err := out.begin(); err != nil {
				return st, err
			}
		}
		keys := make([]Row, 0, len(rows))
		for k := range rows {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return keys[i].field() < keys[j].field() })
		for _, k := range keys {
			if err := out.row(Record{Day: day, Row: k, Counts: *rows[k]}); err != nil {
				return st, err
			}
			st.Rows++
		}
		if err := ctx.Err(); err != nil {
			return st, err
		}
	}
	if !started {
		if begin != nil {
			begin(incomplete)
		}
		if err := out.begin(); err != nil {
			return st, err
		}
	}
	if err := out.end(); err != nil {
		return st, err
	}
	return st, bw.Flush()
}

type rowWriter interface {
	begin() error
	row(Record) error
	end() error
}

// dollars writes micro-dollars as dollars, to the micro-dollar.
func dollars(m int64) string {
	sign := ""
	if m < 0 {
		sign, m = "-", -m
	}
	return fmt.Sprintf("%s%d.%06d", sign, m/1e6, m%1e6)
}

type csvRows struct {
	bw         *bufio.Writer
	w          *csv.Writer
	cols       []string
	rec        []string
	incomplete []Window
}

// incompleteNote is the CSV's first line when some of its days may lack
// records: a comment, which a reader that takes the first line for the
// columns stumbles on rather than passing over.
func incompleteNote(w []Window) string {
	spans := make([]string, len(w))
	for i, x := range w {
		spans[i] = x.From + " to " + x.To
	}
	return "# incomplete: records from " + strings.Join(spans, ", ") +
		" may be missing: the usage store lost them and no running replica has written them back (docs/USAGE.md)\n"
}

func (c *csvRows) begin() error {
	if len(c.incomplete) > 0 {
		if _, err := c.bw.WriteString(incompleteNote(c.incomplete)); err != nil {
			return err
		}
	}
	return c.w.Write(c.cols)
}

func (c *csvRows) row(r Record) error {
	c.rec = c.rec[:0]
	for _, col := range c.cols {
		c.rec = append(c.rec, field(r, col))
	}
	return c.w.Write(c.rec)
}

func (c *csvRows) end() error {
	c.w.Flush()
	return c.w.Error()
}

func field(r Record, col string) string {
	switch col {
	case "day":
		return r.Day
	case "key":
		return r.Key
	case "team":
		return r.Team
	case "model":
		return r.Model
	case "upstream_model":
		return r.Upstream
	case "requests":
		return strconv.FormatInt(r.Requests, 10)
	case "calls":
		return strconv.FormatInt(r.Calls, 10)
	case "input_tokens":
		return strconv.FormatInt(r.Input, 10)
	case "cached_input_tokens":
		return strconv.FormatInt(r.CachedInput, 10)
	case "output_tokens":
		return strconv.FormatInt(r.Output, 10)
	case "cost_micros":
		return strconv.FormatInt(r.Cost, 10)
	case "cost_usd":
		return dollars(r.Cost)
	}
	return ""
}

type jsonRows struct {
	w          *bufio.Writer
	q          Query
	incomplete []Window
	cols       []string
	n          int
	bytes      []byte
}

func (j *jsonRows) begin() error {
	j.cols = j.q.columns()
	group := j.q.Group
	if group == "" {
		group = "none"
	}
	inc, _ := json.Marshal(j.incomplete)
	if j.incomplete == nil {
		inc = []byte("[]")
	}
	_, err := fmt.Fprintf(j.w, `{"from":%q,"to":%q,"group":%q,"cost_unit":"micro-dollars (cost_usd: US dollars)","incomplete":%s,"rows":[`,
		j.q.From.Format(time.DateOnly), j.q.To.Format(time.DateOnly), group, inc)
	return err
}

func (j *jsonRows) row(r Record) error {
	b := j.bytes[:0]
	if j.n > 0 {
		b = append(b, ',')
	}
	b = append(b, "\n{"...)
	for i, col := range j.cols {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, col...)
		b = append(b, `":`...)
		switch col {
		case "requests", "calls", "input_tokens", "cached_input_tokens", "output_tokens", "cost_micros":
			b = append(b, field(r, col)...)
		default:
			q, _ := json.Marshal(field(r, col))
			b = append(b, q...)
		}
	}
	b = append(b, '}')
	j.bytes = b
	j.n++
	_, err := j.w.Write(b)
	return err
}

func (j *jsonRows) end() error {
	_, err := j.w.WriteString("\n]}\n")
	return err
}
