package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
)

// logLine is the subset of a JSON request-log line the tests read.
type logLine struct {
	Msg       string  `json:"msg"`
	Priority  string  `json:"priority"`
	Outcome   string  `json:"outcome"`
	Reason    string  `json:"reason"`
	Status    int     `json:"status"`
	Duration  float64 `json:"duration"`   // nanoseconds
	QueueWait float64 `json:"queue_wait"` // nanoseconds
}

func (s *stack) requestLog() []logLine {
	var out []logLine
	for _, l := range strings.Split(s.logText(), "\n") {
		var ll logLine
		if json.Unmarshal([]byte(l), &ll) == nil && ll.Msg == "request" {
			out = append(out, ll)
		}
	}
	return out
}

// criticalKey is the client key the overload tests declare critical:
// priority is earned by a key, never by the header alone.
const criticalKey = "ops-critical-key"

// priorityHeaders asks for class pri, with the critical key when critical.
func priorityHeaders(pri string) map[string]string {
	h := map[string]string{"X-Sluice-Priority": pri}
	if pri == "critical" {
		h["Authorization"] = "Bearer " + criticalKey
	}
	return h
}

// overloadConfig: 4 slots, 4 queue places of which 1 is reserved for
// critical, 300 ms max wait. At 200 ms per call capacity is 20 req/s.
// The test must t.Setenv("SLUICE_TEST_CRITICAL", criticalKey).
func overloadConfig(c *config.Config) {
	c.Admission.CriticalKeysEnv = "SLUICE_TEST_CRITICAL"
	c.Log.Format = "json"
	c.Admission.MaxInFlight = 4
	c.Providers[0].MaxInFlight = 4
	c.Admission.Queue.MaxDepth = 4
	c.Admission.Queue.MaxWait = config.Duration(300 * time.Millisecond)
	c.Admission.Priorities = config.Priorities{Critical: config.Class{Reserved: 1}}
}

// Under 5x overload the limit holds, rejections are fast, critical is
// never shed, background goes before interactive, and nobody waits in
// the queue past max_wait.
func TestOverloadFiveTimes(t *testing.T) {
	t.Setenv("SLUICE_TEST_CRITICAL", criticalKey)
	s := newStack(t, mock.Config{TTFT: 200 * time.Millisecond, OutputTokens: mock.TokenRange{Min: 1}}, overloadConfig)

	const n = 100 // 100 req/s for 1 s: 5x the 20 req/s capacity
	// Interactive alone (10 req/s) fits in the 20 req/s capacity, so it
	// should barely be shed; background (80 req/s) takes the cuts.
	mix := []string{"background", "background", "interactive", "background", "background",
		"background", "background", "critical", "background", "background"}
	lag := measureLag()
	var wg sync.WaitGroup
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for i := range n {
		<-tick.C
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := s.post(context.Background(), "/v1/chat/completions", chatBody, priorityHeaders(mix[i%len(mix)]))
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 503 && resp.Header.Get("Retry-After") == "" {
				t.Error("503 without Retry-After")
			}
		}()
	}
	wg.Wait()
	// A handler writes its log line after its answer has gone out.
	waitFor(t, "every request's log line", func() bool { return len(s.requestLog()) == n })
	// The slack a timing check allows: what this machine showed during
	// the run, plus a little for the hops the meter does not make.
	slack := 2*lag.Worst() + 10*time.Millisecond
	t.Logf("scheduling lag during the run: worst %v; slack allowed %v", (slack-10*time.Millisecond)/2, slack)

	// Critical may use the one reserved slot above the limit of 4.
	if peak := s.mock.Stats().PeakInFlight; peak > 5 {
		t.Errorf("upstream saw %d in flight; the limit is 4 (+1 reserved for critical)", peak)
	}
	var fast []time.Duration // immediate rejections, server-side
	shed := map[string]int{}
	total := map[string]int{}
	maxWait := 300 * time.Millisecond
	for _, l := range s.requestLog() {
		total[l.Priority]++
		if l.Outcome != "shed" {
			if l.Outcome != "ok" {
				t.Errorf("unexpected outcome %q (%s)", l.Outcome, l.Reason)
			}
			if w := time.Duration(l.QueueWait); w > maxWait+slack {
				t.Errorf("a request waited %v in the queue; max_wait is %v", w, maxWait)
			}
			continue
		}
		shed[l.Priority]++
		d := time.Duration(l.Duration)
		switch l.Reason {
		case "queue_full", "class_full":
			fast = append(fast, d)
		case "wait_timeout":
			if d < maxWait-5*time.Millisecond || d > maxWait+slack {
				t.Errorf("a wait_timeout came after %v; want it at max_wait %v", d, maxWait)
			}
		}
	}
	t.Logf("offered %v, shed %v", total, shed)
	// The 1 ms target is measured out of process by the benchmark (the
	// brief keeps timing targets out of unit tests). Here the client, the
	// gateway, the mock and other test packages share two cores, so the
	// test checks what an immediate rejection is: it never waited for a
	// slot, i.e. it came back an order of magnitude under the 200 ms
	// upstream call, and typically within a millisecond.
	slices.Sort(fast)
	if len(fast) == 0 {
		t.Fatal("no immediate rejections at 5x overload")
	}
	if p50, worst := fast[len(fast)/2], fast[len(fast)-1]; p50 > 5*time.Millisecond+slack/2 || worst > 20*time.Millisecond+slack {
		t.Errorf("immediate rejections: p50 %v, max %v; they must not wait for a slot", p50, worst)
	}
	if total["critical"]+total["interactive"]+total["background"] != n {
		t.Fatalf("logged %v requests, want %d", total, n)
	}
	if shed["critical"] != 0 {
		t.Errorf("critical shed %d times; it must never be shed", shed["critical"])
	}
	bgRate := float64(shed["background"]) / float64(total["background"])
	inRate := float64(shed["interactive"]) / float64(total["interactive"])
	if bgRate < 0.5 || inRate > bgRate/2 {
		t.Errorf("background must be shed before interactive: shed %v of %v", shed, total)
	}
}

// With the queue full of background work, interactive newcomers displace
// the newest background waiters, and critical still gets through.
func TestPriorityDisplacement(t *testing.T) {
	t.Setenv("SLUICE_TEST_CRITICAL", criticalKey)
	s := newStack(t, mock.Config{TTFT: 400 * time.Millisecond, OutputTokens: mock.TokenRange{Min: 1}}, func(c *config.Config) {
		overloadConfig(c)
		c.Admission.MaxInFlight = 2
		c.Providers[0].MaxInFlight = 2
		c.Admission.Queue.MaxDepth = 3 // 2 places for non-critical
		c.Admission.Queue.MaxWait = config.Duration(2 * time.Second)
	})
	type result struct {
		pri    string
		status int
	}
	results := make(chan result, 16)
	send := func(pri string) {
		go func() {
			resp, err := s.post(context.Background(), "/v1/chat/completions", chatBody, priorityHeaders(pri))
			if err != nil {
				t.Error(err)
				results <- result{pri, 0}
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			results <- result{pri, resp.StatusCode}
		}()
	}
	inState := func(inFlight, queued int) func() bool {
		return func() bool {
			sn := s.gw.Runner().Snapshot()
			return sn.InFlight == inFlight && sn.Queued[0]+sn.Queued[1]+sn.Queued[2] == queued
		}
	}
	send("interactive")
	send("interactive")
	waitFor(t, "two in flight", inState(2, 0))
	send("background")
	send("background")
	waitFor(t, "two background queued", inState(2, 2))
	send("interactive") // displaces the newest background
	send("interactive") // displaces the other
	send("critical")    // reserved slot: starts at once
	got := map[string][]int{}
	for range 7 {
		r := <-results
		got[r.pri] = append(got[r.pri], r.status)
	}
	if fmt.Sprint(got["background"]) != "[503 503]" {
		t.Errorf("background answers %v, want both displaced with 503", got["background"])
	}
	for _, st := range append(got["interactive"], got["critical"]...) {
		if st != 200 {
			t.Errorf("interactive/critical answers %v / %v, want all 200", got["interactive"], got["critical"])
			break
		}
	}
	for _, l := range s.requestLog() {
		if l.Priority == "background" && l.Reason != "displaced" {
			t.Errorf("background shed for %q, want displaced", l.Reason)
		}
	}
}
