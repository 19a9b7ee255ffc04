package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/server/dashboard"
	"github.com/sluice-gw/sluice/internal/server/fleetstore"
	"github.com/sluice-gw/sluice/internal/server/usage"
)

// Usage records (docs/USAGE.md): every upstream call the ledger
// records as billed (ledger.go) is added, with the same figures, to the
// usage records, per key, team, client-facing model, upstream model
// (the call's own) and UTC day. The recorder belongs to the Host, so it
// outlives reloads; it keeps the records in the store (store:), else in
// state.dir, else in memory only.

// usageBook is where a gateway adds its calls to the usage records:
// the Host's recorder, and the gateway's clock for the day.
type usageBook struct {
	rec *usage.Recorder
	now func() time.Time
}

// record adds call r of x, which served model, to the usage records:
// to the row of r's upstream model, as one call, and as x's request
// when r's answer was the client's.
func (b *usageBook) record(x *exchange, model string, r *callRecord) {
	row := usage.Row{Key: "-", Team: "-", Model: model, Upstream: r.upstream}
	if x.key != nil {
		row.Key, row.Team = x.key.name, x.key.tenant
	}
	c := usage.Counts{Calls: 1, Input: r.use.Input, CachedInput: r.use.CachedInput, Output: r.use.Output, Cost: int64(r.cost)}
	if r.answer {
		c.Requests = 1
	}
	b.rec.Add(b.now(), row, c)
}

// Usage is the gateway's usage recorder.
func (g *Gateway) Usage() *usage.Recorder { return g.usage.rec }

// NewUsageRecorder returns the usage recorder cfg asks for: in its
// store (store:, under fleet.prefix), else in a file per day under
// state.dir/usage, else in memory only, which it logs. The recorder's
// Run flushes it (a Host runs it while it serves).
func NewUsageRecorder(cfg *config.Config, log *slog.Logger) (*usage.Recorder, error) {
	o := usage.Options{Retention: int(cfg.Usage.RetentionDays()), Log: log, OnFlush: func(err error) {
		if err != nil {
			usageFlushErrors.Inc()
		}
	}}
	switch {
	case cfg.Store != "":
		rdb, err := fleetstore.NewClientURL(cfg.Store)
		if err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		prefix := cfg.Fleet.Prefix
		if prefix == "" {
			prefix = fleetstore.DefaultPrefix
		}
		o.Store = usage.NewRedisStore(rdb, prefix, o.Retention)
	case cfg.State.Dir != "":
		s, err := usage.NewFileStore(filepath.Join(cfg.State.Dir, "usage"))
		if err != nil {
			return nil, err
		}
		o.Store = s
	default:
		o.Store = usage.NewMemoryStore()
		log.Warn("usage records are kept in memory only, and lost at exit; set store: or state.dir to keep them (docs/USAGE.md)")
	}
	return usage.NewRecorder(o), nil
}

// startUsage flushes the usage records until the host shuts down.
// REQUIRES: h.mu held.
func (h *Host) startUsage() {
	if h.usageStop == nil {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		h.usageStop = func() { cancel(); <-done }
		go func() {
			defer close(done)
			h.usage.Run(ctx)
		}()
	}
}

// dashboardSpenders is the day's top spenders for the dashboard.
func dashboardSpenders(u *usage.Recorder) []dashboard.Spender {
	top := u.Top()
	out := make([]dashboard.Spender, len(top))
	for i, s := range top {
		out[i] = dashboard.Spender{Key: s.Key, Team: s.Team, Requests: s.Requests, CostMicros: s.Cost}
	}
	return out
}

// usageFlushErrors counts failed flushes of every recorder in the
// process (registered with each host's registry by usageMetrics).
var usageFlushErrors = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "sluice_usage_flush_errors_total",
	Help: "Flushes of the usage records the store refused or did not answer; the records are kept and retried (docs/USAGE.md).",
})

// usageMetrics registers the usage recorder's gauges with reg: the rows
// waiting to be flushed, the requests not recorded for want of room,
// and the failed flushes.
func usageMetrics(reg prometheus.Registerer, u *usage.Recorder) {
	for _, c := range []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sluice_usage_pending_rows",
			Help: "Usage rows (day, key, team, model, upstream model) waiting to be flushed to the store, a failed flush's included."},
			func() float64 { return float64(u.Pending()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "sluice_usage_dropped_total",
			Help: "Upstream calls not added to the usage records because the rows waiting for the store reached their bound (docs/USAGE.md)."},
			func() float64 { return float64(u.Dropped()) }),
		usageFlushErrors,
	} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				panic(err)
			}
		}
	}
}
