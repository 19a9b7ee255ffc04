package loadgen

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// extraCounters are the gateway's counters of calls beyond one per
// attempt: hedges fired, retries, rescues and synthetic probes. Their sum
// over a run is the report's "extra calls", the same column the
// simulator fills from its engine.
var extraCounters = map[string]func(labels map[string]string) bool{
	"sluice_hedges_total":         func(l map[string]string) bool { return l["result"] == "fired" },
	"sluice_retries_total":        func(map[string]string) bool { return true },
	"sluice_rescues_total":        func(map[string]string) bool { return true },
	"sluice_breaker_probes_total": func(map[string]string) bool { return true },
}

// scrapeTimeout bounds one read of the gateway's metrics, so a gateway
// that stops answering cannot hold the report back.
const scrapeTimeout = 5 * time.Second

// extraScrape is one reading: the extra calls so far, when the gateway
// process started (so a restart between readings, which resets its
// counters, is noticed), and its sluice_time_scale (0 when it reports
// none).
type extraScrape struct {
	calls     float64
	started   float64
	timeScale float64
}

// extraSince is the growth of the extra calls from before to after, or an
// error when the counters cannot be compared.
func extraSince(before, after extraScrape) (int, error) {
	if after.started != before.started || after.calls < before.calls {
		return 0, errors.New("the gateway restarted during the run, and its counters with it")
	}
	return int(after.calls - before.calls), nil
}

// scrapeExtra reads the gateway's Prometheus endpoint and sums its extra
// calls so far.
func scrapeExtra(ctx context.Context, url string) (extraScrape, error) {
	ctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
	defer cancel()
	var out extraScrape
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return out, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return out, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return out, fmt.Errorf("%s is not Prometheus text: %w", url, err)
	}
	if f := families["process_start_time_seconds"]; f != nil && len(f.GetMetric()) > 0 {
		out.started = f.GetMetric()[0].GetGauge().GetValue()
	}
	if f := families["sluice_time_scale"]; f != nil && len(f.GetMetric()) > 0 {
		out.timeScale = f.GetMetric()[0].GetGauge().GetValue()
	}
	for name, keep := range extraCounters {
		f := families[name]
		if f == nil {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := make(map[string]string, len(m.GetLabel()))
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if keep(labels) {
				out.calls += m.GetCounter().GetValue()
			}
		}
	}
	return out, nil
}
