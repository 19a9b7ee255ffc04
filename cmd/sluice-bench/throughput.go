package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// throughputRow is phase 1 for one target: closed-loop, fixed concurrency,
// an instant one-token upstream.
type throughputRow struct {
	Kind          kind
	OK, Bad, Errs int // 200s, other statuses, transport errors
	Elapsed       time.Duration
	RPS           float64
	CPUPerReq     time.Duration // the proxy's (the mock's for direct)
	Cores         float64       // the proxy's CPU time over wall time
	MockCPUPerReq time.Duration
	GenCPUPerReq  time.Duration // the load generator's (this process)
	OtherCores    float64       // CPU used by processes outside the run
	Lat           dist
	Note          string
}

func runThroughput(ctx context.Context, e *env, o *options, kinds []kind) []throughputRow {
	e.logf("throughput: %d clients, %s per target in %d interleaved rounds", o.concurrency, o.duration, o.rounds)
	f := e.startFleet(ctx, kinds, same(mockProfile{tokens: 1}), limits{})
	defer f.stop()
	rows := make([]throughputRow, len(kinds))
	for i := range rows {
		rows[i] = throughputRow{Kind: kinds[i], Note: f.notes[i]}
	}
	tallies := newTallies(len(kinds))
	use := make([]cpuUse, len(kinds))
	clients, closeAll := f.warmClients(ctx, o.concurrency, func(c *client) { closedLoop(ctx, c, o.concurrency, o.warmup) })
	defer closeAll()
	slice := sliceOf(o.duration, o.rounds)
	for round := range o.rounds {
		for i, t := range f.targets {
			if t == nil || ctx.Err() != nil {
				continue
			}
			a := takeCPU(t)
			res, elapsed := closedLoop(ctx, clients[i], o.concurrency, slice)
			use[i].add(t, a, takeCPU(t))
			settle(ctx, t, 30*time.Second)
			tallies[i].merge(res)
			rows[i].Elapsed += elapsed
			e.logf("  round %d %-8s %6.0f req/s", round+1, kinds[i], float64(len(res.byStatus[http.StatusOK]))/elapsed.Seconds())
		}
	}
	for i, t := range f.targets {
		if t == nil {
			continue
		}
		row, res := &rows[i], tallies[i]
		row.OK = len(res.byStatus[http.StatusOK])
		row.Bad, row.Errs = res.others(http.StatusOK), res.errs
		row.Lat = summarize(res.byStatus[http.StatusOK])
		if row.OK > 0 {
			n := time.Duration(row.OK)
			row.RPS = float64(row.OK) / row.Elapsed.Seconds()
			row.CPUPerReq, row.MockCPUPerReq, row.GenCPUPerReq = use[i].proxy/n, use[i].mock/n, use[i].gen/n
			row.Cores = use[i].proxy.Seconds() / row.Elapsed.Seconds()
			row.OtherCores = use[i].other.Seconds() / row.Elapsed.Seconds()
		}
		if res.errs > 0 {
			row.Note = joinNotes(row.Note, "first error: "+res.firstErr)
		}
		if t.kind.isSluice() {
			row.Note = joinNotes(row.Note, sluiceEvidence(ctx, t))
		}
		e.logf("  %-8s %6.0f req/s; CPU/req %s proxy, %s mock, %s load generator; other load %.2f cores; %d errors",
			row.Kind, row.RPS, micros(row.CPUPerReq), micros(row.MockCPUPerReq), micros(row.GenCPUPerReq), row.OtherCores, row.Bad+row.Errs)
	}
	return rows
}

// sluiceEvidence shows that metrics and the request log were really on:
// the ok count from /metrics and the size of the request log.
func sluiceEvidence(ctx context.Context, t *target) string {
	var parts []string
	if n, err := scrapeCounter(ctx, t.admin+"/metrics", "sluice_requests_total", `outcome="ok"`); err == nil {
		parts = append(parts, fmt.Sprintf("/metrics counted %.0f ok requests", n))
	} else {
		parts = append(parts, "metrics scrape failed: "+err.Error())
	}
	if lines, size, err := countLines(t.proc.LogPath()); err == nil {
		parts = append(parts, fmt.Sprintf("request log %d lines, %.1f MiB", lines, float64(size)/(1<<20)))
	}
	return strings.Join(parts, "; ")
}

// scrapeCounter sums a Prometheus counter's samples whose labels contain
// match.
func scrapeCounter(ctx context.Context, url, name, match string) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") || !strings.Contains(line, match) {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			sum += v
		}
	}
	return sum, sc.Err()
}

// scrapeValues reads unlabelled samples (Go runtime gauges) from a
// Prometheus text endpoint.
func scrapeValues(ctx context.Context, url string, names ...string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		for _, n := range names {
			if name == n {
				if v, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
					out[n] = v
				}
			}
		}
	}
	return out, sc.Err()
}

func countLines(path string) (lines int, size int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := f.Read(buf)
		size += int64(n)
		lines += bytes.Count(buf[:n], []byte{'\n'})
		if err != nil {
			return lines, size, nil
		}
	}
}

func joinNotes(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}
