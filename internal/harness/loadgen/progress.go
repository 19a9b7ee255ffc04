package loadgen

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/sluice-gw/sluice/internal/sim/report"
)

// Progress cadence: a terminal gets a line rewritten every second; a log
// file or pipe gets a plain line every few seconds so it stays readable.
const (
	progressTick = time.Second
	progressPipe = 5 * time.Second
)

// startProgress writes status lines to w until the returned stop is
// called. A nil w writes nothing.
func startProgress(w io.Writer, t *tally, start time.Time, target func(time.Duration) float64) (stop func()) {
	if w == nil {
		return func() {}
	}
	tty := isTerminal(w)
	every := progressPipe
	if tty {
		every = progressTick
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(progressTick)
		defer tick.Stop()
		var lastSent int64
		lastAt, lastPrint := start, start
		printed := false
		for {
			select {
			case <-quit:
				if tty && printed {
					fmt.Fprintln(w)
				}
				return
			case now := <-tick.C:
				sent := t.sent.Load()
				rate := float64(sent-lastSent) / now.Sub(lastAt).Seconds()
				lastSent, lastAt = sent, now
				if now.Sub(lastPrint) < every-progressTick/2 {
					continue
				}
				lastPrint = now
				line := statusLine(t, now.Sub(start), rate, target(now.Sub(start)))
				if tty {
					// \x1b[K clears what a longer previous line left.
					fmt.Fprintf(w, "\r%s\x1b[K", line)
				} else {
					fmt.Fprintln(w, line)
				}
				printed = true
			}
		}
	})
	return func() {
		close(quit)
		wg.Wait()
	}
}

// statusLine shows where the run stands. The rate is measured over the
// last tick; the target beside it shows whether the generator keeps up
// and where a ramp has got to.
func statusLine(t *tally, elapsed time.Duration, rate, target float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%6.1fs  sent %d  in flight %d  ok %d  shed %d  timedOut %d  failed %d",
		elapsed.Seconds(), t.sent.Load(), t.inFlight.Load(),
		t.count(report.OK), t.count(report.Shed), t.count(report.TimedOut), t.count(report.Failed))
	for _, o := range []report.Outcome{report.Late, report.Lost, report.RateLimited} {
		if n := t.count(o); n > 0 {
			fmt.Fprintf(&b, "  %s %d", o, n)
		}
	}
	fmt.Fprintf(&b, "  rate %.1f/s (target %.1f/s)", rate, target)
	return b.String()
}

// isTerminal reports whether w is a character device, without a terminal
// library: enough to choose between rewriting a line and appending lines.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
