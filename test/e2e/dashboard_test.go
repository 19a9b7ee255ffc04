package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// chromium finds a Chromium to drive: $CHROMIUM, or Debian's chromium on
// the PATH. Without one the test skips, unless CI is set: CI installs it
// (.ci/run), so its absence there is a failure, not a skip.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed, and CI is set: install it (apt-get install -y chromium) or set CHROMIUM to its path")
	}
	t.Skip("chromium is not installed: apt-get install -y chromium (or set CHROMIUM) to run the dashboard's browser test")
	return ""
}

// The dashboard in a real browser during sluice demo's brownout: headless
// Chromium loads the page from the demo's admin listener and, reading the
// page's own chart data and DOM (not pixels), sees the primary's breaker
// open, the queue rise after the brownout's start (while the primary's
// limit was full of slow calls), and the fail-back begin; the
// page logs no console error and throws nothing. It saves the screenshot
// the README shows (docs/img/dashboard.png; quality 100 makes a PNG).
func TestDashboardInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("runs sluice demo and a browser for about 35 s")
	}
	browser := chromium(t)
	bin := buildSluice(t)
	admin := freeAddr(t)
	url := "http://" + admin + "/dashboard/"
	demo := start(t, ready(url), bin, "demo", "--duration", "30s", "--no-browser-hint", "--listen", "127.0.0.1:0", "--admin", admin)

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser),
		chromedp.NoSandbox, // root in CI containers
		chromedp.WindowSize(1400, 1900),
		chromedp.Flag("disable-gpu", true),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, 75*time.Second)
	defer cancelT()

	var mu sync.Mutex
	var problems []string
	listenErr := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				problems = append(problems, "console."+string(ev.Type)+": "+strings.Join(args, " "))
			}
		case *cdplog.EventEntryAdded: // failed loads, CSP refusals
			if ev.Entry.Level == cdplog.EntryLevelError {
				problems = append(problems, "log: "+ev.Entry.Text+" "+ev.Entry.URL)
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+ev.ExceptionDetails.Text+" "+exceptionText(ev.ExceptionDetails))
		}
	})
	if listenErr != nil {
		t.Fatalf("starting %s: %v", browser, listenErr)
	}

	// The breaker's opening, from the page's events (the list it draws
	// and marks on every chart's time axis) and the queue's rise, from
	// the queue chart's own data arrays.
	const seen = `(() => {
	  const d = window.sluiceDashboard;
	  if (!d || !d.charts["c-queue"]) return false;
	  const opened = d.events.some(e => e.kind === "breaker" && e.provider === "primary" && e.to === "open");
	  const li = document.querySelector('#events li[data-provider="primary"][data-to="open"]');
	  const mark = d.events.find(e => e.kind === "mark" && e.label.startsWith("brownout starts"));
	  if (!mark) return false;
	  // The queue chart's own arrays: x in seconds, then one per series.
	  const c = d.charts["c-queue"], data = c.plot.data;
	  let queued = 0;
	  c.series.forEach((label, i) => {
	    if (!label.endsWith(" queued")) return;
	    data[i + 1].forEach((v, j) => { if (data[0][j] * 1000 >= mark.t) queued = Math.max(queued, v); });
	  });
	  return opened && li !== null && queued > 0;
	})()`
	// Then the fail-back, for a screenshot that tells the whole story.
	const recovering = `window.sluiceDashboard.events.some(e => e.kind === "breaker" && e.provider === "primary" && (e.to === "recovering" || e.to === "closed"))`
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("loading %s: %v", url, err)
	}
	poll := func(what, expr string, d time.Duration) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(250*time.Millisecond), chromedp.WithPollingTimeout(d))); err != nil {
			t.Fatalf("the dashboard never showed %s: %v\ndemo output:\n%s", what, err, demo.Output())
		}
	}
	poll("the primary's breaker opening and the queue rising", seen, 40*time.Second)
	poll("the primary failing back", recovering, 25*time.Second)
	facts, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
	  const d = window.sluiceDashboard, c = d.charts["c-queue"];
	  let peak = 0;
	  c.series.forEach((label, i) => { if (label.endsWith(" queued")) peak = Math.max(peak, ...c.plot.data[i + 1]); });
	  const states = [...document.querySelectorAll("#providers .provider")].map(p => p.dataset.provider + "=" + p.dataset.state);
	  return "samples " + d.samples.length + ", queue peak " + peak + ", events: " +
	    d.events.filter(e => e.kind !== "verdict").map(e => e.label).join("; ") +
	    " | providers now: " + states.join(", ") + " | verdict: " + document.getElementById("verdict-kind").textContent;
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the page saw: %s", facts)

	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	// A test never rewrites a tracked file: the screenshot goes to the
	// test's own directory, and to docs/img/dashboard.png only when asked.
	shot := filepath.Join(t.TempDir(), "dashboard.png")
	if os.Getenv("SLUICE_WRITE_SCREENSHOT") != "" {
		shot = filepath.Join("..", "..", "docs", "img", "dashboard.png")
	}
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", shot, len(png))

	mu.Lock()
	defer mu.Unlock()
	if len(problems) > 0 {
		t.Errorf("the page logged %d console errors or exceptions:\n%s", len(problems), strings.Join(problems, "\n"))
	}
}

// exceptionText is what an uncaught exception says of itself.
func exceptionText(d *runtime.ExceptionDetails) string {
	if d.Exception != nil {
		return d.Exception.Description
	}
	return ""
}
