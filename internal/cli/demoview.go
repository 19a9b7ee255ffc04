package cli

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/sluice-gw/sluice/internal/server/dashboard"
)

// plainEvery is how often the live view writes a line when stdout is not
// a terminal.
const plainEvery = 5 * time.Second

// liveView shows the demo in the terminal: on a terminal, a table redrawn
// every second in place; otherwise one plain line every plainEvery, plus
// a line for every breaker transition.
type liveView struct {
	w     io.Writer
	rec   *dashboard.Recorder
	plan  demoPlan
	start time.Time
	tty   bool
	since int64
	// eventsSince is the newest event shown: events are timed on their
	// own, between samples.
	eventsSince int64
	seq         int64
	lines       int
	// recent are the last transitions, newest last, for the table.
	recent []string // lines drawn last time, to redraw over them
}

func newLiveView(w io.Writer, rec *dashboard.Recorder, plan demoPlan, start time.Time) *liveView {
	tty := false
	if f, ok := w.(*os.File); ok {
		tty = term.IsTerminal(int(f.Fd()))
	}
	return &liveView{w: w, rec: rec, plan: plan, start: start, tty: tty, since: start.UnixMilli() - 1, eventsSince: start.UnixMilli() - 1}
}

// run draws until the returned stop is called; stop waits for the last
// draw, so nothing is written after it returns.
func (v *liveView) run() (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		lastPlain := time.Time{}
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				snap := v.rec.Since(min(v.since, v.eventsSince-2000)) // marks and samples are timed apart
				if len(snap.Samples) == 0 {
					continue
				}
				var events []dashboard.Event
				for _, e := range snap.Events {
					if e.Seq > v.seq {
						events = append(events, e)
						v.seq, v.eventsSince = e.Seq, max(v.eventsSince, e.T)
					}
				}
				v.since = snap.Samples[len(snap.Samples)-1].T
				s := snap.Samples[len(snap.Samples)-1]
				for _, e := range events {
					if e.Kind != "verdict" {
						v.recent = append(v.recent, fmt.Sprintf("%s %s", v.elapsed(time.UnixMilli(e.T)), eventText(e)))
					}
				}
				if len(v.recent) > 4 {
					v.recent = v.recent[len(v.recent)-4:]
				}
				if v.tty {
					v.drawTable(now, s, snap.Verdict)
					continue
				}
				for _, e := range events {
					if e.Kind != "verdict" {
						fmt.Fprintf(v.w, "%6s  %s\n", v.elapsed(time.UnixMilli(e.T)), eventText(e))
					}
				}
				if now.Sub(lastPlain) >= plainEvery {
					lastPlain = now
					fmt.Fprintln(v.w, v.plainLine(now, s))
				}
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done); wg.Wait() }) }
}

func (v *liveView) elapsed(t time.Time) string {
	return fmt.Sprintf("%.0fs", t.Sub(v.start).Seconds())
}

func eventText(e dashboard.Event) string {
	if e.Kind == "breaker" && e.From != e.To {
		return fmt.Sprintf("breaker %s: %s -> %s", e.Provider, e.From, e.To)
	}
	return e.Label
}

// phase says where the script is.
func (v *liveView) phase(now time.Time) string {
	el := now.Sub(v.start)
	switch {
	case el < v.plan.brownStart:
		return "healthy"
	case el < v.plan.brownEnd:
		return "BROWNOUT on primary"
	case el < v.plan.duration:
		return "primary recovered"
	}
	return "draining"
}

func queued(s dashboard.Sample) int {
	n := 0
	for _, d := range s.Queue {
		n += d
	}
	return n
}

func sheds(s dashboard.Sample) (total float64, by string) {
	keys := make([]string, 0, len(s.Sheds))
	for k := range s.Sheds {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		total += s.Sheds[k]
		parts = append(parts, fmt.Sprintf("%s %.0f/s", k, s.Sheds[k]))
	}
	return total, strings.Join(parts, ", ")
}

func (v *liveView) plainLine(now time.Time, s dashboard.Sample) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%6s  %-19s", v.elapsed(now), v.phase(now))
	for _, p := range s.Providers {
		fmt.Fprintf(&b, "  %s %s %d/%d", p.Name, p.State, p.InFlight, p.Limit)
	}
	total, _ := sheds(s)
	fmt.Fprintf(&b, "  queue %d  p99 %.0fms  ok %.0f/s  shed %.0f/s  %s", queued(s), s.LatencyMS.P99, s.OK, total, s.Verdict)
	return b.String()
}

// drawTable redraws the table in place (cursor up over the last one).
func (v *liveView) drawTable(now time.Time, s dashboard.Sample, verdict dashboard.Verdict) {
	var b strings.Builder
	if v.lines > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", v.lines)
	}
	line := func(format string, args ...any) {
		b.WriteString("\x1b[2K")
		fmt.Fprintf(&b, format, args...)
		b.WriteByte('\n')
	}
	line("%s of %v  %s", v.elapsed(now), v.plan.duration, v.phase(now))
	line("%-9s %-11s %7s %17s %7s %7s", "provider", "breaker", "weight", "in-flight/limit", "slow", "errors")
	for _, p := range s.Providers {
		line("%-9s %-11s %6.0f%% %17s %6.0f%% %6.0f%%", p.Name, colourState(p.State), 100*p.Weight,
			fmt.Sprintf("%d/%d", p.InFlight, p.Limit), 100*p.SlowRate, 100*p.ErrorRate)
	}
	q := make([]string, 0, len(s.Queue))
	for _, c := range []string{"critical", "interactive", "background"} {
		q = append(q, fmt.Sprintf("%s %d", c, s.Queue[c]))
	}
	line("queue     %s   oldest %.0f ms", strings.Join(q, ", "), s.OldestWaitMS)
	line("latency   p50 %.0f ms  p99 %.0f ms   answered %.0f/s   hedges %.1f/s  rescues %.1f/s", s.LatencyMS.P50, s.LatencyMS.P99, s.OK, s.Hedges, s.Rescues)
	total, by := sheds(s)
	if by == "" {
		by = "none"
	}
	line("sheds     %.0f/s  %s", total, by)
	line("pressure  %s: %s", strings.ReplaceAll(verdict.Kind, "_", " "), verdict.Summary)
	line("events    %s", strings.Join(v.recent, " | "))
	v.lines = strings.Count(b.String(), "\n")
	io.WriteString(v.w, b.String())
}

// colourState pads and colours a breaker state for a terminal.
func colourState(s string) string {
	code := map[string]string{"closed": "32", "open": "31", "half_open": "33", "recovering": "34"}[s]
	padded := fmt.Sprintf("%-11s", s)
	if code == "" {
		return padded
	}
	return "\x1b[" + code + "m" + padded + "\x1b[0m"
}
