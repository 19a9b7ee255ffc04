package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/server/dashboard"
	"github.com/sluice-gw/sluice/internal/server/fleetstore"
	"github.com/sluice-gw/sluice/internal/server/metrics"
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
// store (store:, under fleet.prefix; this replica's own records kept
// too, in state.dir/usage when state.dir is set, else in memory, to
// write back if Redis loses them), else in a file per day under
// state.dir/usage, else in memory only, which it logs. The recorder's
// Run flushes it (a Host runs it while it serves).
func NewUsageRecorder(cfg *config.Config, log *slog.Logger) (*usage.Recorder, error) {
	return newUsageRecorder(cfg, log, nil)
}

// newUsageRecorder is NewUsageRecorder, counting the losses of Redis's
// data the usage store finds in m (sluice_fleet_store_losses_total
// {seen_by="usage"}) when m is set.
func newUsageRecorder(cfg *config.Config, log *slog.Logger, m *metrics.Metrics) (*usage.Recorder, error) {
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
		ro := usage.RedisOptions{Prefix: prefix, Retention: o.Retention, Name: cfg.Fleet.ID, Log: log}
		if ro.Name == "" {
			host, _ := os.Hostname()
			ro.Name = fmt.Sprintf("%s-%d", host, os.Getpid())
		}
		if cfg.State.Dir != "" {
			ro.Dir = filepath.Join(cfg.State.Dir, "usage")
		}
		if m != nil {
			ro.OnLoss = func(string, string) { m.FleetStoreLosses.WithLabelValues("usage").Inc() }
		}
		s, err := usage.OpenRedisStore(rdb, ro)
		if err != nil {
			rdb.Close()
			return nil, err
		}
		o.Store = s
		if ro.Dir == "" {
			log.Info("usage records: this replica keeps what it wrote to the store in memory, to write back if Redis loses its data; a restart forgets it, and then such a loss leaves the export marked incomplete for this replica's days; set state.dir to keep it on disk (docs/USAGE.md)")
		}
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
// the failed flushes, and, with a shared store, the days it may lack
// records of.
func usageMetrics(reg prometheus.Registerer, u *usage.Recorder) {
	cs := []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sluice_usage_pending_rows",
			Help: "Usage rows (day, key, team, model, upstream model) waiting to be flushed to the store, a failed flush's included."},
			func() float64 { return float64(u.Pending()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "sluice_usage_dropped_total",
			Help: "Upstream calls not added to the usage records because the rows waiting for the store reached their bound (docs/USAGE.md)."},
			func() float64 { return float64(u.Dropped()) }),
		usageFlushErrors,
	}
	if rs, ok := u.Store().(*usage.RedisStore); ok {
		cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sluice_usage_incomplete_days",
			Help: "Days within the retention whose usage records may be incomplete: the shared store lost them and no running replica has written them back; the export marks them (docs/USAGE.md)."},
			func() float64 { return float64(rs.IncompleteDays()) }))
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				panic(err)
			}
		}
	}
}
