package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/core/price"
	"github.com/sluice-gw/sluice/internal/server/dashboard"
	"github.com/sluice-gw/sluice/internal/server/fleetstore"
	"github.com/sluice-gw/sluice/internal/server/usage"
)

// Usage records (docs/USAGE.md): every request account charges is
// added, with the same figures, to the usage records, per key, team,
// client-facing model, upstream model and UTC day. The recorder belongs
// to the Host, so it outlives reloads; it keeps the records in the
// store (store:), else in state.dir, else in memory only.

// recordUsage adds x, accounted with u (account), to the usage records.
// priced: x's upstream model has a price, and x.cost is its cost.
func (g *Gateway) recordUsage(x *exchange, u price.Usage, priced bool) {
	row := usage.Row{Key: "-", Team: "-", Model: x.model, Upstream: x.upstreamModel}
	if x.key != nil {
		row.Key, row.Team = x.key.name, x.key.tenant
	}
	if row.Model == "" {
		row.Model = "-"
	}
	c := usage.Counts{Requests: 1, Input: u.Input, CachedInput: u.CachedInput, Output: u.Output}
	if priced {
		c.Cost = int64(x.cost)
	}
	g.usage.Add(g.now(), row, c)
}

// Usage is the gateway's usage recorder.
func (g *Gateway) Usage() *usage.Recorder { return g.usage }

// NewUsageRecorder returns the usage recorder cfg asks for: in its
// store (store:, under fleet.prefix), else in a file per day under
// state.dir/usage, else in memory only, which it logs. The recorder's
// Run flushes it (a Host runs it while it serves).
func NewUsageRecorder(cfg *config.Config, log *slog.Logger) (*usage.Recorder, error) {
	o := usage.Options{Retention: int(cfg.Usage.RetentionDays()), Log: log}
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
