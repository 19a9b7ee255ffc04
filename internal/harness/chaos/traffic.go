package chaos

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// tally counts what the clients of one fault saw.
type tally struct {
	sent     atomic.Int64
	verdicts [vNone + 1]atomic.Int64

	mu       sync.Mutex
	examples []string            // the first few failed answers, for the report
	errors   map[string]int64    // the errors and cuts, by status or kind
	answers  map[string][]string // Idempotency-Key → ids of its successful answers
}

// record counts one outcome.
func (t *tally) record(c call, o outcome) {
	t.verdicts[o.verdict].Add(1)
	t.mu.Lock()
	defer t.mu.Unlock()
	if (o.verdict == vMalformed || o.verdict == vNone) && len(t.examples) < 3 {
		t.examples = append(t.examples, fmt.Sprintf("%s stream=%v: %s", c.dialect, c.stream, o.detail))
	}
	if o.verdict == vError || o.verdict == vCut {
		if t.errors == nil {
			t.errors = map[string]int64{}
		}
		t.errors[o.kind()]++
	}
	if c.idemKey != "" && o.verdict == vOK && o.id != "" {
		if t.answers == nil {
			t.answers = map[string][]string{}
		}
		t.answers[c.idemKey] = append(t.answers[c.idemKey], o.id)
	}
}

func (t *tally) count(v verdict) int64 { return t.verdicts[v].Load() }

// errorKinds lists the errors and cuts by kind, most frequent first.
func (t *tally) errorKinds() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	kinds := make([]string, 0, len(t.errors))
	for k := range t.errors {
		kinds = append(kinds, k)
	}
	slices.SortFunc(kinds, func(a, b string) int { return cmp.Or(cmp.Compare(t.errors[b], t.errors[a]), cmp.Compare(a, b)) })
	for i, k := range kinds {
		kinds[i] = fmt.Sprintf("%d %s", t.errors[k], k)
	}
	return strings.Join(kinds, ", ")
}

// answered is every request that got a status line back.
func (t *tally) answered() int64 {
	return t.sent.Load() - t.count(vNone)
}

// doubleAnswers counts idempotency keys answered by more than one
// generation: two successful answers with different ids.
func (t *tally) doubleAnswers() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, ids := range t.answers {
		for _, id := range ids[1:] {
			if id != ids[0] {
				n++
				break
			}
		}
	}
	return n
}

// client sends calls to the run's gateway and tallies them.
type client struct {
	r      *run
	hc     *http.Client
	listen string
	seq    atomic.Int64
}

// newClient is a client pool sized for n concurrent callers.
func (r *run) newClient(n int) *client {
	c := &client{r: r, hc: newHTTPClient(n), listen: r.gw.listen}
	r.clients = append(r.clients, c)
	return c
}

// send makes one call and records it. Every fourth call that carries
// no Idempotency-Key of its own gets one, and a twin with the same key
// sent at the same time: the gateway must answer both from one
// generation, or refuse one, never generate twice.
func (c *client) send(ctx context.Context, k call) {
	n := c.seq.Add(1)
	if k.idemKey == "" && n%4 == 0 && k.vanishAfter == 0 {
		k.idemKey = fmt.Sprintf("chaos-%d-%d", time.Now().UnixNano(), n)
		var wg sync.WaitGroup
		wg.Go(func() { c.one(ctx, k) })
		c.one(ctx, k)
		wg.Wait()
		return
	}
	c.one(ctx, k)
}

func (c *client) one(ctx context.Context, k call) {
	c.r.tally.sent.Add(1)
	c.r.tally.record(k, do(ctx, c.hc, c.listen, k))
}

// closedLoop runs workers callers, each sending its next call as soon as
// the last one ended, until d has passed. next picks worker w's call.
func (c *client) closedLoop(workers int, d time.Duration, next func(w int, rng *rand.Rand) call) {
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for time.Now().Before(deadline) {
				c.send(context.Background(), next(w, rng))
			}
		})
	}
	wg.Wait()
}

// openLoop sends rps calls a second for d whatever the answers take, as
// independent users do; each call is its own goroutine.
func (c *client) openLoop(rps float64, d time.Duration, next func(i int, rng *rand.Rand) call) {
	var wg sync.WaitGroup
	gap := time.Duration(float64(time.Second) / rps)
	start := time.Now()
	for i := 0; ; i++ {
		at := start.Add(time.Duration(i) * gap)
		if at.Sub(start) >= d {
			break
		}
		time.Sleep(time.Until(at))
		rng := rand.New(rand.NewPCG(uint64(i), 11))
		wg.Go(func() { c.send(context.Background(), next(i, rng)) })
	}
	wg.Wait()
}

// mixed is the traffic most faults run under: both dialects, streamed
// and whole, short replies.
func mixed(model string, tokens int) func(int, *rand.Rand) call {
	return func(i int, rng *rand.Rand) call {
		return call{dialect: dialectOf(rng.IntN(2)), stream: rng.IntN(2) == 0, model: model, tokens: tokens}
	}
}
