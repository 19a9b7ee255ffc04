package gateway

import (
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/core/pool"
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

// startScrapers starts one scraper per replica that has a metrics URL.
// The engine decides with what they bring (pool.Pool); they only fetch.
func (g *Gateway) startScrapers(cfg *config.Config) {
	for s, p := range g.byScope {
		every := cfg.Providers[s].Pool.ScrapeInterval.D()
		for i, r := range p.replicas {
			if r.metricsURL != "" && every > 0 {
				go g.scrape(s, i, every)
			}
		}
	}
}

// scrape reads replica i of scope s's metrics every interval until the
// gateway closes. A scrape that fails or takes longer than the interval
// is counted and otherwise ignored: the pool drains a replica whose
// metrics have been silent for its stale_after.
func (g *Gateway) scrape(s, i int, every time.Duration) {
	p := g.byScope[s]
	r := p.replicas[i]
	client := &http.Client{Transport: p.rt, Timeout: every}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		err := g.scrapeOnce(client, s, i, r.metricsURL)
		result := "ok"
		if err != nil {
			result = "error"
			g.log.Debug("replica metrics", "provider", p.name, "replica", r.name, "error", err.Error())
		}
		g.metrics.ReplicaScrapes.WithLabelValues(p.name, r.name, result).Inc()
		g.reportDrains(s)
		select {
		case <-g.scrapeCtx.Done():
			return
		case <-t.C:
		}
	}
}

// scrapeOnce fetches and reads one metrics page and hands it to the
// engine.
func (g *Gateway) scrapeOnce(client *http.Client, s, i int, url string) error {
	req, err := http.NewRequestWithContext(g.scrapeCtx, http.MethodGet, url, nil)
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
	g.runner.Observe(s, i, l)
	return nil
}

// reportDrains sets the drained gauge of scope s's replicas.
func (g *Gateway) reportDrains(s int) {
	p := g.byScope[s]
	for i, st := range g.runner.PoolStats(s) {
		if i >= len(p.replicas) {
			break
		}
		for _, d := range []pool.Drain{pool.Stale, pool.Queued, pool.Tripped} {
			v := 0.0
			if st.Drain == d {
				v = 1
			}
			g.metrics.ReplicaDrained.WithLabelValues(p.name, p.replicas[i].name, d.String()).Set(v)
		}
	}
}
