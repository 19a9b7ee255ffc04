package gateway_test

import (
	"context"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
)

// Priority is earned by a key, not claimed by a header. With no critical
// keys declared (the embedded default and most configs), a flood of
// requests that ask for critical is interactive traffic like any other:
// it meets the queue's bounds, and it cannot shed the interactive
// requests sent alongside it more than their share.
func TestCriticalHeaderFloodIsBounded(t *testing.T) {
	s := newStack(t, mock.Config{TTFT: 100 * time.Millisecond, OutputTokens: mock.TokenRange{Min: 1}}, func(c *config.Config) {
		c.Log.Format = "json"
		c.Admission.MaxInFlight = 16
		c.Providers[0].MaxInFlight = 16
		c.Admission.Queue.MaxDepth = 40
		c.Admission.Queue.MaxWait = config.Duration(time.Second)
		c.Admission.Priorities = config.Priorities{Critical: config.Class{Reserved: 4}}
	})
	goroutines := runtime.NumGoroutine()
	var peakQueue, peakGoroutines atomic.Int64
	stop := make(chan struct{})
	var watch sync.WaitGroup
	watch.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			sn := s.gw.Runner().Snapshot()
			q := int64(sn.Queued[0] + sn.Queued[1] + sn.Queued[2])
			if q > peakQueue.Load() {
				peakQueue.Store(q)
			}
			if n := int64(runtime.NumGoroutine()); n > peakGoroutines.Load() {
				peakGoroutines.Store(n)
			}
		}
	})
	// 600 "critical" requests in about a second, 10x the capacity.
	var wg sync.WaitGroup
	var interactiveOK, interactiveSent atomic.Int64
	for i := range 600 {
		pri := "critical"
		if i%10 == 0 {
			pri = "interactive"
			interactiveSent.Add(1)
		}
		wg.Go(func() {
			resp, err := s.post(context.Background(), "/v1/chat/completions", chatBody, map[string]string{"X-Sluice-Priority": pri})
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if pri == "interactive" && resp.StatusCode == 200 {
				interactiveOK.Add(1)
			}
		})
		time.Sleep(1500 * time.Microsecond)
	}
	wg.Wait()
	close(stop)
	watch.Wait()

	if q := peakQueue.Load(); q > 40 {
		t.Errorf("the queue reached %d waiters; max_depth is 40", q)
	}
	for _, l := range s.requestLog() {
		if l.Priority == "critical" {
			t.Fatalf("a request that only asked for critical was served as critical: %+v", l)
		}
	}
	// Interactive asked for nothing special and is served like the
	// flood's requests: its share of answers is theirs, about the
	// capacity's share (16 slots of 100 ms against ~600 req/s: ~27%).
	if ok, sent := interactiveOK.Load(), interactiveSent.Load(); ok == 0 {
		t.Errorf("no interactive request of %d was answered beside the flood", sent)
	}
	t.Logf("peak queue %d, goroutines %d -> peak %d; interactive answered %d of %d",
		peakQueue.Load(), goroutines, peakGoroutines.Load(), interactiveOK.Load(), interactiveSent.Load())
}

// A declared critical key gets its reserved slots and the head of the
// queue, but a flood from it is bounded too: its waiters count against
// the queue and wait at most max_wait.
func TestCriticalKeyFloodIsBounded(t *testing.T) {
	t.Setenv("SLUICE_TEST_CRITICAL", criticalKey)
	s := newStack(t, mock.Config{TTFT: 200 * time.Millisecond, OutputTokens: mock.TokenRange{Min: 1}}, func(c *config.Config) {
		c.Log.Format = "json"
		c.Admission.CriticalKeysEnv = "SLUICE_TEST_CRITICAL"
		c.Admission.MaxInFlight = 4
		c.Providers[0].MaxInFlight = 4
		c.Admission.Queue.MaxDepth = 8
		c.Admission.Queue.MaxWait = config.Duration(300 * time.Millisecond)
		c.Admission.Priorities = config.Priorities{Critical: config.Class{Reserved: 2}}
	})
	var wg sync.WaitGroup
	var peak atomic.Int64
	for range 200 {
		wg.Go(func() {
			resp, err := s.post(context.Background(), "/v1/chat/completions", chatBody, priorityHeaders("critical"))
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			sn := s.gw.Runner().Snapshot()
			if q := int64(sn.Queued[0]); q > peak.Load() {
				peak.Store(q)
			}
		})
	}
	wg.Wait()
	waitFor(t, "every log line", func() bool { return len(s.requestLog()) == 200 })
	shed := 0
	for _, l := range s.requestLog() {
		if l.Priority != "critical" {
			t.Fatalf("a declared key was served as %s", l.Priority)
		}
		if l.Outcome == "shed" {
			shed++
		}
	}
	if peak.Load() > 8 || shed == 0 {
		t.Errorf("critical queue peaked at %d (max_depth 8), %d of 200 shed; want a bounded queue that sheds the excess", peak.Load(), shed)
	}
	if mp := s.mock.Stats().PeakInFlight; mp > 6 {
		t.Errorf("upstream saw %d in flight; the limit is 4 + 2 reserved", mp)
	}
}
