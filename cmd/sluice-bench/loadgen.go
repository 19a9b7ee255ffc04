package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"time"
)

// client is the load generator's HTTP client for one target: keep-alive,
// no limit on connections per host, a large idle pool, no compression.
type client struct {
	tr   *http.Transport
	hc   *http.Client
	url  string
	hdr  http.Header
	body []byte
}

func newClient(t *target, body []byte, idle int) *client {
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        0, // no global cap
		MaxIdleConnsPerHost: max(idle, 64),
		MaxConnsPerHost:     0, // unlimited
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}
	hdr := http.Header{
		"Content-Type":  {"application/json"},
		"Authorization": {"Bearer bench-client-key"},
	}
	for k, v := range t.header {
		hdr[k] = v
	}
	return &client{tr: tr, hc: &http.Client{Transport: tr}, url: t.url + "/v1/chat/completions", hdr: hdr, body: body}
}

func (c *client) close() { c.tr.CloseIdleConnections() }

// chatBody is an OpenAI chat completion request; maxTokens > 0 caps the
// reply (used for quick sanity calls against a long-reply mock).
func chatBody(stream bool, maxTokens int) []byte {
	b := fmt.Appendf(nil, `{"model":%q,"messages":[{"role":"system","content":"You are a benchmark."},{"role":"user","content":"Reply with a single word."}]`, benchModel)
	if stream {
		b = append(b, `,"stream":true`...)
	}
	if maxTokens > 0 {
		b = fmt.Appendf(b, `,"max_tokens":%d`, maxTokens)
	}
	return append(b, '}')
}

func (c *client) newRequest(ctx context.Context) *http.Request {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(c.body))
	req.Header = maps.Clone(c.hdr) // the value slices are shared and never written
	return req
}

// result is one request's outcome; lat runs from just before the request
// is handed to the transport to the last byte of the body.
type result struct {
	status int
	lat    time.Duration
	err    error
}

func (c *client) do(ctx context.Context) result {
	req := c.newRequest(ctx)
	start := time.Now()
	resp, err := c.hc.Do(req)
	if err != nil {
		return result{lat: time.Since(start), err: err}
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return result{status: resp.StatusCode, lat: time.Since(start), err: err}
}

// tally collects results by status.
type tally struct {
	mu       sync.Mutex
	byStatus map[int][]time.Duration
	errs     int
	timeouts int // of errs, the requests the client gave up on (context deadline)
	firstErr string
}

func newTally() *tally { return &tally{byStatus: map[int][]time.Duration{}} }

func (t *tally) add(r result) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r.err != nil {
		t.errs++
		if errors.Is(r.err, context.DeadlineExceeded) {
			t.timeouts++
		}
		if t.firstErr == "" {
			t.firstErr = r.err.Error()
		}
		return
	}
	t.byStatus[r.status] = append(t.byStatus[r.status], r.lat)
}

func (t *tally) merge(o *tally) {
	for s, l := range o.byStatus {
		t.byStatus[s] = append(t.byStatus[s], l...)
	}
	t.errs += o.errs
	t.timeouts += o.timeouts
	if t.firstErr == "" {
		t.firstErr = o.firstErr
	}
}

// others counts answers that are neither the given statuses nor transport errors.
func (t *tally) others(ok ...int) int {
	n := 0
	for s, l := range t.byStatus {
		skip := false
		for _, o := range ok {
			skip = skip || s == o
		}
		if !skip {
			n += len(l)
		}
	}
	return n
}

// closedLoop runs workers that each send one request after another for
// dur, and returns what they saw and the measured wall time.
func closedLoop(ctx context.Context, c *client, workers int, dur time.Duration) (*tally, time.Duration) {
	all := newTally()
	deadline := time.Now().Add(dur)
	start := time.Now()
	var wg sync.WaitGroup
	parts := make([]*tally, workers)
	for i := range workers {
		parts[i] = newTally()
		wg.Go(func() {
			for time.Now().Before(deadline) && ctx.Err() == nil {
				rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				r := c.do(rctx)
				cancel()
				parts[i].add(r) // uncontended: one tally per worker
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	for _, p := range parts {
		all.merge(p)
	}
	return all, elapsed
}

// openLoop offers rate requests per second for dur, each in its own
// goroutine whatever the state of earlier ones, with exponential (Poisson)
// or constant inter-arrival times. It waits for the stragglers, each bounded
// by timeout. lag is the worst delay between an arrival's scheduled time
// and its actual start, a check that the generator kept up.
func openLoop(ctx context.Context, c *client, rate float64, dur, timeout time.Duration, poisson bool, seed uint64) (res *tally, sent int, lag time.Duration) {
	res = newTally()
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	gap := func() time.Duration {
		if poisson {
			return time.Duration(rng.ExpFloat64() / rate * float64(time.Second))
		}
		return time.Duration(float64(time.Second) / rate)
	}
	var wg sync.WaitGroup
	start := time.Now()
	for at := gap(); at < dur && ctx.Err() == nil; at += gap() {
		if d := time.Until(start.Add(at)); d > 0 {
			time.Sleep(d)
		}
		lag = max(lag, time.Since(start.Add(at)))
		sent++
		wg.Go(func() {
			rctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			res.add(c.do(rctx))
		})
	}
	wg.Wait()
	return res, sent, lag
}
