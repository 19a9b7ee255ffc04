package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// soakKey is one client key of the soak and its share of the traffic.
type soakKey struct {
	name, secret string
	weight       int
}

// soakTraffic sends the soak's mixed traffic, open loop: at a steady
// rate, each request picks a replica in turn, a dialect (OpenAI chat or
// Anthropic messages), streamed or whole, and a key by weight, and reads
// its answer to the end. An open loop keeps the offered rate steady
// through brownouts, as real clients do; the cap on requests in flight
// keeps a stalled fleet from growing the driver without bound (an
// arrival past it is counted as skipped, never queued).
type soakTraffic struct {
	targets     []string // replica client addresses
	keys        []soakKey
	rate        float64 // requests per second
	maxInFlight int
	timeout     time.Duration // a client's patience
	client      *http.Client

	mu       sync.Mutex
	outcomes map[string]int // outcome → count
	rng      *rand.Rand
}

func newSoakTraffic(targets []string, keys []soakKey, rate float64, seed uint64) *soakTraffic {
	return &soakTraffic{
		targets:     targets,
		keys:        keys,
		rate:        rate,
		maxInFlight: 400,
		timeout:     30 * time.Second,
		client:      &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: time.Minute}},
		outcomes:    map[string]int{},
		rng:         rand.New(rand.NewPCG(seed, 0x50a4)),
	}
}

// run sends requests until ctx ends, then waits for those in flight.
// Arrivals are due by the clock, not counted off a ticker's ticks: a
// ticker drops the ticks its reader misses, so a driver starved of CPU
// for a moment (the soak shares a busy machine, niced) would send less
// than its rate; here it sends what it owes when it runs again.
func (s *soakTraffic) run(ctx context.Context) {
	sem := make(chan struct{}, s.maxInFlight)
	var wg sync.WaitGroup
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	began := time.Now()
	for sent := 0; ; {
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case <-tick.C:
		}
		for due := int(time.Since(began).Seconds() * s.rate); sent < due; sent++ {
			req := s.draw(sent)
			select {
			case sem <- struct{}{}:
			default:
				s.count("skipped (driver at its in-flight cap)")
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				s.count(s.send(req))
			}()
		}
	}
}

// soakRequest is one drawn request.
type soakRequest struct {
	target    string
	anthropic bool
	stream    bool
	key       soakKey
	maxTokens int
}

// draw picks the i-th request's shape. The random source is the
// driver's own, drawn from one goroutine, so a seed repeats the mix.
func (s *soakTraffic) draw(i int) soakRequest {
	total := 0
	for _, k := range s.keys {
		total += k.weight
	}
	pick := s.rng.IntN(total)
	var key soakKey
	for _, k := range s.keys {
		if pick < k.weight {
			key = k
			break
		}
		pick -= k.weight
	}
	return soakRequest{
		target:    s.targets[i%len(s.targets)],
		anthropic: s.rng.IntN(2) == 0,
		stream:    s.rng.IntN(2) == 0,
		key:       key,
		maxTokens: 8 + s.rng.IntN(57),
	}
}

// send makes one request and names its outcome: its status, and for a
// 200 whether the answer was whole (a parsed body, or a stream that
// reached its dialect's final event).
func (s *soakTraffic) send(r soakRequest) string {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	// Both APIs take this body as it is: a model, max_tokens (which
	// Anthropic requires), stream, and one user message.
	body := fmt.Sprintf(`{"model":"chat","stream":%t,"max_tokens":%d,"messages":[{"role":"user","content":"soak %s: say something long enough to stream"}]}`,
		r.stream, r.maxTokens, r.key.name)
	dialect, path := "openai", "/v1/chat/completions"
	if r.anthropic {
		dialect, path = "anthropic", "/v1/messages"
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+r.target+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if r.anthropic {
		req.Header.Set("anthropic-version", "2023-06-01")
		req.Header.Set("x-api-key", r.key.secret)
	} else {
		req.Header.Set("Authorization", "Bearer "+r.key.secret)
	}
	kind := "whole"
	if r.stream {
		kind = "stream"
	}
	resp, err := s.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Sprintf("%s %s: timed out", dialect, kind)
		}
		return fmt.Sprintf("%s %s: transport error", dialect, kind)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, resp.Body)
		return fmt.Sprintf("%s %s: %d", dialect, kind, resp.StatusCode)
	}
	if !whole(resp.Body, r.stream, r.anthropic) {
		if ctx.Err() != nil {
			return fmt.Sprintf("%s %s: 200, timed out mid-answer", dialect, kind)
		}
		return fmt.Sprintf("%s %s: 200, incomplete", dialect, kind)
	}
	return fmt.Sprintf("%s %s: 200", dialect, kind)
}

// whole reads an answer to its end and reports whether it was whole: a
// JSON object, or a stream that reached its final event ([DONE] for
// OpenAI, message_stop for Anthropic) with no error event before it.
func whole(body io.Reader, stream, anthropic bool) bool {
	if !stream {
		var v map[string]any
		return json.NewDecoder(body).Decode(&v) == nil && v["error"] == nil
	}
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, 1<<20)
	done := false
	for sc.Scan() {
		l := sc.Text()
		switch {
		case l == "event: error", strings.HasPrefix(l, `data: {"error"`):
			return false
		case !anthropic && l == "data: [DONE]", anthropic && l == "event: message_stop":
			done = true
		}
	}
	return done && sc.Err() == nil
}

func (s *soakTraffic) count(outcome string) {
	s.mu.Lock()
	s.outcomes[outcome]++
	s.mu.Unlock()
}

// snapshot returns the outcomes so far, sorted, and their total.
func (s *soakTraffic) snapshot() (lines []string, total int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, n := range s.outcomes {
		lines = append(lines, fmt.Sprintf("%-45s %8d", k, n))
		total += n
	}
	sort.Strings(lines)
	return lines, total
}
