package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/sluice-gw/sluice/internal/harness/procs"
)

// dist is a latency distribution summarised at fixed percentiles.
type dist struct {
	N                  int
	P50, P90, P99, Max time.Duration
}

// summarize sorts lats in place and reads nearest-rank percentiles.
func summarize(lats []time.Duration) dist {
	if len(lats) == 0 {
		return dist{}
	}
	slices.Sort(lats)
	at := func(q float64) time.Duration {
		i := int(math.Ceil(q*float64(len(lats)))) - 1
		return lats[max(0, min(i, len(lats)-1))]
	}
	return dist{N: len(lats), P50: at(0.50), P90: at(0.90), P99: at(0.99), Max: lats[len(lats)-1]}
}

// mockStats is the part of the mock's GET /stats the harness reads.
type mockStats struct {
	InFlight          int64 `json:"in_flight"`
	PeakInFlight      int64 `json:"peak_in_flight"`
	Completed         int64 `json:"completed"`
	CancelledByClient int64 `json:"cancelled_by_client"`
	Rejected          int64 `json:"rejected"`
	Total             int64 `json:"total"`
}

// mockCtl talks to one upstream mock's control endpoints.
type mockCtl struct {
	url  string
	proc *procs.Proc
}

func (m *mockCtl) call(ctx context.Context, method, path string) (mockStats, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, m.url+path, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return mockStats{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return mockStats{}, fmt.Errorf("%s %s: status %d", method, path, resp.StatusCode)
	}
	var s mockStats
	return s, json.NewDecoder(resp.Body).Decode(&s)
}

func (m *mockCtl) stats(ctx context.Context) (mockStats, error) {
	return m.call(ctx, http.MethodGet, "/stats")
}

func (m *mockCtl) reset(ctx context.Context) error {
	_, err := m.call(ctx, http.MethodPost, "/stats/reset")
	return err
}

// waitInFlight polls the mock until in_flight is at most want or timeout
// passes, and returns the last stats and how long it took.
func (m *mockCtl) waitInFlight(ctx context.Context, want int64, timeout time.Duration) (mockStats, time.Duration, error) {
	start := time.Now()
	for {
		s, err := m.stats(ctx)
		if err != nil || s.InFlight <= want || time.Since(start) >= timeout || ctx.Err() != nil {
			return s, time.Since(start), err
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// fileSize is the current size of a file (0 if it cannot be read).
func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// logLine is what the harness reads from one line of Sluice's JSON
// request log (slog writes durations as nanoseconds).
type logLine struct {
	Msg      string        `json:"msg"`
	Status   int           `json:"status"`
	Duration time.Duration `json:"duration"`          // arrival to answer, Sluice's clock
	Upstream time.Duration `json:"upstream_duration"` // the upstream call alone
}

// readLog returns the request lines of Sluice's log between two offsets.
func readLog(path string, from, to int64) ([]logLine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(io.NewSectionReader(f, from, to-from))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var out []logLine
	for sc.Scan() {
		var l logLine
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "request" {
			out = append(out, l)
		}
	}
	return out, sc.Err()
}

// logSpan marks where a measured slice's lines start in Sluice's log.
type logSpan struct {
	path string
	from int64
}

func markLog(t *target) logSpan {
	if !t.kind.isSluice() {
		return logSpan{}
	}
	return logSpan{path: t.proc.LogPath(), from: fileSize(t.proc.LogPath())}
}

// lines waits briefly for the slice's last lines to land and reads them.
func (s logSpan) lines() ([]logLine, error) {
	if s.path == "" {
		return nil, nil
	}
	time.Sleep(100 * time.Millisecond)
	return readLog(s.path, s.from, fileSize(s.path))
}
