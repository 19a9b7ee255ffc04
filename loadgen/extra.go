package loadgen

import (
	"context"
	"fmt"
	"net/http"

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

// scrapeExtra reads the gateway's Prometheus endpoint and sums its extra
// calls so far.
func scrapeExtra(ctx context.Context, url string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return 0, fmt.Errorf("%s is not Prometheus text: %w", url, err)
	}
	var sum float64
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
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum, nil
}
