package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/url"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/server/gateway"
)

// Serve implements "sluice serve".
func Serve(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sluice serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "YAML configuration `file`; without it, serve the embedded default in front of a built-in fake provider")
	check := fs.Bool("check", false, "validate the configuration (and that its key variables are set) and exit: 0 valid, 2 invalid")
	listen := fs.String("listen", "", "client API `address`, overriding the configuration's listen")
	adminListen := fs.String("admin-listen", "", "admin API `address` (/metrics, /healthz, /readyz), overriding admin_listen")
	policy := fs.String("policy", "", "with --config SCENARIO, serve the gateway config of the scenario's policy `NAME` (its gateway: overlay), as sluice load --policy NAME replays its clients")
	timeScale := fs.Float64("time-scale", 1, "multiply every policy time in the configuration (timeouts, queue waits, breaker and limit windows, hedge delays; not the client-network or shutdown timeouts) and divide every per-minute rate, to serve a scenario replayed by sluice load --time-scale with the same factor")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "sluice serve: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *policy != "" && *path == "" {
		fmt.Fprintf(stderr, "sluice serve: --policy %s needs --config SCENARIO: a scenario file with policies\n", *policy)
		return 2
	}
	if !(*timeScale > 0) || math.IsInf(*timeScale, 0) {
		fmt.Fprintf(stderr, "sluice serve: --time-scale %v: want a positive factor, e.g. 0.25 to run four times faster\n", *timeScale)
		return 2
	}
	// prepare applies the flags to a loaded configuration, the time
	// scale first so that validation sees what will run.
	prepare := func(c *config.Config) (*config.Config, error) {
		if *listen != "" {
			c.Listen = *listen
		}
		if *adminListen != "" {
			c.AdminListen = *adminListen
		}
		if *timeScale != 1 {
			s, err := c.Scaled(*timeScale)
			if err != nil {
				return nil, err
			}
			c = s
		}
		if err := c.Validate(); err != nil {
			return nil, err
		}
		return c, c.CheckEnv()
	}

	var cfg *config.Config
	embedded := *path == ""
	if !embedded {
		c, err := loadConfig(*path, *policy)
		if err == nil {
			c, err = prepare(c)
		}
		if err != nil {
			fmt.Fprintf(stderr, "sluice serve: invalid configuration:\n%v\n", err)
			return 2
		}
		cfg = c
	} else {
		// The built-in fake provider runs at the gateway's time scale.
		base, stop, err := mock.New(mock.DefaultConfig().Scaled(*timeScale)).Start("127.0.0.1:0")
		if err != nil {
			fmt.Fprintf(stderr, "sluice serve: starting the built-in fake provider: %v\n", err)
			return 1
		}
		defer stop()
		if cfg, err = prepare(config.Default(base)); err != nil {
			fmt.Fprintf(stderr, "sluice serve: %v\n", err)
			return 2
		}
	}
	if *check {
		fmt.Fprintf(stdout, "configuration ok: %d providers, %d models\n", len(cfg.Providers), len(cfg.Models))
		for _, w := range cfg.Warnings() {
			fmt.Fprintf(stdout, "warning: %s\n", w)
		}
		if !cfg.Durable() {
			fmt.Fprintln(stdout, "note: usage records are kept in memory only, and lost at exit; set store: or state.dir to keep them (docs/USAGE.md)")
		}
		if *timeScale != 1 {
			if err := printScaled(stdout, cfg, *path); err != nil {
				fmt.Fprintf(stderr, "sluice serve: %v\n", err)
				return 1
			}
		}
		return 0
	}

	logOut := gateway.NewLogWriter(stderr, 100*time.Millisecond)
	defer logOut.Close() // flushes the request log on the way out
	logger := gateway.NewLogger(logOut, cfg.Log)
	for _, w := range cfg.Warnings() {
		logger.Warn("configuration", "warning", w)
	}
	if *timeScale != 1 {
		logger.Warn("time-scaled: every policy time in the configuration is multiplied, and every per-minute rate divided, by the time scale; run sluice load and sluice mock with the same --time-scale",
			"time_scale", *timeScale)
	}
	h, err := gateway.NewHost(cfg, gateway.Options{Logger: logger})
	if err != nil {
		fmt.Fprintf(stderr, "sluice serve: %v\n", err)
		return 2
	}
	reload := func() {
		if embedded {
			logger.Warn("SIGHUP: serving the embedded default; there is no configuration file to reload")
			return
		}
		c, err := loadConfig(*path, *policy)
		if err == nil {
			c, err = prepare(c)
		}
		if err != nil {
			h.RefuseReload() // Reload counts the refusals it makes itself
		} else {
			err = h.Reload(c)
		}
		if err != nil {
			logger.Error("SIGHUP: configuration refused; the running one stays", "file", *path, "err", err.Error())
			return
		}
		for _, w := range c.Warnings() {
			logger.Warn("configuration", "warning", w)
		}
		logger.Info("SIGHUP: configuration reloaded", "file", *path, "providers", len(c.Providers), "models", len(c.Models))
	}
	return run(h, cfg, logger, embedded, reload)
}

// run listens on both addresses and serves until a signal: SIGHUP
// reloads; SIGTERM drains (readiness fails for server.drain_delay, then
// the listeners close and in-flight requests get server.shutdown_grace);
// SIGINT (Ctrl-C) drains at once, with the same grace.
func run(h *gateway.Host, cfg *config.Config, log *slog.Logger, embedded bool, reload func()) int {
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
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	errc := make(chan error, 1)
	go func() { errc <- h.Serve(client, admin) }()
	attrs := []any{"listen", client.Addr().String(), "admin", admin.Addr().String(),
		"providers", len(cfg.Providers), "models", len(cfg.Models)}
	if embedded {
		attrs = append(attrs, "mode", "embedded default with built-in fake provider")
	}
	if n := evalModels(cfg); n > 0 {
		attrs = append(attrs, "eval_sets", n)
	}
	log.Info("sluice serving", attrs...)

	var sig os.Signal
	for sig == nil {
		select {
		case s := <-sigs:
			if s == syscall.SIGHUP {
				reload()
				continue
			}
			sig = s
		case err := <-errc:
			log.Error("server stopped", "err", err)
			return 1
		}
	}
	delay := cfg.Server.DrainDelay.D()
	if sig == os.Interrupt {
		delay = 0
	}
	grace := cfg.Server.ShutdownGrace.D()
	log.Info("shutting down: draining", "signal", sig.String(), "drain_delay", delay, "grace", grace)
	ctx, cancel := context.WithTimeout(context.Background(), delay+grace)
	defer cancel()
	go func() {
		// A second SIGINT or SIGTERM stops waiting for the grace.
		for s := range sigs {
			if s != syscall.SIGHUP {
				log.Warn("second signal: ending in-flight requests now", "signal", s.String())
				cancel()
				return
			}
		}
	}()
	if err := h.Shutdown(ctx, delay); err != nil {
		log.Warn("shutdown: in-flight requests ended at the end of the grace", "err", err)
		return 1
	}
	log.Info("shutdown complete")
	return 0
}

// printScaled shows what a time-scaled gateway would run: the
// configuration after config.Config.Scaled, without the scenario
// section, which serve never reads, and without its secrets
// (redactSecrets): the output goes to terminals, CI logs and bug
// reports. file is the configuration's file ("" for the embedded
// default).
func printScaled(w io.Writer, cfg *config.Config, file string) error {
	var doc yaml.Node
	if err := doc.Encode(cfg); err != nil {
		return err
	}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if doc.Content[i].Value == "scenario" {
			doc.Content = append(doc.Content[:i], doc.Content[i+2:]...)
			break
		}
	}
	redactSecrets(&doc, envRefs(file))
	b, err := yaml.Marshal(&doc)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "time scale %g: every time below is %g times the file's, and every per-minute rate divided by %g, except %s (not scaled); zero still means the default, which the gateway scales too\n",
		cfg.TimeFactor(), cfg.TimeFactor(), cfg.TimeFactor(), strings.Join(config.Unscaled, ", "))
	_, err = w.Write(b)
	return err
}

// evalModels counts the models that declare fallback evals.
func evalModels(cfg *config.Config) int {
	n := 0
	for _, m := range cfg.Models {
		if m.Evals != nil {
			n++
		}
	}
	return n
}

// envRef is a ${NAME} or ${NAME:-fallback} reference in a configuration.
var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?\}`)

// envRefs maps the values of the environment variables file refers to
// (${NAME}), long enough to mistake for nothing else, to their
// references.
func envRefs(file string) map[string]string {
	refs := map[string]string{}
	if file == "" {
		return refs
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return refs
	}
	for _, m := range envRef.FindAllStringSubmatch(string(b), -1) {
		if v := os.Getenv(m[1]); len(v) >= 4 {
			refs[v] = "${" + m[1] + "}"
		}
	}
	return refs
}

// redactSecrets blanks what a printed configuration must not show: every
// value a file took from the environment (names it ${NAME} again, where
// keys and tokens belong), the values of providers' and tracing's
// headers (credentials, whether written in or taken from the
// environment), and a URL's password (the store's redis://:PASSWORD@).
func redactSecrets(n *yaml.Node, refs map[string]string) {
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			redactSecrets(c, refs)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Value == "headers" && v.Kind == yaml.MappingNode {
				for j := 1; j < len(v.Content); j += 2 {
					v.Content[j].SetString("[redacted]")
				}
				continue
			}
			redactSecrets(v, refs)
		}
	case yaml.ScalarNode:
		v := n.Value
		for secret, ref := range refs {
			v = strings.ReplaceAll(v, secret, ref)
		}
		if u, err := url.Parse(v); err == nil && u.Scheme != "" && u.User != nil {
			if _, has := u.User.Password(); has {
				u.User = url.UserPassword(u.User.Username(), "redacted")
				v = u.String()
			}
		}
		if v != n.Value {
			n.SetString(v)
		}
	}
}
