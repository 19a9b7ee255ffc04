package mock

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/sluice-gw/sluice/internal/model/upstream"
	"github.com/sluice-gw/sluice/internal/wire/sseenc"
)

// Main is `sluice mock [flags]`: it serves a mock provider until SIGINT or
// SIGTERM, then drains and returns 0. Bad flags or a bad script return 2,
// a listen or serve failure 1.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	go func() {
		// After the first signal, a second one kills at once instead of
		// waiting out the drain.
		<-ctx.Done()
		stop()
	}()
	return run(ctx, args, stdout, stderr)
}

// run is Main with the signal replaced by ctx, so tests can stop it.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, listen, grace, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "sluice mock: %v\n", err)
		return 2
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		fmt.Fprintf(stderr, "sluice mock: %v\n", err)
		return 1
	}
	s := New(cfg)
	shutdown, failed := s.serve(ln)
	fmt.Fprintf(stdout, "sluice mock: listening on http://%s (OpenAI and Anthropic APIs under /v1, counters at /stats, vLLM gauges at /metrics)\n", ln.Addr())
	if cfg.TimeScale != 0 && cfg.TimeScale != 1 {
		fmt.Fprintf(stdout, "sluice mock: time scale %g: every latency and window is %g times its scripted length\n", cfg.TimeScale, cfg.TimeScale)
	}
	select {
	case <-ctx.Done():
		shutdown(grace)
		st := s.Stats()
		fmt.Fprintf(stdout, "sluice mock: stopped after %d calls (%d completed, %d cancelled by client, %d errors injected, %d rejected)\n",
			st.Total, st.Completed, st.CancelledByClient, st.ErrorsInjected, st.Rejected)
		return 0
	case err := <-failed:
		shutdown(0)
		fmt.Fprintf(stderr, "sluice mock: %v\n", err)
		return 1
	}
}

// brownoutFlags collects repeated --brownout values.
type brownoutFlags []Brownout

func (b *brownoutFlags) String() string { return "" }

func (b *brownoutFlags) Set(s string) error {
	w, err := ParseBrownout(s)
	if err == nil {
		*b = append(*b, w)
	}
	return err
}

type tokenRangeFlag struct{ r *TokenRange }

func (f tokenRangeFlag) String() string {
	if f.r == nil {
		return ""
	}
	return fmt.Sprintf("%d-%d", f.r.Min, max(f.r.Max, f.r.Min))
}

func (f tokenRangeFlag) Set(s string) (err error) {
	*f.r, err = upstream.ParseTokenRange(s)
	return err
}

// parseFlags builds the Config: defaults, then the script, then any flag
// given explicitly, so a flag can tweak one knob of a scripted scenario.
func parseFlags(args []string, stderr io.Writer) (cfg Config, listen string, grace time.Duration, err error) {
	fs := flag.NewFlagSet("sluice mock", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: sluice mock [flags]\n\nServe a fake OpenAI/Anthropic provider with scriptable latency, brownouts and failures.\n\n")
		fs.PrintDefaults()
	}
	def := DefaultConfig()
	var (
		flagCfg    = def
		script     = fs.String("script", "", "YAML behaviour `file` (see the mock package doc and mock/testdata/brownout.yaml)")
		scenarioF  = fs.String("scenario", "", "read the behaviour from a scenario `file`'s scenario.upstreams section (with --provider)")
		provider   = fs.String("provider", "", "the provider `name` to play, with --scenario")
		jitter     = fs.Duration("latency-jitter", 0, "add uniform random TTFT jitter in [0, `d`]")
		failRate   = fs.Float64("fail-rate", 0, "fraction of calls to fail (0..1)")
		failKind   = fs.String("fail-kind", FailStatus, "failure kind for --fail-rate: status, reset, hang, malformed or truncate")
		failStatus = fs.Int("fail-status", 500, "HTTP status for --fail-kind status (e.g. 429, 500, 503, 529)")
		retryAfter = fs.Duration("retry-after", 0, "retry-after sent with injected status failures")
		timeScale  = fs.Float64("time-scale", 1, "multiply every time in the behaviour (latencies, jitter, brownout and failure windows, delays, retry-after), after the script and the other flags: 0.25 runs a scenario four times faster, as sluice load --time-scale 0.25 replays it")
		brownouts  brownoutFlags
	)
	fs.StringVar(&listen, "listen", "127.0.0.1:8000", "`address` to serve on")
	fs.DurationVar(&grace, "grace", 5*time.Second, "how long to let calls in flight finish on shutdown")
	fs.Uint64Var(&flagCfg.Seed, "seed", 0, "seed for every random decision")
	fs.DurationVar(&flagCfg.TTFT, "ttft", def.TTFT, "base time to first token")
	fs.DurationVar(&flagCfg.TPOT, "tpot", def.TPOT, "time per output token")
	fs.BoolVar(&flagCfg.EarlyHead, "early-head", false, "send a stream's headers and head at once, its first token after the TTFT")
	fs.StringVar(&flagCfg.Encoding, "encoding", "", "write streams in this legal form: `words` joined by '+' from "+strings.Join(sseenc.Words(), ", ")+" (e.g. spaced+crlf, pretty+noevent, pydefault+keepalive:250ms; default compact)")
	fs.Var(tokenRangeFlag{&flagCfg.OutputTokens}, "output-tokens", "reply length: `N` or MIN-MAX")
	fs.IntVar(&flagCfg.MaxRunning, "max-running", 0, "concurrent generating calls (0 = unlimited)")
	fs.IntVar(&flagCfg.MaxWaiting, "max-waiting", 0, "queued calls beyond max-running before 503/529 (0 = unlimited, -1 = none)")
	fs.Float64Var(&flagCfg.BatchSlowdown, "batch-slowdown", 0, "TPOT grows by this fraction per extra running call")
	fs.IntVar(&flagCfg.EmbeddingDim, "embedding-dim", 8, "embedding vector length")
	fs.Var(&brownouts, "brownout", "brownout `window`, repeatable: START-END:xN or START-END:DURATION, optional @FRACTION (e.g. 30s-60s:x10)")
	if err := fs.Parse(args); err != nil {
		return Config{}, "", 0, err
	}
	if fs.NArg() > 0 {
		return Config{}, "", 0, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}

	cfg = def
	switch {
	case *script != "" && *scenarioF != "":
		return Config{}, "", 0, errors.New("give --script or --scenario, not both")
	case (*scenarioF == "") != (*provider == ""):
		return Config{}, "", 0, errors.New("--scenario and --provider go together: --scenario FILE --provider NAME")
	case *script != "":
		if cfg, err = LoadScript(*script); err != nil {
			return Config{}, "", 0, err
		}
	case *scenarioF != "":
		if cfg, err = LoadScenarioUpstream(*scenarioF, *provider); err != nil {
			return Config{}, "", 0, err
		}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	override := map[string]func(){
		"seed":           func() { cfg.Seed = flagCfg.Seed },
		"ttft":           func() { cfg.TTFT = flagCfg.TTFT },
		"tpot":           func() { cfg.TPOT = flagCfg.TPOT },
		"early-head":     func() { cfg.EarlyHead = flagCfg.EarlyHead },
		"encoding":       func() { cfg.Encoding = flagCfg.Encoding },
		"output-tokens":  func() { cfg.OutputTokens = flagCfg.OutputTokens },
		"max-running":    func() { cfg.MaxRunning = flagCfg.MaxRunning },
		"max-waiting":    func() { cfg.MaxWaiting = flagCfg.MaxWaiting },
		"batch-slowdown": func() { cfg.BatchSlowdown = flagCfg.BatchSlowdown },
		"embedding-dim":  func() { cfg.EmbeddingDim = flagCfg.EmbeddingDim },
		"latency-jitter": func() { cfg.Jitter = Jitter{Kind: "uniform", Max: *jitter} },
	}
	for name, apply := range override {
		if set[name] {
			apply()
		}
	}
	cfg.Brownouts = append(cfg.Brownouts, brownouts...)
	if set["fail-rate"] {
		cfg.Failures = append(cfg.Failures, Failure{Kind: *failKind, Status: *failStatus, RetryAfter: *retryAfter, Rate: *failRate})
		if *failRate <= 0 {
			return Config{}, "", 0, errors.New("--fail-rate must be in (0, 1]")
		}
	} else if set["fail-kind"] || set["fail-status"] || set["retry-after"] {
		return Config{}, "", 0, errors.New("--fail-kind, --fail-status and --retry-after need --fail-rate")
	}
	if !(*timeScale > 0) || math.IsInf(*timeScale, 0) {
		return Config{}, "", 0, fmt.Errorf("--time-scale %v: want a positive factor, e.g. 0.25 to run four times faster", *timeScale)
	}
	cfg = cfg.Scaled(*timeScale)
	if err := cfg.Validate(); err != nil {
		return Config{}, "", 0, fmt.Errorf("invalid settings: %s", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	if _, err := sseenc.Parse(cfg.Encoding); err != nil {
		return Config{}, "", 0, fmt.Errorf("--encoding: %v", err)
	}
	return cfg, listen, grace, nil
}
