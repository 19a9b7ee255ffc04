package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// table is one block of the report, rendered as aligned text for the
// terminal and as Markdown for docs/BENCHMARKS.md.
type table struct {
	phase string // the phase it reports, for the doc's per-phase sections
	title string
	intro string // a line between the title and the table, in Markdown only
	head  []string
	rows  [][]string
	notes []string
	left  int // leading columns aligned left in Markdown (at least 1)
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) text(w io.Writer) {
	fmt.Fprintf(w, "\n%s\n", t.title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, r := range append([][]string{t.head}, t.rows...) {
		fmt.Fprintln(tw, strings.Join(r, "\t")+"\t")
	}
	tw.Flush()
	for _, n := range t.notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
}

func (t *table) markdown(w io.Writer) {
	fmt.Fprintf(w, "### %s\n\n", t.title)
	if t.intro != "" {
		fmt.Fprintf(w, "%s\n\n", t.intro)
	}
	fmt.Fprintf(w, "| %s |\n", strings.Join(t.head, " | "))
	sep := make([]string, len(t.head))
	for i := range sep {
		sep[i] = "---:"
	}
	for i := 0; i < max(1, t.left) && i < len(sep); i++ {
		sep[i] = "---"
	}
	fmt.Fprintf(w, "|%s|\n", strings.Join(sep, "|"))
	for _, r := range t.rows {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = strings.ReplaceAll(c, "|", "\\|")
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
	fmt.Fprintln(w)
	for _, n := range t.notes {
		fmt.Fprintf(w, "- %s\n", n)
	}
	if len(t.notes) > 0 {
		fmt.Fprintln(w)
	}
}

// ms formats a latency in milliseconds with µs resolution.
func ms(d time.Duration) string {
	return fmt.Sprintf("%.3f ms", float64(d)/float64(time.Millisecond))
}

// msN is ms, or "-" when the distribution is empty.
func msN(d dist, v time.Duration) string {
	if d.N == 0 {
		return "-"
	}
	return ms(v)
}

// msSigned formats a latency difference.
func msSigned(d time.Duration) string {
	return fmt.Sprintf("%+.3f ms", float64(d)/float64(time.Millisecond))
}

func micros(d time.Duration) string {
	return fmt.Sprintf("%.1f µs", float64(d)/float64(time.Microsecond))
}

func cores(c float64) string { return fmt.Sprintf("%.2f cores", c) }

func mib(kib int64) string { return fmt.Sprintf("%.1f MiB", float64(kib)/1024) }

func pct(n, of int) string {
	if of == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(of))
}
