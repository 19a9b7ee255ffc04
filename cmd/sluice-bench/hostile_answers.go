package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// embedInputs is how many short strings each large-answer request embeds;
// the answer's size is then set with "dimensions".
const embedInputs = 2048

// answerRow is measurement b for one target: concurrent non-streamed
// answers of about --hostile-answer-bytes each, read at full speed.
type answerRow struct {
	Kind    kind
	Answers int   // concurrent requests
	Dims    int   // "dimensions" asked for
	Size    int64 // bytes of one answer straight from the mock
	Full    int   // 200s with exactly Size bytes
	Short   int   // 200s with another byte count
	Other   []int // statuses other than 200
	Errs    int   // transport errors
	Bytes   int64 // every answer byte the clients read
	IdleKiB int64
	PeakKiB int64 // VmRSS, sampled every 20 ms
	HWMKiB  int64 // VmHWM after the run
	MockKiB int64 // the mock's VmHWM: what making the answers cost it
	Took    time.Duration
	// Probe is what sluice-before answered to one request of sluice's
	// size, which passes its 64 MiB limit.
	Probe string
	Note  string
}

func (r answerRow) peakAddedMB() float64 {
	return float64(max(r.PeakKiB, r.HWMKiB)-r.IdleKiB) * 1024 / 1e6
}

func measureAnswers(ctx context.Context, e *env, o *options, k kind) answerRow {
	want := o.hostileAnswerBytes
	if k == sluiceBefore {
		want = o.hostileBaselineBytes
	}
	row := answerRow{Kind: k, Answers: o.hostileAnswers}
	// The mock builds each answer whole (about 3.5x its size at its peak)
	// and sluice-before held each whole too: skip rather than swap.
	need := int64(o.hostileAnswers) * want * 4
	if k == sluiceBefore {
		need += int64(o.hostileAnswers) * want * 2
	}
	if avail, err := memAvailable(); err == nil && avail < need {
		row.Note = fmt.Sprintf("skipped: needs about %s of free memory, %s available", mbBytes(float64(need)), mbBytes(float64(avail)))
		e.logf("hostile: %s large answers %s", k, row.Note)
		return row
	}
	t, err := e.start(ctx, k, mockProfile{tokens: 1}, limits{hostile: true})
	if err != nil {
		row.Note = "failed to start: " + err.Error()
		return row
	}
	defer t.stop()
	if row.Dims, err = calibrateEmbeddings(ctx, t.mock.url, want); err == nil {
		body := embedBody(row.Dims)
		var status int
		row.Size, status, err = fetchCount(ctx, t.mock.url+"/v1/embeddings", body)
		if err == nil && status != http.StatusOK {
			err = fmt.Errorf("status %d", status)
		}
	}
	if err != nil {
		row.Note = "sizing the answer against the mock: " + err.Error()
		return row
	}
	e.logf("hostile: %s, %d concurrent embeddings answers of %d bytes (%d inputs x %d dimensions)", k, row.Answers, row.Size, embedInputs, row.Dims)
	time.Sleep(time.Second)
	row.IdleKiB, _ = rssKiB(t.proc.PID)

	sctx, stop := context.WithCancel(ctx)
	var sampled sync.WaitGroup
	sampled.Go(func() {
		for sctx.Err() == nil {
			if rss, err := rssKiB(t.proc.PID); err == nil {
				row.PeakKiB = max(row.PeakKiB, rss)
			}
			select {
			case <-sctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
	body := embedBody(row.Dims)
	type got struct {
		n      int64
		status int
		err    error
	}
	results := make([]got, row.Answers)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			var g got
			g.n, g.status, g.err = fetchCount(ctx, t.url+"/v1/embeddings", body)
			results[i] = g
		})
	}
	wg.Wait()
	row.Took = time.Since(start)
	stop()
	sampled.Wait()
	row.HWMKiB, _ = hwmKiB(t.proc.PID)
	row.MockKiB, _ = hwmKiB(t.mock.proc.PID)
	for _, g := range results {
		row.Bytes += g.n
		switch {
		case g.err != nil:
			if row.Errs++; row.Errs == 1 {
				row.Note = joinNotes(row.Note, "first error: "+g.err.Error())
			}
		case g.status != http.StatusOK:
			row.Other = append(row.Other, g.status)
		case g.n == row.Size:
			row.Full++
		default:
			row.Short++
		}
	}
	slices.Sort(row.Other)
	e.logf("  %d/%d answered 200 with every byte (%d short, other statuses %v, %d errors) in %s; RSS idle %d KiB, peak %d KiB, VmHWM %d KiB (the mock's %d KiB)",
		row.Full, row.Answers, row.Short, row.Other, row.Errs, row.Took.Round(time.Millisecond), row.IdleKiB, row.PeakKiB, row.HWMKiB, row.MockKiB)

	if k == sluiceBefore && ctx.Err() == nil {
		// One answer of sluice's size, to show where the old limit bites.
		if dims, err := calibrateEmbeddings(ctx, t.mock.url, o.hostileAnswerBytes); err == nil {
			n, status, err := fetchCount(ctx, t.url+"/v1/embeddings", embedBody(dims))
			if err != nil {
				row.Probe = "error: " + err.Error()
			} else {
				row.Probe = fmt.Sprintf("status %d, %d bytes", status, n)
			}
			e.logf("  one answer of about %d bytes: %s", o.hostileAnswerBytes, row.Probe)
		}
	}
	return row
}

// embedBody is an embeddings request for embedInputs short strings.
func embedBody(dims int) []byte {
	return embedBodyN(embedInputs, dims)
}

func embedBodyN(inputs, dims int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"model":%q,"input":[`, embedModel)
	for i := range inputs {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"input %d"`, i)
	}
	fmt.Fprintf(&b, `],"dimensions":%d}`, dims)
	return b.Bytes()
}

// calibrateEmbeddings finds the "dimensions" that make the mock's answer
// to embedBody about want bytes, from the sizes of two small answers
// (64 and 128 inputs): their difference is the bytes per input.
func calibrateEmbeddings(ctx context.Context, mockURL string, want int64) (int, error) {
	dims := int(max(1, want/(embedInputs*13)))
	for range 2 {
		var size [2]int64
		for i, n := range []int{64, 128} {
			s, status, err := fetchCount(ctx, mockURL+"/v1/embeddings", embedBodyN(n, dims))
			if err != nil {
				return 0, err
			}
			if status != http.StatusOK {
				return 0, fmt.Errorf("calibration call: status %d", status)
			}
			size[i] = s
		}
		per := float64(size[1]-size[0]) / 64
		over := float64(size[0]) - 64*per
		if per <= 0 {
			return 0, fmt.Errorf("calibration: answer does not grow with its inputs")
		}
		dims = int(math.Round(float64(dims) * (float64(want) - over) / (embedInputs * per)))
		dims = min(max(dims, 1), 65536)
	}
	return dims, nil
}

// answerTransport carries the large answers: no compression, no shared
// idle limit, a fresh connection per concurrent call.
var answerTransport = &http.Transport{
	Proxy:               nil,
	DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
	MaxIdleConnsPerHost: 64,
	DisableCompression:  true,
}

// fetchCount POSTs body and reads the whole answer as fast as it comes,
// counting its bytes. Each call is bounded at 4 minutes.
func fetchCount(ctx context.Context, url string, body []byte) (int64, int, error) {
	ctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer bench-client-key")
	resp, err := answerTransport.RoundTrip(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	buf := make([]byte, 256<<10)
	var n int64
	for {
		m, err := resp.Body.Read(buf)
		n += int64(m)
		if err == io.EOF {
			return n, resp.StatusCode, nil
		}
		if err != nil {
			return n, resp.StatusCode, err
		}
	}
}

// statusList renders statuses as "502 x16, 500 x1".
func statusList(st []int) string {
	if len(st) == 0 {
		return "-"
	}
	var parts []string
	for i := 0; i < len(st); {
		j := i
		for j < len(st) && st[j] == st[i] {
			j++
		}
		parts = append(parts, fmt.Sprintf("%d x%d", st[i], j-i))
		i = j
	}
	return strings.Join(parts, ", ")
}
