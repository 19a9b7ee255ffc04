package gateway

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/core/pool"
	"github.com/sluice-gw/sluice/internal/server/metrics"
	"github.com/sluice-gw/sluice/internal/server/runner"
	"github.com/sluice-gw/sluice/internal/server/scrape"
)

// maxMetricsPage bounds what a replica's metrics page may make the
// gateway read: vLLM's is tens of kilobytes.
const maxMetricsPage = 4 << 20

// replicaEndpoint is one server of a pooled provider.
type replicaEndpoint struct {
	name       string
	baseURL    string
	metricsURL string
}

// scrapers read the pooled providers' replicas' metrics pages for the
// engine (pool.Pool), one goroutine per replica that has a metrics URL,
// until stop.
type scrapers struct {
	byScope []*provider // by admission scope index
	runner  *runner.Runner
	metrics *metrics.Metrics
	log     *slog.Logger
	// ctx ends the scrapers; stop cancels it.
	ctx  context.Context
	stop context.CancelFunc
}

// startScrapers starts one scraper per replica that has a metrics URL.
// The engine decides with what they bring (pool.Pool); they only fetch.
func startScrapers(cfg *config.Config, byScope []*provider, rn *runner.Runner, m *metrics.Metrics, log *slog.Logger) *scrapers {
	sc := &scrapers{byScope: byScope, runner: rn, metrics: m, log: log}
	sc.ctx, sc.stop = context.WithCancel(context.Background())
	for s, p := range sc.byScope {
		every := cfg.Providers[s].Pool.ScrapeInterval.D()
		for i, r := range p.replicas {
			if r.metricsURL != "" && every > 0 {
				go sc.scrape(s, i, every)
			}
		}
	}
	return sc
}

// scrape reads replica i of scope s's metrics every interval until the
// gateway closes. A scrape that fails or takes longer than the interval
// is counted and otherwise ignored: the pool drains a replica whose
// metrics have been silent for its stale_after.
func (sc *scrapers) scrape(s, i int, every time.Duration) {
	p := sc.byScope[s]
	r := p.replicas[i]
	client := &http.Client{Transport: p.rt, Timeout: every}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		err := sc.scrapeOnce(client, s, i, r.metricsURL)
		result := "ok"
		if err != nil {
			result = "error"
			sc.log.Debug("replica metrics", "provider", p.name, "replica", r.name, "error", err.Error())
		}
		sc.metrics.ReplicaScrapes.WithLabelValues(p.name, r.name, result).Inc()
		sc.reportDrains(s)
		select {
		case <-sc.ctx.Done():
			return
		case <-t.C:
		}
	}
}

// scrapeOnce fetches and reads one metrics page and hands it to the
// engine.
func (sc *scrapers) scrapeOnce(client *http.Client, s, i int, url string) error {
	req, err := http.NewRequestWithContext(sc.ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", userAgent)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	l, err := scrape.ParseMetrics(io.LimitReader(resp.Body, maxMetricsPage))
	if err != nil {
		return err
	}
	sc.runner.Observe(s, i, l)
	return nil
}

// reportDrains sets the drained gauge of scope s's replicas.
func (sc *scrapers) reportDrains(s int) {
	p := sc.byScope[s]
	for i, st := range sc.runner.PoolStats(s) {
		if i >= len(p.replicas) {
			break
		}
		for _, d := range []pool.Drain{pool.Stale, pool.Queued, pool.Tripped} {
			v := 0.0
			if st.Drain == d {
				v = 1
			}
			sc.metrics.ReplicaDrained.WithLabelValues(p.name, p.replicas[i].name, d.String()).Set(v)
		}
	}
}
