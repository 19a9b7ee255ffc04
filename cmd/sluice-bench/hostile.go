package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The hostile phase measures what hostile clients and large answers cost
// the gateway, for sluice and (with --sluice-baseline) sluice-before:
//
//	a. sockets that declare a 10 MiB body and send none (RSS per socket);
//	b. concurrent embeddings answers of about 100 MB each (peak RSS);
//	c. an open-loop flood at 10x capacity in which every request claims
//	   X-Sluice-Priority: critical without a declared critical key.
//
// Each measurement starts its own gateway and mock, and stops them.

// declaredBody is the Content-Length the idle sockets declare: the
// gateway's default max_body_bytes, so neither version refuses it at once.
const declaredBody = 10 << 20

// hostileResults is the hostile phase's rows.
type hostileResults struct {
	Sockets []socketRow
	Answers []answerRow
	Flood   []floodRow
}

func runHostile(ctx context.Context, e *env, o *options) *hostileResults {
	kinds := []kind{sluice}
	if e.available(sluiceBefore) {
		kinds = append(kinds, sluiceBefore)
	}
	h := &hostileResults{}
	for _, k := range kinds {
		if ctx.Err() == nil {
			h.Sockets = append(h.Sockets, measureSockets(ctx, e, o, k))
		}
	}
	for _, k := range kinds {
		if ctx.Err() == nil {
			h.Answers = append(h.Answers, measureAnswers(ctx, e, o, k))
		}
	}
	for _, k := range kinds {
		if ctx.Err() == nil {
			h.Flood = append(h.Flood, measureFlood(ctx, e, o, k))
		}
	}
	return h
}

// socketRow is measurement a for one target.
type socketRow struct {
	Kind       kind
	Sockets    int // attempted
	Opened     int // connected and sent their headers
	Unanswered int // still waiting, no byte of answer, when RSS was sampled
	IdleKiB    int64
	LoadedKiB  int64
	HeapIdle   float64 // go_memstats_heap_inuse_bytes before
	HeapLoaded float64 // and with the sockets open
	Held       float64 // sluice_request_body_bytes_held with the sockets open (-1: not exported)
	Limit      float64 // sluice_request_body_bytes_limit (-1: not exported)
	HeldAfter  float64 // held once the sockets are closed
	Settle     time.Duration
	Note       string
}

func measureSockets(ctx context.Context, e *env, o *options, k kind) socketRow {
	n := o.hostileSockets
	if k == sluiceBefore {
		n = o.hostileBaselineSockets
	}
	row := socketRow{Kind: k, Sockets: n, Held: -1, Limit: -1, HeldAfter: -1}
	e.logf("hostile: %s, %d idle sockets declaring Content-Length %d", k, n, declaredBody)
	t, err := e.start(ctx, k, mockProfile{tokens: 1}, limits{hostile: true})
	if err != nil {
		row.Note = "failed to start: " + err.Error()
		return row
	}
	defer t.stop()
	time.Sleep(time.Second) // start-up garbage settles before the idle sample
	row.IdleKiB, _ = rssKiB(t.proc.PID)
	m := scrapeSums(ctx, t.admin+"/metrics", heapInUse)
	row.HeapIdle = m[heapInUse]

	host := strings.TrimPrefix(t.url, "http://")
	head := fmt.Appendf(nil, "POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
		"Authorization: Bearer bench-client-key\r\nContent-Length: %d\r\n\r\n", host, declaredBody)
	conns := make([]net.Conn, n)
	var firstErr error
	var mu sync.Mutex
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	for i := range conns {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			c, err := net.DialTimeout("tcp", host, 5*time.Second)
			if err == nil {
				c.SetWriteDeadline(time.Now().Add(5 * time.Second))
				if _, err = c.Write(head); err != nil {
					c.Close()
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			conns[i] = c
		})
	}
	wg.Wait()
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	for _, c := range conns {
		if c != nil {
			row.Opened++
		}
	}
	if firstErr != nil {
		row.Note = joinNotes(row.Note, "first connection error: "+firstErr.Error())
	}

	// Accepted: what the gateway holds has stopped growing for a second:
	// the body gauge where it is exported (any growth counts), else the
	// Go heap in use (growth of 1 MiB counts: scrapes allocate too).
	start, last, still := time.Now(), -1.0, 0
	for time.Since(start) < 15*time.Second && ctx.Err() == nil {
		time.Sleep(250 * time.Millisecond)
		m := scrapeSums(ctx, t.admin+"/metrics", bodyHeld, heapInUse)
		now, tol := m[bodyHeld], 0.0
		if _, ok := m[bodyHeld]; !ok {
			now, tol = m[heapInUse], 1<<20
		}
		if grew := now > last+tol; grew {
			last, still = now, 0
		} else if still++; still >= 4 {
			break
		}
	}
	row.Settle = time.Since(start)
	row.LoadedKiB, _ = rssKiB(t.proc.PID)
	m = scrapeSums(ctx, t.admin+"/metrics", heapInUse, bodyHeld, bodyLimit)
	row.HeapLoaded = m[heapInUse]
	if v, ok := m[bodyHeld]; ok {
		row.Held = v
	}
	if v, ok := m[bodyLimit]; ok {
		row.Limit = v
	}
	row.Unanswered = countUnanswered(conns)
	e.logf("  %d/%d sockets open, %d unanswered; RSS %d -> %d KiB (+%.1f MB); heap in use +%.1f MB; body bytes held %.0f",
		row.Opened, n, row.Unanswered, row.IdleKiB, row.LoadedKiB, row.addedMB(), (row.HeapLoaded-row.HeapIdle)/1e6, row.Held)

	for i, c := range conns {
		if c != nil {
			c.Close()
			conns[i] = nil
		}
	}
	if row.Held >= 0 {
		for wait := time.Now(); time.Since(wait) < 5*time.Second && ctx.Err() == nil; time.Sleep(100 * time.Millisecond) {
			if v, ok := scrapeSums(ctx, t.admin+"/metrics", bodyHeld)[bodyHeld]; ok {
				if row.HeldAfter = v; v == 0 {
					break
				}
			}
		}
	}
	return row
}

func (r socketRow) addedMB() float64 { return float64(r.LoadedKiB-r.IdleKiB) * 1024 / 1e6 }

// countUnanswered counts the sockets on which the gateway has sent
// nothing and not closed: each is given 5 ms to show a byte.
func countUnanswered(conns []net.Conn) int {
	var n int
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for _, c := range conns {
		if c == nil {
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			c.SetReadDeadline(time.Now().Add(5 * time.Millisecond))
			var b [1]byte
			_, err := c.Read(b[:])
			if errors.Is(err, os.ErrDeadlineExceeded) {
				mu.Lock()
				n++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return n
}

// floodRow is measurement c for one target.
type floodRow struct {
	Kind         kind
	Sent, OK     int
	Rejected     int // 503s
	TimedOut     int // gave up by the client after --hostile-timeout
	Bad, Errs    int // other statuses, other transport errors
	Reject       dist
	ServerReject dist // the gateway's own time per 503, from its request log
	OKLat        dist
	PeakQueue    float64 // sluice_queue_depth, all classes, sampled
	PeakInFlight float64 // sluice_in_flight_requests{scope="global"}, sampled
	PeakUpstream int64
	IdleKiB      int64
	PeakKiB      int64
	Lag          time.Duration
	Note         string
}

func measureFlood(ctx context.Context, e *env, o *options, k kind) floodRow {
	row := floodRow{Kind: k}
	e.logf("hostile: %s, critical-header flood at %.0f req/s for %s (limit %d, queue %d, upstream %s, client timeout %s)",
		k, o.overloadRate, o.duration, o.overloadLimit, o.overloadQueue, o.overloadLatency, o.hostileTimeout)
	lim := limits{maxInFlight: o.overloadLimit, queueDepth: o.overloadQueue}
	t, err := e.start(ctx, k, mockProfile{ttft: o.overloadLatency, tokens: 1}, lim)
	if err != nil {
		row.Note = "failed to start: " + err.Error()
		return row
	}
	defer t.stop()
	c := newClient(t, chatBody(false, 0), 256)
	defer c.close()
	// Warm up as the overload phase does, without the header.
	openLoop(ctx, c, o.overloadRate, o.warmup, 10*time.Second, o.poisson, 7)
	settle(ctx, t, 30*time.Second)
	t.mock.waitInFlight(ctx, 0, 5*time.Second)
	t.mock.reset(ctx)
	c.hdr.Set("X-Sluice-Priority", "critical")
	row.IdleKiB, _ = rssKiB(t.proc.PID)

	sctx, stop := context.WithCancel(ctx)
	var sampled sync.WaitGroup
	sampled.Go(func() {
		for sctx.Err() == nil {
			m := scrapeSums(sctx, t.admin+"/metrics", queueDepth, inFlightGlobal)
			row.PeakQueue = max(row.PeakQueue, m[queueDepth])
			row.PeakInFlight = max(row.PeakInFlight, m[inFlightGlobal])
			if rss, err := rssKiB(t.proc.PID); err == nil {
				row.PeakKiB = max(row.PeakKiB, rss)
			}
			select {
			case <-sctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	})
	span := markLog(t)
	res, sent, lag := openLoop(ctx, c, o.overloadRate, o.duration, o.hostileTimeout, o.poisson, 42)
	stop()
	sampled.Wait()
	row.Sent, row.Lag = sent, lag
	if st, err := t.mock.stats(ctx); err == nil {
		row.PeakUpstream = st.PeakInFlight
	}
	lines, err := span.lines()
	if err != nil {
		row.Note = joinNotes(row.Note, "reading the request log: "+err.Error())
	}
	var server []time.Duration
	for _, l := range lines {
		if l.Status == http.StatusServiceUnavailable {
			server = append(server, l.Duration)
		}
	}
	row.ServerReject = summarize(server)
	row.OK = len(res.byStatus[http.StatusOK])
	row.Rejected = len(res.byStatus[http.StatusServiceUnavailable])
	row.Bad = res.others(http.StatusOK, http.StatusServiceUnavailable)
	row.Reject = summarize(res.byStatus[http.StatusServiceUnavailable])
	row.OKLat = summarize(res.byStatus[http.StatusOK])
	row.TimedOut, row.Errs = res.timeouts, res.errs-res.timeouts
	if row.Errs > 0 {
		row.Note = joinNotes(row.Note, "first error: "+res.firstErr)
	}
	e.logf("  %d sent: %d 503 (p50 %s p99 %s max %s), %d 200, %d timed out; peak queue %.0f, in flight %.0f, upstream %d",
		row.Sent, row.Rejected, ms(row.Reject.P50), ms(row.Reject.P99), ms(row.Reject.Max), row.OK, row.TimedOut,
		row.PeakQueue, row.PeakInFlight, row.PeakUpstream)
	t.mock.waitInFlight(ctx, 0, 15*time.Second)
	return row
}

// Series the hostile phase reads from a gateway's /metrics.
const (
	heapInUse      = "go_memstats_heap_inuse_bytes"
	bodyHeld       = "sluice_request_body_bytes_held"
	bodyLimit      = "sluice_request_body_bytes_limit"
	queueDepth     = "sluice_queue_depth"
	inFlightGlobal = `sluice_in_flight_requests{scope="global"}`
)

// scrapeSums reads a Prometheus text page and returns, for each name, the
// sum of its series: a bare name matches every label set, a name with
// labels only that series. Names absent from the page are absent from
// the map; errors leave it empty.
func scrapeSums(ctx context.Context, url string, names ...string) map[string]float64 {
	out := map[string]float64{}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return out
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		series, val, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(series, "#") {
			continue
		}
		bare, _, _ := strings.Cut(series, "{")
		for _, n := range names {
			if n == series || n == bare {
				if v, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
					out[n] += v
				}
			}
		}
	}
	return out
}
