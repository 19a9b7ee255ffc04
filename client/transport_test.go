package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fakeClock is an injectable clock whose Sleep records the wait and advances
// time instead of blocking.
type fakeClock struct {
	mu    sync.Mutex
	t     time.Time
	waits []time.Duration
}

func newClock() *fakeClock { return &fakeClock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, d)
	c.t = c.t.Add(d)
	return nil
}

func (c *fakeClock) Waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}

type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func fakeResp(r *http.Request, code int, h http.Header) *http.Response {
	if h == nil {
		h = http.Header{}
	}
	if r.Body != nil {
		r.Body.Close()
	}
	return &http.Response{StatusCode: code, Header: h, Request: r,
		Body: io.NopCloser(strings.NewReader("status " + strconv.Itoa(code)))}
}

// quiet returns options with throttling and the budget off and a fake
// clock, so a test isolates the retry decision.
func quiet(c *fakeClock, base http.RoundTripper) Options {
	return Options{
		Transport:   base,
		RetryBudget: -1,
		Throttle:    ThrottleOptions{Disabled: true},
		Now:         c.Now,
		Sleep:       c.Sleep,
	}
}

func get(t *testing.T, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func TestRetriedStatuses(t *testing.T) {
	cases := []struct {
		code     int
		attempts int
	}{
		{200, 1}, {201, 1}, {400, 1}, {401, 1}, {403, 1}, {404, 1}, {409, 1}, {413, 1}, {422, 1},
		{408, 3}, {429, 3}, {500, 3}, {502, 3}, {503, 3}, {504, 3}, {529, 3}, {599, 3},
		{501, 1}, {505, 1},
	}
	for _, tc := range cases {
		t.Run(strconv.Itoa(tc.code), func(t *testing.T) {
			n := 0
			base := rtFunc(func(r *http.Request) (*http.Response, error) {
				n++
				return fakeResp(r, tc.code, nil), nil
			})
			resp, err := New(quiet(newClock(), base)).RoundTrip(get(t, "http://sluice.test/v1/chat/completions"))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if n != tc.attempts {
				t.Fatalf("attempts = %d, want %d", n, tc.attempts)
			}
			if resp.StatusCode != tc.code || string(body) != "status "+strconv.Itoa(tc.code) {
				t.Fatalf("last response = %d %q", resp.StatusCode, body)
			}
		})
	}
}

func TestRetriedErrors(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &net.AddrError{Err: "x"}}
	cases := []struct {
		name     string
		err      error
		attempts int
	}{
		{"dial", refused, 3},
		{"reset", fmt.Errorf("read: %w", syscall.ECONNRESET), 3},
		{"eof", io.EOF, 3},
		{"unexpected eof", io.ErrUnexpectedEOF, 3},
		{"other", errors.New("unsupported protocol scheme"), 1},
		{"canceled", context.Canceled, 1},
		{"deadline", context.DeadlineExceeded, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			base := rtFunc(func(*http.Request) (*http.Response, error) { n++; return nil, tc.err })
			_, err := New(quiet(newClock(), base)).RoundTrip(get(t, "http://sluice.test/"))
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if n != tc.attempts {
				t.Fatalf("attempts = %d, want %d", n, tc.attempts)
			}
		})
	}
}

func TestConnectionRefusedRealNetwork(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	attempts := 0
	o := quiet(newClock(), nil)
	o.Hooks.Attempt = func(*http.Request, int) { attempts++ }
	_, err = New(o).RoundTrip(get(t, "http://"+addr+"/"))
	if err == nil || attempts != 3 {
		t.Fatalf("err = %v, attempts = %d; want an error after 3 attempts", err, attempts)
	}
}

func TestRetryAfterHonoured(t *testing.T) {
	clock := newClock()
	cases := []struct {
		name string
		h    http.Header
		want time.Duration
	}{
		{"ms", http.Header{"Retry-After-Ms": {"1500"}}, 1500 * time.Millisecond},
		{"ms fraction", http.Header{"Retry-After-Ms": {"2.5"}}, 2500 * time.Microsecond},
		{"seconds", http.Header{"Retry-After": {"2"}}, 2 * time.Second},
		{"ms wins", http.Header{"Retry-After-Ms": {"700"}, "Retry-After": {"9"}}, 700 * time.Millisecond},
		{"date", http.Header{"Retry-After": {clock.Now().Add(5 * time.Second).Format(http.TimeFormat)}}, 5 * time.Second},
		{"past date", http.Header{"Retry-After": {clock.Now().Add(-time.Hour).Format(http.TimeFormat)}}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock()
			n := 0
			base := rtFunc(func(r *http.Request) (*http.Response, error) {
				n++
				if n == 1 {
					return fakeResp(r, 429, tc.h.Clone()), nil
				}
				return fakeResp(r, 200, nil), nil
			})
			resp, err := New(quiet(c, base)).RoundTrip(get(t, "http://sluice.test/"))
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("resp=%v err=%v", resp, err)
			}
			if w := c.Waits(); len(w) != 1 || w[0] != tc.want {
				t.Fatalf("waits = %v, want [%v]", w, tc.want)
			}
		})
	}
	t.Run("longer than Cap is passed on, not retried sooner", func(t *testing.T) {
		c := newClock()
		n := 0
		base := rtFunc(func(r *http.Request) (*http.Response, error) {
			n++
			return fakeResp(r, 429, http.Header{"Retry-After": {"120"}}), nil
		})
		resp, err := New(quiet(c, base)).RoundTrip(get(t, "http://sluice.test/"))
		if err != nil || resp.StatusCode != 429 || n != 1 || len(c.Waits()) != 0 {
			t.Fatalf("resp=%v err=%v after %d attempts and waits %v; want the 429 passed on at once", resp, err, n, c.Waits())
		}
	})
	t.Run("invalid falls back to backoff", func(t *testing.T) {
		c := newClock()
		o := quiet(c, rtFunc(func(r *http.Request) (*http.Response, error) {
			return fakeResp(r, 503, http.Header{"Retry-After": {"soon"}}), nil
		}))
		o.MaxAttempts = 2
		o.Rand = func() float64 { return 0.5 }
		New(o).RoundTrip(get(t, "http://sluice.test/"))
		if w := c.Waits(); len(w) != 1 || w[0] < 200*time.Millisecond || w[0] > 300*time.Millisecond {
			t.Fatalf("waits = %v, want ~250ms (half of Base)", w)
		}
	})
}

func TestBackoffBounds(t *testing.T) {
	for _, r := range []struct {
		name string
		f    func() float64
	}{
		{"low", func() float64 { return 0 }},
		{"high", func() float64 { return 0.9999999 }},
		{"seeded", rand.New(rand.NewPCG(1, 2)).Float64},
	} {
		t.Run(r.name, func(t *testing.T) {
			c := newClock()
			o := quiet(c, rtFunc(func(r *http.Request) (*http.Response, error) { return fakeResp(r, 500, nil), nil }))
			o.MaxAttempts = 10
			o.Base = 100 * time.Millisecond
			o.Cap = time.Second
			o.Rand = r.f
			for range 20 {
				resp, _ := New(o).RoundTrip(get(t, "http://sluice.test/"))
				resp.Body.Close()
			}
			w := c.Waits()
			if len(w) != 20*9 {
				t.Fatalf("got %d waits, want %d", len(w), 20*9)
			}
			for i, d := range w {
				n := i%9 + 1
				ceil := min(time.Second, 100*time.Millisecond<<(n-1))
				if d < 0 || d > ceil {
					t.Fatalf("retry %d waited %v, outside [0, %v]", n, d, ceil)
				}
				if r.name == "high" && d < ceil-time.Millisecond {
					t.Fatalf("retry %d waited %v, want ≈ %v", n, d, ceil)
				}
			}
		})
	}
}

func TestDeadlineStopsRetry(t *testing.T) {
	n := 0
	base := rtFunc(func(r *http.Request) (*http.Response, error) {
		n++
		return fakeResp(r, 429, http.Header{"Retry-After": {"10"}}), nil
	})
	o := quiet(newClock(), base)
	o.Now = time.Now // the context deadline is in real time
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := New(o).RoundTrip(get(t, "http://sluice.test/").WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if n != 1 || resp.StatusCode != 429 || string(body) != "status 429" {
		t.Fatalf("attempts=%d status=%d body=%q; want the first 429 returned untouched", n, resp.StatusCode, body)
	}
}

func TestBudgetBoundsRetries(t *testing.T) {
	var sent, retries, exhausted int
	o := Options{
		Transport: rtFunc(func(r *http.Request) (*http.Response, error) { sent++; return fakeResp(r, 503, nil), nil }),
		Throttle:  ThrottleOptions{Disabled: true},
		Sleep:     newClock().Sleep,
		Hooks: Hooks{
			Retry:           func(*http.Request, int, time.Duration, *http.Response, error) { retries++ },
			BudgetExhausted: func(*http.Request, int) { exhausted++ },
		},
	}
	tr := New(o)
	const requests = 2000
	for range requests {
		resp, err := tr.RoundTrip(get(t, "http://sluice.test/"))
		if err != nil || resp.StatusCode != 503 {
			t.Fatalf("resp=%v err=%v", resp, err)
		}
		if b, _ := io.ReadAll(resp.Body); string(b) != "status 503" {
			t.Fatalf("budget-exhausted response body = %q", b)
		}
	}
	limit := int(DefaultRetryBudget*requests) + DefaultBudgetBurst
	if retries > limit || sent-requests != retries {
		t.Fatalf("retries = %d (sent %d), want ≤ %d", retries, sent, limit)
	}
	if retries < int(DefaultRetryBudget*requests)-1 || exhausted == 0 {
		t.Fatalf("retries = %d, exhausted = %d: budget not used as intended", retries, exhausted)
	}
}

func TestThrottleProbability(t *testing.T) {
	c := newClock()
	status := 200
	sent := 0
	var draw float64 = 0.9999999 // only shed when p is ~1
	o := Options{
		Transport:   rtFunc(func(r *http.Request) (*http.Response, error) { sent++; return fakeResp(r, status, nil), nil }),
		MaxAttempts: 1,
		Now:         c.Now,
		Sleep:       c.Sleep,
		Rand:        func() float64 { return draw },
	}
	tr := New(o)
	do := func() (*http.Response, error) {
		resp, err := tr.RoundTrip(get(t, "http://sluice.test/"))
		if resp != nil {
			resp.Body.Close()
		}
		return resp, err
	}
	for range 30 {
		do()
	}
	status = 503
	for range 70 {
		do()
	}
	// 100 requests, 30 accepted: p = (100 − 2·30) / 101.
	if got, want := tr.ThrottleProbability(), 40.0/101; abs(got-want) > 1e-9 {
		t.Fatalf("p = %v, want %v", got, want)
	}
	// Draws below p are shed locally without reaching the server.
	draw = 0.3
	before := sent
	_, err := do()
	var te *ThrottledError
	if !errors.As(err, &te) || sent != before {
		t.Fatalf("err = %v, sent %d→%d; want a local ThrottledError", err, before, sent)
	}
	if !strings.Contains(te.Error(), "refused most recent requests") {
		t.Fatalf("message %q", te.Error())
	}
	// The shed request counted as a request.
	if got, want := tr.ThrottleProbability(), 41.0/102; abs(got-want) > 1e-9 {
		t.Fatalf("p after shedding = %v, want %v", got, want)
	}
	// Draws at or above p go through.
	draw = 0.41
	if _, err := do(); err != nil || sent != before+1 {
		t.Fatalf("err = %v: request with draw above p was not sent", err)
	}
	// After the window the history is forgotten.
	c.Advance(DefaultThrottleWindow + time.Second)
	if p := tr.ThrottleProbability(); p != 0 {
		t.Fatalf("p after window = %v, want 0", p)
	}
}

func TestThrottleReducesLoadOnOverloadedServer(t *testing.T) {
	run := func(disabled bool) int {
		var mu sync.Mutex
		hits := 0
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			hits++
			ok := hits%5 == 0 // accepts one request in five
			mu.Unlock()
			if ok {
				w.WriteHeader(200)
				return
			}
			w.WriteHeader(503)
		}))
		defer srv.Close()
		c := newClock()
		tr := New(Options{
			MaxAttempts: 1,
			Throttle:    ThrottleOptions{Disabled: disabled},
			Rand:        rand.New(rand.NewPCG(7, 7)).Float64,
			Now:         c.Now,
			Sleep:       c.Sleep,
		})
		defer tr.CloseIdleConnections()
		hc := &http.Client{Transport: tr}
		for range 300 {
			resp, err := hc.Get(srv.URL)
			if err == nil {
				resp.Body.Close()
			}
		}
		mu.Lock()
		defer mu.Unlock()
		return hits
	}
	without, with := run(true), run(false)
	if without != 300 {
		t.Fatalf("without throttling the server saw %d requests, want 300", without)
	}
	if with == 0 || with > without/2 {
		t.Fatalf("with throttling the server saw %d of %d requests; want a large reduction", with, without)
	}
	t.Logf("server saw %d/300 requests with throttling", with)
}

func TestIdempotencyKey(t *testing.T) {
	var mu sync.Mutex
	keys := map[string]int{}
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		keys[r.Header.Get(HeaderIdempotencyKey)]++
		n++
		if n%3 != 0 {
			w.WriteHeader(503)
		}
	}))
	defer srv.Close()
	tr := New(quiet(newClock(), nil))
	defer tr.CloseIdleConnections()
	req := get(t, srv.URL)
	for range 2 {
		resp, err := tr.RoundTrip(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("resp=%v err=%v", resp, err)
		}
		resp.Body.Close()
	}
	if req.Header.Get(HeaderIdempotencyKey) != "" {
		t.Fatal("caller's request was modified")
	}
	mu.Lock()
	if len(keys) != 2 {
		t.Fatalf("keys = %v, want 2 distinct keys with 3 attempts each", keys)
	}
	for k, c := range keys {
		if len(k) != 32 || c != 3 {
			t.Fatalf("keys = %v, want 2 distinct 32-hex keys with 3 attempts each", keys)
		}
	}
	clear(keys)
	mu.Unlock()

	req.Header.Set(HeaderIdempotencyKey, "caller-key")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	if keys["caller-key"] != 3 || len(keys) != 1 {
		t.Fatalf("keys = %v, want the caller's key kept across retries", keys)
	}
}

func TestTimeoutHeader(t *testing.T) {
	c := newClock()
	var got []string
	base := rtFunc(func(r *http.Request) (*http.Response, error) {
		got = append(got, r.Header.Get(HeaderTimeout))
		return fakeResp(r, 503, http.Header{"Retry-After-Ms": {"1000"}}), nil
	})
	o := quiet(c, base)
	ctx, cancel := context.WithDeadline(context.Background(), c.Now().Add(10*time.Second))
	defer cancel()
	resp, err := New(o).RoundTrip(get(t, "http://sluice.test/").WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if want := []string{"10000ms", "9000ms", "8000ms"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s = %v, want %v", HeaderTimeout, got, want)
	}
	got = nil
	resp, _ = New(o).RoundTrip(get(t, "http://sluice.test/"))
	resp.Body.Close()
	if len(got) != 3 || got[0] != "" {
		t.Fatalf("without a deadline %s = %q, want unset", HeaderTimeout, got)
	}
}

func TestBodyReplayed(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		n := len(bodies)
		mu.Unlock()
		if n < 3 {
			w.WriteHeader(500)
		}
	}))
	defer srv.Close()
	tr := New(quiet(newClock(), nil))
	defer tr.CloseIdleConnections()
	payload := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(payload))
	resp, err := tr.RoundTrip(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("resp=%v err=%v", resp, err)
	}
	resp.Body.Close()
	mu.Lock()
	if len(bodies) != 3 || bodies[0] != payload || bodies[1] != payload || bodies[2] != payload {
		t.Fatalf("bodies = %q", bodies)
	}
	bodies = nil
	mu.Unlock()

	// A body without GetBody cannot be replayed: one attempt only.
	req, _ = http.NewRequest(http.MethodPost, srv.URL, io.NopCloser(bytes.NewBufferString(payload)))
	req.GetBody = nil
	resp, err = tr.RoundTrip(req)
	if err != nil || resp.StatusCode != 500 {
		t.Fatalf("resp=%v err=%v", resp, err)
	}
	resp.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 1 {
		t.Fatalf("non-replayable body sent %d times, want 1", len(bodies))
	}
}

func TestCancelStopsWait(t *testing.T) {
	base := rtFunc(func(r *http.Request) (*http.Response, error) {
		return fakeResp(r, 429, http.Header{"Retry-After": {"25"}}), nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	retrying := make(chan struct{})
	tr := New(Options{
		Transport: base,
		Hooks:     Hooks{Retry: func(*http.Request, int, time.Duration, *http.Response, error) { close(retrying) }},
	}) // real Sleep
	go func() { <-retrying; cancel() }()
	start := time.Now()
	resp, err := tr.RoundTrip(get(t, "http://sluice.test/").WithContext(ctx))
	if !errors.Is(err, context.Canceled) || resp != nil {
		t.Fatalf("resp=%v err=%v, want context.Canceled", resp, err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("cancel took %v", d)
	}
}

func TestStreamNotRetriedAfterStart(t *testing.T) {
	var mu sync.Mutex
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		io.WriteString(w, "data: {\"delta\":\"a\"}\n\n")
		w.(http.Flusher).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close() // the stream breaks mid-way
		}
	}))
	defer srv.Close()
	tr := New(quiet(newClock(), nil))
	defer tr.CloseIdleConnections()
	resp, err := tr.RoundTrip(get(t, srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	_, rerr := io.ReadAll(resp.Body)
	resp.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	if rerr == nil || hits != 1 {
		t.Fatalf("read err = %v, hits = %d; want a broken stream surfaced, not retried", rerr, hits)
	}
}

func TestConcurrentUse(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("i") == "0" {
			w.WriteHeader(503)
		}
	}))
	defer srv.Close()
	tr := New(Options{Sleep: newClock().Sleep})
	defer tr.CloseIdleConnections()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 20 {
				resp, err := tr.RoundTrip(get(t, srv.URL+"?i="+strconv.Itoa(i%2)))
				if err == nil {
					resp.Body.Close()
				}
			}
		})
	}
	wg.Wait()
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}
