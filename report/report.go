// Package report is the outcome table that sluice sim and sluice load both
// print, in the style of seed 000's table, so a simulated run and a real
// one can be compared cell by cell.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Outcome is how one unique request ended, judged from the client's side.
type Outcome uint8

const (
	// OK: answered within the client's patience.
	OK Outcome = iota
	// Late: answered after the client's patience (the client waited on).
	Late
	// TimedOut: the gateway gave up at its deadline (504), or the client
	// gave up at its patience with nothing.
	TimedOut
	// Shed: refused fast (503/529) after every retry.
	Shed
	// Lost: dropped by a gateway crash or refused while it restarted.
	Lost
	// Failed: any other error answer.
	Failed
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"ok", "late", "timedOut", "shed", "lost", "failed"}

func (o Outcome) String() string { return outcomeNames[o] }

// Counts tallies outcomes.
type Counts [numOutcomes]int

// Total is the number of requests counted.
func (c Counts) Total() int {
	n := 0
	for _, v := range c {
		n += v
	}
	return n
}

// Priorities names the classes in order.
var Priorities = []string{"critical", "interactive", "background"}

// Row is one run (a policy) of a scenario.
type Row struct {
	Name       string
	Counts     Counts
	ByPriority [3]Counts
	// Crashes counts gateway crashes (simulated memory budget).
	Crashes int
	// Peak is the most requests the gateway held at once.
	Peak int
	// Attempts counts every request sent, retries included; Unique counts
	// requests once. Attempts/Unique is the retry amplification.
	Attempts, Unique int
	// Extra counts the gateway's own calls beyond one per attempt
	// (hedges, retries, rescues and synthetic probes), when the runner
	// knows them: the simulator from its engine, sluice load from the
	// gateway's metrics (--metrics).
	Extra int
	// Trips counts breaker openings, when the runner knows them (the
	// simulator does).
	Trips int
	// Duration is the measured span, for goodput.
	Duration time.Duration
	// Latency of OK answers, TTFT of OK answers, time to a shed answer,
	// and how long timed-out requests waited for nothing, per priority.
	Latency, TTFT, Rejection, Timeout [3]Samples
}

// Samples collects durations for percentiles.
type Samples []time.Duration

// Quantile returns the q-quantile (nearest rank), or 0 with no samples.
// It sorts the receiver.
func (s Samples) Quantile(q float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[max(0, min(len(s)-1, i))]
}

func all(s [3]Samples) Samples {
	var out Samples
	for _, x := range s {
		out = append(out, x...)
	}
	return out
}

// Goodput is OK answers per second.
func (r *Row) Goodput() float64 {
	if r.Duration <= 0 {
		return 0
	}
	return float64(r.Counts[OK]) / r.Duration.Seconds()
}

// Amplification is attempts per unique request.
func (r *Row) Amplification() float64 {
	if r.Unique == 0 {
		return 0
	}
	return float64(r.Attempts) / float64(r.Unique)
}

// pct formats a quantile of s, or "-" when there are no samples.
func pct(s Samples, q float64) string {
	if len(s) == 0 {
		return "-"
	}
	d := s.Quantile(q)
	if d < 10*time.Millisecond {
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.0fms", float64(d)/float64(time.Millisecond))
}

// WriteTable prints the outcome table (one line per row, and per priority
// where a row has more than one class), then latencies.
func WriteTable(w io.Writer, rows []*Row) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tok\tlate\ttimedOut\tshed\tlost\tfailed\tcrashes\tpeak\tgoodput/s\tretry amp\textra calls\t")
	for _, r := range rows {
		c := r.Counts
		extra := "-"
		if r.Extra > 0 && r.Unique > 0 {
			extra = fmt.Sprintf("%.1f%%", 100*float64(r.Extra)/float64(r.Unique))
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.1f\t%.2f\t%s\t\n", r.Name,
			c[OK], c[Late], c[TimedOut], c[Shed], c[Lost], c[Failed], r.Crashes, r.Peak, r.Goodput(), r.Amplification(), extra)
		if classes(r) > 1 {
			for p, pc := range r.ByPriority {
				if pc.Total() == 0 {
					continue
				}
				fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%d\t%d\t%d\t\t\t\t\t\t\n", Priorities[p],
					pc[OK], pc[Late], pc[TimedOut], pc[Shed], pc[Lost], pc[Failed])
			}
		}
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tclass\tlatency p50\tp99\tTTFT p50\tp99\tshed answer p50\tp99\ttimedOut wait p50\tp99\t")
	for _, r := range rows {
		line := func(class string, lat, ttft, rej, tmo Samples) {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.Name, class,
				pct(lat, .5), pct(lat, .99), pct(ttft, .5), pct(ttft, .99), pct(rej, .5), pct(rej, .99), pct(tmo, .5), pct(tmo, .99))
		}
		line("all", all(r.Latency), all(r.TTFT), all(r.Rejection), all(r.Timeout))
		if classes(r) > 1 {
			for p := range 3 {
				if r.ByPriority[p].Total() > 0 {
					line(Priorities[p], r.Latency[p], r.TTFT[p], r.Rejection[p], r.Timeout[p])
				}
			}
		}
	}
	tw.Flush()
}

func classes(r *Row) int {
	n := 0
	for _, pc := range r.ByPriority {
		if pc.Total() > 0 {
			n++
		}
	}
	return n
}

// Summary is a row's machine-readable form.
type Summary struct {
	Name          string                    `json:"name"`
	Counts        map[string]int            `json:"counts"`
	ByPriority    map[string]map[string]int `json:"by_priority"`
	Crashes       int                       `json:"crashes"`
	Peak          int                       `json:"peak"`
	GoodputPerSec float64                   `json:"goodput_per_sec"`
	Amplification float64                   `json:"retry_amplification"`
	ExtraCalls    int                       `json:"extra_calls"`
	Trips         int                       `json:"trips,omitempty"`
	LatencyMs     map[string]float64        `json:"latency_ms"`
	TTFTMs        map[string]float64        `json:"ttft_ms"`
	RejectionMs   map[string]float64        `json:"rejection_ms"`
}

func countMap(c Counts) map[string]int {
	m := map[string]int{}
	for o, v := range c {
		m[outcomeNames[o]] = v
	}
	return m
}

func quantiles(s Samples) map[string]float64 {
	m := map[string]float64{}
	for _, q := range []struct {
		k string
		v float64
	}{{"p50", .5}, {"p90", .9}, {"p99", .99}, {"max", 1}} {
		m[q.k] = float64(s.Quantile(q.v)) / float64(time.Millisecond)
	}
	return m
}

// Summarise converts rows for JSON.
func Summarise(rows []*Row) []Summary {
	var out []Summary
	for _, r := range rows {
		s := Summary{Name: r.Name, Counts: countMap(r.Counts), ByPriority: map[string]map[string]int{},
			Crashes: r.Crashes, Peak: r.Peak, GoodputPerSec: r.Goodput(), Amplification: r.Amplification(), ExtraCalls: r.Extra, Trips: r.Trips,
			LatencyMs: quantiles(all(r.Latency)), TTFTMs: quantiles(all(r.TTFT)), RejectionMs: quantiles(all(r.Rejection))}
		for p, pc := range r.ByPriority {
			if pc.Total() > 0 {
				s.ByPriority[Priorities[p]] = countMap(pc)
			}
		}
		out = append(out, s)
	}
	return out
}

// WriteJSON writes the rows as JSON.
func WriteJSON(w io.Writer, rows []*Row) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(Summarise(rows))
}

// WriteCSV writes one line per row and priority with the counts.
func WriteCSV(w io.Writer, rows []*Row) {
	fmt.Fprintln(w, "policy,class,"+strings.Join(outcomeNames[:], ",")+",crashes,peak")
	for _, r := range rows {
		line := func(class string, c Counts, crashes, peak int) {
			vals := make([]string, len(c))
			for i, v := range c {
				vals[i] = fmt.Sprint(v)
			}
			fmt.Fprintf(w, "%s,%s,%s,%d,%d\n", r.Name, class, strings.Join(vals, ","), crashes, peak)
		}
		line("all", r.Counts, r.Crashes, r.Peak)
		for p, pc := range r.ByPriority {
			if pc.Total() > 0 {
				line(Priorities[p], pc, 0, 0)
			}
		}
	}
}
