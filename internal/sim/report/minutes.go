package report

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"
)

// Minute is one minute of a run as seed 002's table reports it. Events
// fall in the minute in which they happen, in the scenario's time (sluice
// load divides a compressed run's clock by its --time-scale).
type Minute struct {
	// Demand counts new requests (first attempts, and those the client
	// shed itself); Retries the retry attempts sent.
	Demand, Retries int
	// Throttled counts new requests the client shed locally (the client
	// package's adaptive throttling), never sent, by class.
	Throttled [3]int
	// PeakGateway and PeakUpstream are the most requests waiting at once
	// in the gateway's admission queue and in the upstream server's own
	// waiting queue (vLLM's); PeakQueue the most in both at once.
	PeakGateway, PeakUpstream, PeakQueue int
	// Rejection is how long refused attempts (429, 503, 529) took to be
	// refused, from sending.
	Rejection Samples
	// TTFT is the time to first token of interactive requests answered in
	// the minute, from their first attempt; Unanswered counts interactive
	// attempts the client gave up on at its timeout, whose time to first
	// token is past it. Requests refused fast are neither: nobody waited.
	TTFT       Samples
	Unanswered int
	// Refused counts attempts refused by the gateway or upstream, and
	// TimedOut attempts the client abandoned at its timeout, by class.
	Refused, TimedOut [3]int
	// RetriesRefused counts the retry attempts among Refused: Retries
	// less these is the retries admitted, the load retries added.
	RetriesRefused int
	// NodeTTFT sums the node's own time to first token of interactive
	// calls whose first token came in the minute, from the moment the
	// upstream server started the call (its waiting queue left out);
	// NodeFirsts counts them.
	NodeTTFT   time.Duration
	NodeFirsts int
}

// MeanNodeTTFT is the mean of the minute's NodeTTFT, 0 if none.
func (m *Minute) MeanNodeTTFT() time.Duration {
	if m.NodeFirsts == 0 {
		return 0
	}
	return m.NodeTTFT / time.Duration(m.NodeFirsts)
}

// Timeline is a run minute by minute. Its methods take the time since the
// run's start; the zero value is ready to use.
type Timeline struct {
	Minutes []Minute
}

func (t *Timeline) at(since time.Duration) *Minute {
	i := max(0, int(since/time.Minute))
	for len(t.Minutes) <= i {
		t.Minutes = append(t.Minutes, Minute{})
	}
	return &t.Minutes[i]
}

// Arrive counts a new request, Retry a retry attempt, Throttle a new
// request the client shed itself.
func (t *Timeline) Arrive(since time.Duration) { t.at(since).Demand++ }
func (t *Timeline) Retry(since time.Duration)  { t.at(since).Retries++ }
func (t *Timeline) Throttle(since time.Duration, pri int) {
	m := t.at(since)
	m.Demand++
	m.Throttled[pri]++
}

// Queue records the waiting requests at one instant.
func (t *Timeline) Queue(since time.Duration, gateway, upstream int) {
	m := t.at(since)
	m.PeakGateway = max(m.PeakGateway, gateway)
	m.PeakUpstream = max(m.PeakUpstream, upstream)
	m.PeakQueue = max(m.PeakQueue, gateway+upstream)
}

// Refuse records an attempt refused after took; TimeOut one the client
// abandoned at its timeout.
func (t *Timeline) Refuse(since time.Duration, pri int, took time.Duration) {
	m := t.at(since)
	m.Refused[pri]++
	m.Rejection = append(m.Rejection, took)
}

// RetryRefused counts a refused attempt (recorded by Refuse) as a retry.
func (t *Timeline) RetryRefused(since time.Duration) { t.at(since).RetriesRefused++ }

// NodeFirstToken records an interactive call's first token at since,
// d after the upstream server started it.
func (t *Timeline) NodeFirstToken(since time.Duration, pri int, d time.Duration) {
	if pri == interactive {
		m := t.at(since)
		m.NodeTTFT += d
		m.NodeFirsts++
	}
}
func (t *Timeline) TimeOut(since time.Duration, pri int) {
	m := t.at(since)
	m.TimedOut[pri]++
	if pri == interactive {
		m.Unanswered++
	}
}

// Answer records a request's first token, ttft after its first attempt.
// Only interactive requests count, as in seed 002's table.
func (t *Timeline) Answer(since time.Duration, pri int, ttft time.Duration) {
	if pri == interactive {
		m := t.at(since)
		m.TTFT = append(m.TTFT, ttft)
	}
}

// interactive is the index of the interactive class in Priorities.
const interactive = 1

// Unreached is the quantile of a minute's interactive TTFT when it falls
// among the requests never answered.
const Unreached = time.Duration(math.MaxInt64)

// TTFTQuantile is the q-quantile of the minute's interactive time to
// first token, counting attempts abandoned at the timeout as later than
// any answer: it is Unreached when the quantile falls among them, and 0
// when the minute had neither.
func (m *Minute) TTFTQuantile(q float64) time.Duration {
	n := len(m.TTFT) + m.Unanswered
	if n == 0 {
		return 0
	}
	rank := int(q*float64(n)+0.5) - 1
	rank = max(0, min(n-1, rank))
	if rank >= len(m.TTFT) {
		return Unreached
	}
	return m.TTFT.Quantile(float64(rank+1) / float64(len(m.TTFT)))
}

// RetryShare is the retries as a fraction of demand.
func (m *Minute) RetryShare() float64 {
	if m.Demand == 0 {
		return 0
	}
	return float64(m.Retries) / float64(m.Demand)
}

// Shed is everything shed of a class in the minute: refused, timed out
// and throttled attempts.
func (m *Minute) Shed(pri int) int { return m.Refused[pri] + m.TimedOut[pri] + m.Throttled[pri] }

// Peak is the most requests waiting at once over the first n minutes.
func (t *Timeline) Peak(n int) (both, gateway, upstream int) {
	for i := 0; i < n && i < len(t.Minutes); i++ {
		m := &t.Minutes[i]
		both, gateway, upstream = max(both, m.PeakQueue), max(gateway, m.PeakGateway), max(upstream, m.PeakUpstream)
	}
	return both, gateway, upstream
}

// ttftText formats a TTFT quantile against the clients' timeout.
func ttftText(d, timeout time.Duration) string {
	switch {
	case d == Unreached && timeout > 0:
		return "> " + seconds(timeout)
	case d == Unreached:
		return "unanswered"
	case d == 0:
		return "-"
	}
	return pct(Samples{d}, 1)
}

// WriteMinutes prints each row's timeline, one line per minute.
func WriteMinutes(w io.Writer, rows []*Row, timeout time.Duration) {
	for _, r := range rows {
		if r.Timeline == nil {
			continue
		}
		fmt.Fprintf(w, "\n%s, minute by minute\n", r.Name)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "minute\tdemand/s\tretries/s\tretries\tpeak queue (gw+up)\treject p99\tinteractive TTFT p99\tshed crit/int/bg\ttimed out crit/int/bg\tthrottled\t")
		for i := range r.Timeline.Minutes {
			m := &r.Timeline.Minutes[i]
			fmt.Fprintf(tw, "%d\t%.0f\t%.1f\t%.1f%%\t%d (%d+%d)\t%s\t%s\t%d/%d/%d\t%d/%d/%d\t%d\t\n", i+1,
				float64(m.Demand)/60, float64(m.Retries)/60, 100*m.RetryShare(),
				m.PeakQueue, m.PeakGateway, m.PeakUpstream, pct(m.Rejection, .99), ttftText(m.TTFTQuantile(.99), timeout),
				m.Refused[0], m.Refused[1], m.Refused[2], m.TimedOut[0], m.TimedOut[1], m.TimedOut[2],
				m.Throttled[0]+m.Throttled[1]+m.Throttled[2])
		}
		tw.Flush()
	}
}

// Seed002Minute is the minute of the ramp seed 002's table reports.
const Seed002Minute = 5

// seed002 is seed 002's own table: its before and after columns.
var seed002 = [...][3]string{
	{"peak queue depth", "347 and climbing", "capped at 150"},
	{"time to rejection p99", "none: waited for the 8s timeout", "under 15ms"},
	{"extra load from retries", "+90 req/s (35%)", "+12 req/s (4.6%)"},
	{"interactive p99 TTFT", "past 8s", "640ms"},
	{"what got shed", "everything, by client timeouts", "background first; interactive untouched"},
}

// WriteSeed002 prints seed 002's table at minute 5 of the ramp, the
// seed's own figures first, then one column per row. The peak queue is
// over the run up to that minute.
func WriteSeed002(w io.Writer, rows []*Row, timeout time.Duration) {
	fmt.Fprintf(w, "\nseed 002's table, at minute %d\n", Seed002Minute)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{"", "seed: before", "seed: after"}
	for _, r := range rows {
		head = append(head, r.Name)
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for i, ref := range seed002 {
		cells := []string{ref[0], ref[1], ref[2]}
		for _, r := range rows {
			cells = append(cells, seed002Cell(r, i, timeout))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	tw.Flush()
}

func seed002Cell(r *Row, line int, timeout time.Duration) string {
	t := r.Timeline
	if t == nil || len(t.Minutes) < Seed002Minute {
		return "-"
	}
	m := &t.Minutes[Seed002Minute-1]
	switch line {
	case 0:
		both, gw, up := t.Peak(Seed002Minute)
		return fmt.Sprintf("%d (gateway %d, upstream %d)", both, gw, up)
	case 1:
		if len(m.Rejection) == 0 {
			return "no rejection"
		}
		return pct(m.Rejection, .99)
	case 2:
		return fmt.Sprintf("+%.1f req/s (%.1f%%)", float64(m.Retries)/60, 100*m.RetryShare())
	case 3:
		return ttftText(m.TTFTQuantile(.99), timeout)
	}
	return fmt.Sprintf("crit %d, int %d, bg %d", m.Shed(0), m.Shed(1), m.Shed(2))
}

// MinuteSummary is a Minute for JSON.
type MinuteSummary struct {
	Demand      int `json:"demand"`
	Retries     int `json:"retries"`
	PeakQueue   int `json:"peak_queue"`
	PeakGateway int `json:"peak_gateway_queue"`
	PeakUp      int `json:"peak_upstream_queue"`
	// RejectionP99Ms is -1 with no rejection; InteractiveTTFTP99Ms -1
	// when the quantile falls past the clients' timeout, and 0 when no
	// interactive request was answered or timed out.
	RejectionP99Ms       float64 `json:"rejection_p99_ms"`
	InteractiveTTFTP99Ms float64 `json:"interactive_ttft_p99_ms"`
	Shed                 [3]int  `json:"shed_by_class"`
	TimedOut             [3]int  `json:"timed_out_by_class"`
	Throttled            [3]int  `json:"throttled_by_class"`
}

// Summarise converts the timeline for JSON.
func (t *Timeline) Summarise() []MinuteSummary {
	out := make([]MinuteSummary, len(t.Minutes))
	for i := range t.Minutes {
		m := &t.Minutes[i]
		rej := -1.0
		if len(m.Rejection) > 0 {
			rej = ms(m.Rejection.Quantile(.99))
		}
		ttft := m.TTFTQuantile(.99)
		tms := ms(ttft)
		if ttft == Unreached {
			tms = -1
		}
		out[i] = MinuteSummary{Demand: m.Demand, Retries: m.Retries, PeakQueue: m.PeakQueue, PeakGateway: m.PeakGateway,
			PeakUp: m.PeakUpstream, RejectionP99Ms: rej, InteractiveTTFTP99Ms: tms,
			Shed: m.Refused, TimedOut: m.TimedOut, Throttled: m.Throttled}
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
