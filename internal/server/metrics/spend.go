package metrics

import "github.com/prometheus/client_golang/prometheus"

// Spend is one spend limit's state: what is spent of it in its current
// window (reservations of requests in flight included) and the limit,
// in dollars.
type Spend struct {
	Scope, Name, Window string
	Spent, Limit        float64
}

var (
	spendDesc = prometheus.NewDesc("sluice_spend_dollars",
		"Dollars spent in a spend limit's current window, reservations of requests in flight included, by scope (key, team), name and window (daily, monthly, rolling_<span>); the store's figure, the fleet's with store:.",
		[]string{"scope", "name", "window"}, nil)
	spendLimitDesc = prometheus.NewDesc("sluice_spend_limit_dollars",
		"A spend limit, in dollars, by scope, name and window.", []string{"scope", "name", "window"}, nil)
)

// spendCollector exports the spend limits at scrape time.
type spendCollector struct{ m *Metrics }

func (c spendCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- spendDesc
	ch <- spendLimitDesc
}

func (c spendCollector) Collect(ch chan<- prometheus.Metric) {
	src := c.m.src.Load()
	if src == nil || src.Spend == nil {
		return
	}
	for _, s := range src.Spend() {
		ch <- prometheus.MustNewConstMetric(spendDesc, prometheus.GaugeValue, s.Spent, s.Scope, s.Name, s.Window)
		ch <- prometheus.MustNewConstMetric(spendLimitDesc, prometheus.GaugeValue, s.Limit, s.Scope, s.Name, s.Window)
	}
}
