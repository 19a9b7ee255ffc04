package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sluice-gw/sluice/config"
	"github.com/sluice-gw/sluice/gateway"
	"github.com/sluice-gw/sluice/mock"
)

// shutdownGrace is how long in-flight requests get to finish on SIGTERM.
const shutdownGrace = 30 * time.Second

// Serve implements "sluice serve".
func Serve(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sluice serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "YAML configuration `file`; without it, serve the embedded default in front of a built-in fake provider")
	check := fs.Bool("check", false, "validate the configuration and exit (0 valid, 2 invalid)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "sluice serve: unexpected argument %q\n", fs.Arg(0))
		return 2
	}

	var cfg *config.Config
	var stopMock func()
	if *path != "" {
		c, err := config.Load(*path)
		if err != nil {
			fmt.Fprintf(stderr, "sluice serve: invalid configuration:\n%v\n", err)
			return 2
		}
		cfg = c
	} else {
		base, stop, err := mock.New(mock.DefaultConfig()).Start("127.0.0.1:0")
		if err != nil {
			fmt.Fprintf(stderr, "sluice serve: starting the built-in fake provider: %v\n", err)
			return 1
		}
		stopMock = stop
		defer stop()
		cfg = config.Default(base)
	}
	if *check {
		fmt.Fprintf(stdout, "configuration ok: %d providers, %d models\n", len(cfg.Providers), len(cfg.Models))
		for _, w := range cfg.Warnings() {
			fmt.Fprintf(stdout, "warning: %s\n", w)
		}
		return 0
	}

	logOut := gateway.NewLogWriter(stderr, 100*time.Millisecond)
	defer logOut.Close()
	logger := gateway.NewLogger(logOut, cfg.Log)
	for _, w := range cfg.Warnings() {
		logger.Warn("configuration", "warning", w)
	}
	g, err := gateway.New(cfg, gateway.Options{Logger: logger})
	if err != nil {
		fmt.Fprintf(stderr, "sluice serve: %v\n", err)
		return 2
	}
	defer g.Close()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code := run(ctx, g, cfg, logger, stopMock != nil)
	return code
}

// run listens on both addresses and serves until ctx ends, then drains.
func run(ctx context.Context, g *gateway.Gateway, cfg *config.Config, log *slog.Logger, embedded bool) int {
	client, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		log.Error("cannot listen", "addr", cfg.Listen, "err", err)
		return 1
	}
	admin, err := net.Listen("tcp", cfg.AdminListen)
	if err != nil {
		client.Close()
		log.Error("cannot listen", "addr", cfg.AdminListen, "err", err)
		return 1
	}
	servers := []*http.Server{
		{Handler: g.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second},
		{Handler: g.AdminHandler(), ReadHeaderTimeout: 10 * time.Second},
	}
	errc := make(chan error, 2)
	for i, l := range []net.Listener{client, admin} {
		go func() { errc <- servers[i].Serve(l) }()
	}
	attrs := []any{"listen", client.Addr().String(), "admin", admin.Addr().String(),
		"providers", len(cfg.Providers), "models", len(cfg.Models)}
	if embedded {
		attrs = append(attrs, "mode", "embedded default with built-in fake provider")
	}
	log.Info("sluice serving", attrs...)

	select {
	case <-ctx.Done():
	case err := <-errc:
		log.Error("server stopped", "err", err)
		return 1
	}
	log.Info("shutting down: draining in-flight requests", "grace", shutdownGrace)
	g.SetReady(false)
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	code := 0
	for _, s := range servers {
		if err := s.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("shutdown incomplete", "err", err)
			code = 1
		}
	}
	return code
}
