package cli

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestDemoFlags(t *testing.T) {
	for _, args := range [][]string{{"--duration", "1s"}, {"--duration", "2h"}, {"extra"}, {"--nope"}} {
		var out, errb bytes.Buffer
		if code := Demo(args, &out, &errb); code != 2 {
			t.Errorf("sluice demo %v: exit %d, want 2 (%s)", args, code, errb.String())
		}
	}
}

// A short tour, its output not a terminal: the dashboard URL, plain
// periodic lines with the breaker's transitions as they happen, and the
// closing table with the measured row and both simulated ones. Sluice
// answers more within patience than the plain proxy would.
func TestDemoShortTour(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo for 12 s")
	}
	var out, errb bytes.Buffer
	var url string
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	code := runDemo(ctx, demoOptions{duration: 12 * time.Second, listen: "127.0.0.1:0", admin: "127.0.0.1:0", hint: true,
		onReady: func(u string) { url = u }}, &out, &errb)
	wall := time.Since(start)
	text := out.String()
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, text, errb.String())
	}
	t.Logf("wall time %v\n%s", wall.Round(time.Millisecond), text)
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.Contains(text, "Open the dashboard in a browser to watch: "+url) {
		t.Errorf("the dashboard URL %q is not printed", url)
	}
	for _, want := range []string{"brownout starts", "brownout ends", "breaker primary: closed -> open", "with Sluice (measured)", "with Sluice (simulated)", "plain proxy (simulated)"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// The measured row answers more within patience than the plain
	// proxy would have: ok is the first number after the row's name.
	okOf := func(name string) int {
		i := strings.Index(text, name)
		if i < 0 {
			return -1
		}
		var n int
		fmt.Sscan(text[i+len(name):], &n)
		return n
	}
	if with, plain := okOf("with Sluice (measured)"), okOf("plain proxy (simulated)"); with <= plain {
		t.Errorf("ok with Sluice %d, with a plain proxy %d; Sluice should answer more", with, plain)
	}
	if strings.Contains(text, "\x1b[") {
		t.Errorf("escape codes in output that is not a terminal")
	}
	if wall > 12*time.Second+8*time.Second {
		t.Errorf("wall time %v for a 12 s tour", wall)
	}
}

// Ctrl-C (here, the context ending) stops the tour at once, everything
// shut down, with exit 130 and no table of cut-off requests.
func TestDemoInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the demo")
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- runDemo(ctx, demoOptions{duration: time.Minute, listen: "127.0.0.1:0", admin: "127.0.0.1:0",
			onReady: func(string) { close(ready) }}, &out, &errb)
	}()
	<-ready
	cancel()
	select {
	case code := <-done:
		if code != 130 || !strings.Contains(out.String(), "interrupted after") || strings.Contains(out.String(), "timedOut") {
			t.Errorf("exit %d\n%s\n%s", code, out.String(), errb.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the demo did not stop within 15 s of the interrupt")
	}
}
