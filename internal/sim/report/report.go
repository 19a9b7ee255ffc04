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
	// RateLimited: refused for the client's own key budget (429) after
	// every retry.
	RateLimited
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"ok", "late", "timedOut", "shed", "lost", "failed", "rateLimited"}

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
	// Lag is how far behind schedule a real load generator's arrivals
	// fell at worst (zero in the simulator): past about 100 ms, the
	// machine, not the gateway, shaped the load's timing.
	Lag time.Duration
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
	// Refused is the time to the shed answers (of Rejection) whose
	// request never reached a provider: refused at the door, from the
	// queue, or after waiting for a probe's verdict. The others were
	// answered early, their call already sent to a provider out of
	// rotation (the gateway says X-Sluice-Attempts on those), and are
	// bounded by how soon a call can be judged slow, not by admission.
	Refused [3]Samples
	// Degraded counts requests answered (ok or late) in the degraded way
	// their model's degrade: names (X-Sluice-Degraded).
	Degraded int
	// Graded: the runner judged whether each answer was right (the
	// scenario models answer quality, or runs evals); Correct then counts
	// the OK answers that were, and EvalDegraded the times a target was
	// degraded by its evals.
	Graded       bool
	Correct      int
	EvalDegraded int
	// Streams breaks the row down by traffic stream, when the scenario
	// has more than its main one (scenario clients.streams).
	Streams []*StreamRow
	// Fleet holds the replicas' figures when the run had more than one
	// (scenario fleet), nil otherwise.
	Fleet *Fleet
	// Timeline is the run minute by minute, when the runner kept one
	// (sluice sim and load with --minutes, or a scenario's reference).
	Timeline *Timeline
}

// Fleet is how a fleet of replicas judged its providers.
type Fleet struct {
	Replicas int
	// Shared: the replicas named a store and shared what it holds.
	Shared bool
	// Trips[i] counts replica i's breaker trips (closed or recovering to
	// open), adopted ones included; OwnTrips counts, over all replicas,
	// those a replica reached from its own evidence.
	Trips    []int
	OwnTrips int
	// Disagreement is how long, summed over providers, at least one
	// replica had a provider out of rotation (breaker open or half-open)
	// while another had it in (closed or recovering).
	Disagreement time.Duration
	// Flips counts, over all replicas and providers, each move out of
	// rotation and each move back in.
	Flips int
	// Phases, when replicas joined or left mid-run (scenario
	// fleet.join, fleet.leave), are the run's spans between changes
	// of the fleet's size, each with the most requests the whole fleet
	// held in flight against a fixed concurrency limit it shares.
	Phases []FleetPhase
}

// FleetPhase is a span of a run between changes of its fleet's size.
type FleetPhase struct {
	// From is when it began: 0, or a join's or a leave's time.
	From time.Duration
	// Replicas is how many replicas ran from then (joining included).
	Replicas int
	// Limit is the fixed limit (a provider's or admission's
	// max_in_flight, the fleet's whole) that Peak came closest to or
	// went furthest beyond; Peak is the most requests the replicas
	// together held in flight against it during the phase.
	Limit, Peak int
	// Name names the limit: a provider's name, or "admission".
	Name string
	// Over is how long, in the phase, the fleet held more than Limit.
	Over time.Duration
}

// StreamRow is one traffic stream's share of a row.
type StreamRow struct {
	Name     string
	Counts   Counts
	Degraded int
	// Latency and TTFT of its OK answers.
	Latency, TTFT Samples
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
	return s[s.rank(q)]
}

// rank is the index of the q-quantile in s sorted.
func (s Samples) rank(q float64) int {
	i := int(q*float64(len(s))+0.5) - 1
	return max(0, min(len(s)-1, i))
}

// Select returns what Quantile returns, reordering the receiver only as
// far as finding it takes (a three-way quickselect), for samples that
// are read once.
func (s Samples) Select(q float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	k := s.rank(q)
	lo, hi := 0, len(s) // s[k] lies in s[lo:hi]
	for hi-lo > 16 {
		// Median of three as the pivot, then s[lo:hi] in three parts:
		// below it, equal to it, above it.
		a, b, c := s[lo], s[lo+(hi-lo)/2], s[hi-1]
		if a > b {
			a, b = b, a
		}
		if b > c {
			b = c
		}
		p := max(a, b)
		lt, i, gt := lo, lo, hi
		for i < gt {
			switch v := s[i]; {
			case v < p:
				s[lt], s[i] = v, s[lt]
				lt++
				i++
			case v > p:
				gt--
				s[gt], s[i] = v, s[gt]
			default:
				i++
			}
		}
		switch {
		case k < lt:
			hi = lt
		case k >= gt:
			lo = gt
		default:
			return p
		}
	}
	slices.Sort(s[lo:hi])
	return s[k]
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

// CorrectPerSec is correct OK answers per second: goodput that counts
// correctness.
func (r *Row) CorrectPerSec() float64 {
	if r.Duration <= 0 {
		return 0
	}
	return float64(r.Correct) / r.Duration.Seconds()
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
//
// The rateLimited and degraded columns appear only when some row has
// any, the correct columns only when some row was graded, and a table
// per row breaks it down by traffic stream when the row has streams
// (WriteStreams), so a scenario that uses neither keys nor streams
// prints the table it always did.
func WriteTable(w io.Writer, rows []*Row) {
	limited, degraded, graded := false, false, false
	for _, r := range rows {
		limited = limited || r.Counts[RateLimited] > 0
		degraded = degraded || r.Degraded > 0
		graded = graded || r.Graded
	}
	opt := func(show bool, v string) string {
		if !show {
			return ""
		}
		return v + "\t"
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tok\tlate\ttimedOut\tshed\t"+opt(limited, "rateLimited")+"lost\tfailed\t"+opt(degraded, "degraded")+
		"crashes\tpeak\tgoodput/s\t"+opt(graded, "correct\tcorrect/s\teval-degraded")+"retry amp\textra calls\t")
	for _, r := range rows {
		c := r.Counts
		extra := "-"
		if r.Extra > 0 && r.Unique > 0 {
			extra = fmt.Sprintf("%.1f%%", 100*float64(r.Extra)/float64(r.Unique))
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s%d\t%d\t%s%d\t%d\t%.1f\t%s%.2f\t%s\t\n", r.Name,
			c[OK], c[Late], c[TimedOut], c[Shed], opt(limited, fmt.Sprint(c[RateLimited])), c[Lost], c[Failed],
			opt(degraded, fmt.Sprint(r.Degraded)), r.Crashes, r.Peak, r.Goodput(),
			opt(graded, fmt.Sprintf("%d\t%.1f\t%d", r.Correct, r.CorrectPerSec(), r.EvalDegraded)), r.Amplification(), extra)
		if classes(r) > 1 {
			for p, pc := range r.ByPriority {
				if pc.Total() == 0 {
					continue
				}
				fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%d\t%s%d\t%d\t%s\t\t\t%s\t\t\n", Priorities[p],
					pc[OK], pc[Late], pc[TimedOut], pc[Shed], opt(limited, fmt.Sprint(pc[RateLimited])), pc[Lost], pc[Failed], opt(degraded, ""), opt(graded, "\t\t"))
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
	WriteStreams(w, rows)
	WriteFleet(w, rows)
}

// WriteFleet prints, when some row ran more than one replica, a table of
// how the replicas judged their providers: breaker trips per replica,
// how long they disagreed about a provider being in rotation, and how
// often a provider went out of rotation or came back on some replica.
func WriteFleet(w io.Writer, rows []*Row) {
	show := false
	for _, r := range rows {
		show = show || r.Fleet != nil
	}
	if !show {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy	replicas	store	trips per replica	own trips	disagreement	flips	")
	for _, r := range rows {
		f := r.Fleet
		if f == nil {
			continue
		}
		trips := make([]string, len(f.Trips))
		for i, n := range f.Trips {
			trips[i] = fmt.Sprint(n)
		}
		store := "local"
		if f.Shared {
			store = "shared"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%s\t%d\t\n", r.Name, f.Replicas, store, strings.Join(trips, " / "),
			f.OwnTrips, seconds(f.Disagreement), f.Flips)
	}
	tw.Flush()
	writePhases(w, rows)
}

// writePhases prints, when replicas joined or left in some row, the
// fleet's peak in flight against its fixed limits between changes.
func writePhases(w io.Writer, rows []*Row) {
	show := false
	for _, r := range rows {
		show = show || (r.Fleet != nil && len(r.Fleet.Phases) > 0)
	}
	if !show {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy	from	replicas	limit	max_in_flight	peak in flight	beyond it	for	")
	for _, r := range rows {
		if r.Fleet == nil {
			continue
		}
		for _, p := range r.Fleet.Phases {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%d\t%d\t%s\t\n", r.Name, seconds(p.From), p.Replicas, p.Name, p.Limit, p.Peak, max(0, p.Peak-p.Limit), seconds(p.Over))
		}
	}
	tw.Flush()
}

// seconds formats a span in seconds, with milliseconds below 10 s.
func seconds(d time.Duration) string {
	if d < 10*time.Second {
		return fmt.Sprintf("%.3fs", d.Seconds())
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}

// WriteStreams prints, for each row with streams, a table of its
// streams' outcomes and the latency and TTFT of their OK answers.
func WriteStreams(w io.Writer, rows []*Row) {
	for _, r := range rows {
		if len(r.Streams) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s, by stream:\n", r.Name)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "stream\tok\tlate\ttimedOut\tshed\trateLimited\tlost\tfailed\tdegraded\tok share\tTTFT p50\tp99\tlatency p50\tp99\t")
		for _, s := range r.Streams {
			c := s.Counts
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t\n", s.Name,
				c[OK], c[Late], c[TimedOut], c[Shed], c[RateLimited], c[Lost], c[Failed], s.Degraded, share(c[OK], c.Total()),
				pct(s.TTFT, .5), pct(s.TTFT, .99), pct(s.Latency, .5), pct(s.Latency, .99))
		}
		tw.Flush()
	}
}

// share formats n of total as a percentage, or "-" of nothing.
func share(n, total int) string {
	if total == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(total))
}

// OKShare is the fraction of a stream's requests answered in time.
func (s *StreamRow) OKShare() float64 {
	if t := s.Counts.Total(); t > 0 {
		return float64(s.Counts[OK]) / float64(t)
	}
	return 0
}

// Stream returns the row's stream of that name, or nil.
func (r *Row) Stream(name string) *StreamRow {
	for _, s := range r.Streams {
		if s.Name == name {
			return s
		}
	}
	return nil
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
	// RefusedMs is Row.Refused's quantiles: the shed answers of requests
	// that never reached a provider.
	RefusedMs map[string]float64 `json:"refused_ms"`
	Degraded  int                `json:"degraded,omitempty"`
	// Correct and CorrectPerSec count the OK answers that were right,
	// when the run graded them; EvalDegraded the eval degradations.
	Correct       *int            `json:"correct,omitempty"`
	CorrectPerSec float64         `json:"correct_per_sec,omitempty"`
	EvalDegraded  int             `json:"eval_degraded,omitempty"`
	Streams       []StreamSummary `json:"streams,omitempty"`
	Fleet         *FleetSummary   `json:"fleet,omitempty"`
	Minutes       []MinuteSummary `json:"minutes,omitempty"`
	// LagMs is Row.Lag: a real run's worst arrival delay.
	LagMs float64 `json:"lag_ms,omitempty"`
}

// FleetSummary is a row's Fleet.
type FleetSummary struct {
	Replicas       int     `json:"replicas"`
	Shared         bool    `json:"shared"`
	Trips          []int   `json:"trips"`
	OwnTrips       int     `json:"own_trips"`
	DisagreementMs float64 `json:"disagreement_ms"`
	Flips          int     `json:"flips"`
	// Phases: see Fleet.Phases; only when replicas joined or left.
	Phases []FleetPhaseSummary `json:"phases,omitempty"`
}

// FleetPhaseSummary is a Fleet's phase.
type FleetPhaseSummary struct {
	FromMs       float64 `json:"from_ms"`
	Replicas     int     `json:"replicas"`
	Limit        string  `json:"limit"`
	MaxInFlight  int     `json:"max_in_flight"`
	PeakInFlight int     `json:"peak_in_flight"`
	OverMs       float64 `json:"over_ms"`
}

// StreamSummary is a stream's share of a Summary.
type StreamSummary struct {
	Name      string             `json:"name"`
	Counts    map[string]int     `json:"counts"`
	Degraded  int                `json:"degraded"`
	LatencyMs map[string]float64 `json:"latency_ms"`
	TTFTMs    map[string]float64 `json:"ttft_ms"`
}

// countMap names each count; rateLimited only when there are any, so a
// run without key budgets reports what it always did.
func countMap(c Counts) map[string]int {
	m := map[string]int{}
	for o, v := range c {
		if Outcome(o) == RateLimited && v == 0 {
			continue
		}
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
			LatencyMs: quantiles(all(r.Latency)), TTFTMs: quantiles(all(r.TTFT)), RejectionMs: quantiles(all(r.Rejection)),
			RefusedMs: quantiles(all(r.Refused))}
		for p, pc := range r.ByPriority {
			if pc.Total() > 0 {
				s.ByPriority[Priorities[p]] = countMap(pc)
			}
		}
		s.Degraded = r.Degraded
		s.LagMs = float64(r.Lag) / float64(time.Millisecond)
		if r.Graded {
			n := r.Correct
			s.Correct, s.CorrectPerSec, s.EvalDegraded = &n, r.CorrectPerSec(), r.EvalDegraded
		}
		if f := r.Fleet; f != nil {
			s.Fleet = &FleetSummary{Replicas: f.Replicas, Shared: f.Shared, Trips: f.Trips, OwnTrips: f.OwnTrips,
				DisagreementMs: float64(f.Disagreement) / float64(time.Millisecond), Flips: f.Flips}
			for _, p := range f.Phases {
				s.Fleet.Phases = append(s.Fleet.Phases, FleetPhaseSummary{FromMs: float64(p.From) / float64(time.Millisecond),
					Replicas: p.Replicas, Limit: p.Name, MaxInFlight: p.Limit, PeakInFlight: p.Peak, OverMs: float64(p.Over) / float64(time.Millisecond)})
			}
		}
		if r.Timeline != nil {
			s.Minutes = r.Timeline.Summarise()
		}
		for _, st := range r.Streams {
			s.Streams = append(s.Streams, StreamSummary{Name: st.Name, Counts: countMap(st.Counts), Degraded: st.Degraded,
				LatencyMs: quantiles(st.Latency), TTFTMs: quantiles(st.TTFT)})
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
//
// The rateLimited column appears only when some row has any.
func WriteCSV(w io.Writer, rows []*Row) {
	n := int(RateLimited)
	for _, r := range rows {
		if r.Counts[RateLimited] > 0 {
			n = int(numOutcomes)
		}
	}
	fmt.Fprintln(w, "policy,class,"+strings.Join(outcomeNames[:n], ",")+",crashes,peak")
	for _, r := range rows {
		line := func(class string, c Counts, crashes, peak int) {
			vals := make([]string, n)
			for i, v := range c[:n] {
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
