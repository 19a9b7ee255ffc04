package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The timeline's peak queue columns are what waits at one instant: in
// the gateway's admission queue (its sluice_queue_depth, every class) and
// in the upstream server's own waiting queue (a sluice mock's or vLLM's
// "waiting"). The simulator reads both off its models; a real run polls
// them.

// DefaultQueuePoll is how often, in real time, sluice load samples the
// queues.
const DefaultQueuePoll = 250 * time.Millisecond

// pollTimeout bounds one sample, so a process that stops answering costs
// samples, not the run.
const pollTimeout = time.Second

// startQueuePoll samples the queues into t's timeline every period, the
// first at once, until the returned stop is called (which waits for the
// poller to finish, so that one sample at least is taken). metrics is the
// gateway's /metrics URL and stats the upstreams' /stats URLs; with
// neither, or no period, nothing is polled. A sample any source fails to
// give is skipped: a queue read partly would understate the peak.
func startQueuePoll(ctx context.Context, period time.Duration, metrics string, stats []string, t *tally) (stop func()) {
	if period <= 0 || (metrics == "" && len(stats) == 0) {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			at := time.Now()
			if gw, up, err := pollQueues(ctx, metrics, stats); err == nil {
				t.queue(at, gw, up)
			}
			select {
			case <-tick.C:
			case <-ctx.Done():
				return
			}
		}
	})
	return func() {
		cancel()
		wg.Wait()
	}
}

// pollQueues reads the gateway's queue (0 without metrics) and the sum
// of the upstreams' waiting queues.
func pollQueues(ctx context.Context, metrics string, stats []string) (gateway, upstream int, err error) {
	ctx, cancel := context.WithTimeout(ctx, pollTimeout)
	defer cancel()
	if metrics != "" {
		if gateway, err = gatewayQueue(ctx, metrics); err != nil {
			return 0, 0, err
		}
	}
	for _, u := range stats {
		n, err := upstreamWaiting(ctx, u)
		if err != nil {
			return 0, 0, err
		}
		upstream += n
	}
	return gateway, upstream, nil
}

// get fetches url into a body for read, which must consume it.
func get(ctx context.Context, url string, read func(io.Reader) error) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return read(io.LimitReader(resp.Body, 16<<20))
}

// gatewayQueue is the gateway's sluice_queue_depth, summed over classes.
func gatewayQueue(ctx context.Context, url string) (int, error) {
	var sum float64
	err := get(ctx, url, func(body io.Reader) error {
		parser := expfmt.NewTextParser(model.UTF8Validation)
		families, err := parser.TextToMetricFamilies(body)
		if err != nil {
			return err
		}
		f := families["sluice_queue_depth"]
		if f == nil {
			return errors.New("no sluice_queue_depth")
		}
		for _, m := range f.GetMetric() {
			sum += m.GetGauge().GetValue()
		}
		return nil
	})
	return int(math.Round(sum)), err
}

// upstreamWaiting is an upstream's /stats "waiting".
func upstreamWaiting(ctx context.Context, url string) (int, error) {
	var st struct {
		Waiting *int `json:"waiting"`
	}
	err := get(ctx, url, func(body io.Reader) error { return json.NewDecoder(body).Decode(&st) })
	if err == nil && st.Waiting == nil {
		err = fmt.Errorf("%s has no \"waiting\"", url)
	}
	if err != nil {
		return 0, err
	}
	return *st.Waiting, nil
}

// statsURLs checks --upstream-stats URLs: each flag may hold several,
// comma-separated.
func statsURLs(in []string) ([]string, error) {
	var out []string
	for _, s := range in {
		for u := range strings.SplitSeq(s, ",") {
			u = strings.TrimSpace(u)
			if u == "" {
				continue
			}
			p, err := url.Parse(u)
			if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
				return nil, fmt.Errorf("upstream stats %q: want an http(s) URL such as http://127.0.0.1:8000/stats", u)
			}
			out = append(out, u)
		}
	}
	return out, nil
}
