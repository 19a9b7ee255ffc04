package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/server/dashboard"
	"github.com/sluice-gw/sluice/internal/server/keystore"
	"github.com/sluice-gw/sluice/internal/server/metrics"
	"github.com/sluice-gw/sluice/internal/server/usage"
)

// Host runs a gateway's listeners and the configuration they serve. It
// owns what outlives one configuration (the listeners and their limits,
// the metrics, the log) and swaps configurations on Reload without
// dropping or disturbing a request: requests in flight finish on the
// configuration they started on, new ones start on the new one, and the
// old one is closed once its last request has ended.
//
// A reload starts the new configuration with fresh state: breaker
// windows, adaptive limits and budgets begin again from its settings.
// While the replaced configuration finishes its requests, the two run
// side by side, and the new one counts the old one's calls in flight
// against its own limits (runner.Runner.Handover: max_in_flight, and
// each provider's by name) until they end, so the concurrency limits
// hold in sum; so does the request-body budget, which is shared. The listen addresses and the server: limits are the first
// configuration's until a restart.
type Host struct {
	log     *slog.Logger
	metrics *metrics.Metrics
	opts    Options
	server  config.Server
	cur     atomic.Pointer[Gateway]
	ready   atomic.Bool

	// base is every request's parent context; Shutdown cancels it, with
	// ErrShutdown, when in-flight work has had its grace.
	base   context.Context
	cancel context.CancelCauseFunc

	// tracing is the config's tracing, which changes only at a restart;
	// stopTracing flushes and ends the tracer provider the host built.
	tracing     config.Tracing
	stopTracing func(context.Context) error
	// dash samples the metrics for the dashboard while the host serves
	// (admin.go); token guards the admin routes, "" for none.
	dash     *dashboard.Recorder
	dashStop context.CancelFunc // under mu; nil until Serve
	// usage keeps the usage records of every configuration served
	// (usage.go); usageStop ends its flushing, after a last flush.
	usage     *usage.Recorder
	usageStop func() // under mu; nil until Serve
	// What the recorder was made from, to warn of a reload changing it.
	store, stateDir string
	usageCfg        config.Usage
	token           string
	// adminConns caps the admin listener's connections
	// (admin.max_connections).
	adminConns int
	// keys is where keys made at run time live (nil: nowhere), and
	// closeKeys stops following it; keysAt is the config that chose it
	// (store, state.dir), which changes only at a restart.
	keys      keystore.Store
	closeKeys func()
	keysAt    [2]string

	mu      sync.Mutex // serialises Reload and Shutdown
	servers []*http.Server
	// down: Shutdown has begun. A Serve that starts after it serves
	// nothing (a signal can come before the serving goroutine runs, and
	// servers made after Shutdown read the list would never be shut).
	down bool
	// shut is closed once the first Shutdown has finished; a second
	// waits for it.
	shut   chan struct{}
	drains sync.WaitGroup // replaced configurations still finishing
}

// NewHost builds the first configuration's gateway.
func NewHost(cfg *config.Config, opts Options) (*Host, error) {
	if opts.Metrics == nil {
		opts.Metrics = metrics.New()
	}
	if opts.Logger == nil {
		opts.Logger = NewLogger(os.Stderr, cfg.Log)
	}
	// One transport for every configuration the host serves: a reload
	// keeps the upstream connections warm, and the configuration it
	// replaces leaves no idle ones behind to linger until their timeout.
	if opts.Transport == nil {
		opts.Transport = NewTransport()
	}
	server := cfg.Server.WithDefaults()
	opts.bodies = &byteBudget{limit: server.MaxBodyBytesInFlight.Int64()}
	opts.idem = newIdemShared()
	opts.cache = newCacheShared()
	opts.items = newItemStore(time.Now)
	keys, closeKeys, err := openKeyStore(cfg, opts.Logger, opts.Metrics)
	if err != nil {
		return nil, err
	}
	opts.keys = keys
	if opts.Usage == nil {
		u, err := newUsageRecorder(cfg, opts.Logger, opts.Metrics)
		if err != nil {
			closeKeys()
			return nil, fmt.Errorf("usage: %w", err)
		}
		opts.Usage = u
	}
	opts.spend = &spendShared{}
	var stopTracing func(context.Context) error
	if opts.TracerProvider == nil && cfg.Tracing.On() {
		tp, err := NewTracerProvider(cfg.Tracing)
		if err != nil {
			return nil, fmt.Errorf("tracing: %w", err)
		}
		opts.TracerProvider, stopTracing = tp, tp.Shutdown
	}
	g, err := New(cfg, opts)
	if err != nil {
		if stopTracing != nil {
			stopTracing(context.Background())
		}
		closeKeys()
		return nil, err
	}
	h := &Host{log: opts.Logger, metrics: opts.Metrics, opts: opts, server: server, tracing: cfg.Tracing, stopTracing: stopTracing,
		dash: dashboard.NewRecorder(opts.Metrics.Registry, 0), token: cfg.AdminToken(), adminConns: cfg.Admin.Connections(),
		keys: keys, closeKeys: closeKeys, keysAt: [2]string{cfg.Store, cfg.State.Dir},
		usage: opts.Usage, store: cfg.Store, stateDir: cfg.State.Dir, usageCfg: cfg.Usage}
	switch {
	case keys == nil:
		h.log.Info("keys made at run time: none (the admin key API needs store: or state.dir:); keys: in the config work as ever")
	case !keys.Snapshot().Loaded:
		h.log.Warn("keys made at run time: the store did not answer yet; until it does, keys made at run time are refused as unknown, and requests without a key are refused unless auth.required is set",
			"store", keys.Where())
	default:
		h.log.Info("keys made at run time", "store", keys.Where(), "keys", len(keys.Snapshot().Records), "key_required", g.keys.requireKey())
	}
	h.dash.SetBudgets(dashboardBudgets(cfg))
	h.dash.SetSpenders(func() []dashboard.Spender { return dashboardSpenders(h.usage) })
	usageMetrics(opts.Metrics.Registry, h.usage)
	h.base, h.cancel = context.WithCancelCause(context.Background())
	h.cur.Store(g)
	h.ready.Store(true)
	return h, nil
}

// Gateway is the configuration serving new requests.
func (h *Host) Gateway() *Gateway { return h.cur.Load() }

// ServeHTTP hands a request to the current configuration, counted in it
// so a reload can tell when the one it replaced is done.
func (h *Host) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	for {
		g := h.cur.Load()
		g.active.Add(1)
		if h.cur.Load() != g {
			g.active.Add(-1) // replaced just now: take the new one
			continue
		}
		defer g.active.Add(-1)
		g.handler.ServeHTTP(w, r)
		return
	}
}

// AdminHandler serves /metrics, /healthz, /readyz, /admin/evals, the
// key API (/admin/keys, package keystore; only with admin.token_env
// set), /admin/usage (the usage export, docs/USAGE.md), the dashboard
// (/dashboard/, admin.go) and the runtime profiles
// (/debug/pprof/, pprof.go), all but the probes behind admin.token_env's
// token when one is set.
func (h *Host) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/dashboard/", dashboard.Handler("/dashboard/", h.dash))
	mux.Handle("GET /{$}", http.RedirectHandler("/dashboard/", http.StatusFound))
	mux.Handle("GET /metrics", promhttp.HandlerFor(h.metrics.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", serveOK)
	mux.HandleFunc("GET /admin/evals", func(w http.ResponseWriter, r *http.Request) { h.cur.Load().evals.serve(w, r) })
	keysAPI := (&keystore.API{Store: h.keys, Guarded: h.token != "", Env: func() keystore.Env { return h.cur.Load().keys.env() }, Log: h.log}).Handler()
	mux.Handle("/admin/keys", keysAPI)
	mux.Handle("/admin/keys/", keysAPI)
	mux.Handle("/admin/usage", h.usage)
	mux.HandleFunc("/admin/cache", func(w http.ResponseWriter, r *http.Request) { h.cur.Load().serveCacheAdmin(w, r) })
	mountProfiles(mux)
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if !h.ready.Load() {
			http.Error(w, "draining\n", http.StatusServiceUnavailable)
			return
		}
		f := h.cur.Load().fleet
		if !f.ready() {
			http.Error(w, "joining the fleet\n", http.StatusServiceUnavailable)
			return
		}
		serveReady(w, f)
	})
	return guardAdmin(h.token, newAdminSessions(nil), mux)
}

// Serve serves the client API on client and the admin API on admin until
// Shutdown. The client listener takes at most server.max_connections
// connections at once, the admin listener admin.max_connections; past
// that, new ones wait in the kernel's accept queue rather than cost the
// process memory and file descriptors (so idle admin connections cannot
// take those the client API needs). A listener on loopback answers only
// to this machine's names and server.allowed_hosts, and the client API
// refuses other web origins than server.cors allows (browser.go). It
// returns the first listener's error other than a shutdown.
func (h *Host) Serve(client, admin net.Listener) error {
	errLog := slog.NewLogLogger(h.log.Handler(), slog.LevelWarn)
	newServer := func(handler http.Handler) *http.Server {
		return &http.Server{
			Handler:           handler,
			ReadHeaderTimeout: h.server.ReadHeaderTimeout.D(),
			IdleTimeout:       h.server.IdleTimeout.D(),
			MaxHeaderBytes:    int(h.server.MaxHeaderBytes),
			BaseContext:       func(net.Listener) context.Context { return h.base },
			ErrorLog:          errLog,
		}
	}
	h.mu.Lock()
	if h.down {
		h.mu.Unlock()
		client.Close()
		admin.Close()
		return nil
	}
	h.startDashboard()
	h.startUsage()
	within := h.server.BodyReadTimeout.D()
	api := newServer(bodyWithin(within, hostGuard(client, h.server.AllowedHosts, corsGuard(h.server.CORS, h), refuseClientHost)))
	adm := newServer(bodyWithin(within, hostGuard(admin, h.server.AllowedHosts, h.AdminHandler(), refuseAdminHost)))
	h.servers = []*http.Server{api, adm}
	h.mu.Unlock()
	errc := make(chan error, 2)
	go func() { errc <- api.Serve(LimitListener(client, h.server.MaxConnections)) }()
	go func() { errc <- adm.Serve(LimitListener(admin, h.adminConns)) }()
	for range 2 {
		if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	}
	return nil
}

// Reload starts serving cfg. On an error (a provider key that is not
// set, a configuration the gateway cannot build) nothing changes. cfg's
// listen addresses and server: limits take effect only at a restart; a
// change to them is logged.
func (h *Host) Reload(cfg *config.Config) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := cfg.CheckEnv(); err != nil {
		h.metrics.Reloads.WithLabelValues("refused").Inc()
		return err
	}
	if !reflect.DeepEqual(cfg.Server.WithDefaults(), h.server) {
		h.log.Warn("reload: server settings change only at a restart; the running ones stay")
	}
	if cfg.Store != h.store || cfg.State.Dir != h.stateDir || cfg.Usage != h.usageCfg {
		h.log.Warn("reload: where usage records are kept (store, state.dir, usage) changes only at a restart; the running ones stay")
	}
	if !reflect.DeepEqual(cfg.Tracing, h.tracing) {
		h.log.Warn("reload: tracing settings change only at a restart; the running ones stay")
	}
	if cfg.AdminToken() != h.token {
		h.log.Warn("reload: the admin token (admin.token_env) changes only at a restart, which also ends every dashboard session; the running token stays")
	}
	if [2]string{cfg.Store, cfg.State.Dir} != h.keysAt {
		h.log.Warn("reload: where keys made at run time live (store:, state.dir:) changes only at a restart; the running store stays")
	}
	running := *cfg
	running.Server = h.server
	g, err := New(&running, h.opts)
	if err != nil {
		h.metrics.Reloads.WithLabelValues("refused").Inc()
		return err
	}
	// The new configuration counts the calls the old one still runs, and
	// those its waiters start, before it takes a request of its own.
	cur := h.cur.Load()
	cur.runner.Handover(g.runner, scopeMap(cur, g))
	g.fleet.inherit(cur.fleet)
	old := h.cur.Swap(g)
	h.dash.SetBudgets(dashboardBudgets(&running))
	h.metrics.Reloads.WithLabelValues("ok").Inc()
	h.drains.Add(1)
	go func() {
		defer h.drains.Done()
		for old.active.Load() > 0 {
			time.Sleep(20 * time.Millisecond)
		}
		old.Close()
	}()
	return nil
}

// RefuseReload counts a reload refused before Reload saw it: the file
// did not read, parse or validate, and the running configuration stays.
// Reload counts its own refusals.
func (h *Host) RefuseReload() { h.metrics.Reloads.WithLabelValues("refused").Inc() }

// scopeMap maps each of old's provider scopes to the scope of the
// provider of the same name in g, or -1 when g has none.
func scopeMap(old, g *Gateway) []int {
	m := make([]int, len(old.byScope))
	for i, p := range old.byScope {
		m[i] = -1
		if q, ok := g.providers[p.name]; ok {
			m[i] = q.scope
		}
	}
	return m
}

// Shutdown drains the gateway: /readyz fails at once; after drainDelay,
// so load balancers stop sending, the listeners close; requests in
// flight get until ctx ends to finish, and then every request still
// running ends (a 503/529, or an error event mid-stream: ErrShutdown).
// After it has begun, Serve serves nothing; a second Shutdown waits for
// the first (or for its own ctx).
func (h *Host) Shutdown(ctx context.Context, drainDelay time.Duration) error {
	h.ready.Store(false)
	if drainDelay > 0 {
		select {
		case <-time.After(drainDelay):
		case <-ctx.Done():
		}
	}
	h.mu.Lock()
	if h.down {
		shut := h.shut
		h.mu.Unlock()
		select {
		case <-shut:
		case <-ctx.Done():
			return ctx.Err()
		}
		return nil
	}
	h.down, h.shut = true, make(chan struct{})
	defer close(h.shut)
	servers, stopDash, stopUsage := h.servers, h.dashStop, h.usageStop
	h.mu.Unlock()
	done := make(chan error, len(servers))
	for _, s := range servers {
		go func() { done <- s.Shutdown(ctx) }()
	}
	var err error
	for range servers {
		if e := <-done; e != nil && err == nil {
			err = e
		}
	}
	if err != nil {
		// Out of grace: the requests left end now, told why, and the
		// connections close once they have.
		h.cancel(ErrShutdown)
		last, stop := context.WithTimeout(context.Background(), 2*time.Second)
		defer stop()
		for _, s := range servers {
			s.Shutdown(last)
			s.Close()
		}
	}
	h.drains.Wait()
	h.cur.Load().Close()
	h.closeKeys()
	h.opts.spend.close() // after the last request settled
	if stopDash != nil {
		stopDash()
	}
	if stopUsage != nil {
		stopUsage() // the last flush
	}
	if h.stopTracing != nil {
		// The spans still batched go out, within what is left of the
		// grace.
		last, stop := context.WithTimeout(context.Background(), 2*time.Second)
		defer stop()
		if e := h.stopTracing(last); e != nil {
			h.log.Warn("tracing: spans not flushed at shutdown", "err", e)
		}
	}
	return err
}

// LimitListener returns a listener that holds at most n connections open
// at once: Accept waits for one to close first. n <= 0 means no limit.
func LimitListener(l net.Listener, n int) net.Listener {
	if n <= 0 {
		return l
	}
	return &limitListener{Listener: l, slots: make(chan struct{}, n), closed: make(chan struct{})}
}

type limitListener struct {
	net.Listener
	slots     chan struct{}
	closed    chan struct{}
	closeOnce sync.Once
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.closed:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.slots }}, nil
}

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
