package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// options are the harness's flags.
type options struct {
	duration    time.Duration
	warmup      time.Duration
	rounds      int
	concurrency int
	rate        float64
	latency     time.Duration
	poisson     bool

	overloadRate        float64
	overloadLimit       int
	overloadQueue       int
	overloadLatency     time.Duration
	haproxyQueueTimeout time.Duration
	haproxyAbort        bool

	streams           int
	streamTokens      int
	streamTPOT        time.Duration
	streamOpenTimeout time.Duration

	brownoutClients int
	brownoutLatency time.Duration
	brownoutTimeout time.Duration
	brownoutSettle  time.Duration

	hostileSockets         int
	hostileBaselineSockets int
	hostileAnswers         int
	hostileAnswerBytes     int64
	hostileBaselineBytes   int64
	hostileTimeout         time.Duration

	phases     []string
	quick      bool
	portkey    bool
	portkeyDir string
	sluiceBin  string
	baseline   string // --sluice-baseline: an earlier sluice binary, run as sluice-before
	haproxyBin string
	doc        string
	docSet     bool
	keep       bool
}

var allPhases = []string{"throughput", "latency", "overload", "streams", "brownout", "hostile"}

func (o *options) runs(phase string) bool { return slices.Contains(o.phases, phase) }

func parseOptions(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: go run ./cmd/sluice-bench [flags]
       go run ./cmd/sluice-bench baseline-proxy --listen ADDR --upstream URL

Benchmarks Sluice against a direct connection, a bare Go reverse proxy,
HAProxy and (with --portkey) the Portkey gateway, each in front of its own
"sluice mock" upstream, all on 127.0.0.1. See docs/BENCHMARKS.md.

`)
		fs.PrintDefaults()
	}
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "measured length of each load phase per target")
	fs.DurationVar(&o.warmup, "warmup", 2*time.Second, "unmeasured load before each measured phase")
	fs.IntVar(&o.rounds, "rounds", 3, "interleaved rounds the measured time of the throughput, latency and overload phases is split into")
	fs.IntVar(&o.concurrency, "concurrency", 64, "closed-loop clients in the throughput phase")
	fs.Float64Var(&o.rate, "rate", 1000, "open-loop arrival rate (req/s) in the latency phase")
	fs.DurationVar(&o.latency, "latency", 20*time.Millisecond, "upstream latency in the latency phase")
	fs.BoolVar(&o.poisson, "poisson", true, "Poisson arrivals in open-loop phases (false: constant spacing)")
	fs.Float64Var(&o.overloadRate, "overload-rate", 1000, "open-loop arrival rate (req/s) in the overload phase")
	fs.IntVar(&o.overloadLimit, "overload-limit", 10, "in-flight limit for sluice and haproxy in the overload phase")
	fs.IntVar(&o.overloadQueue, "overload-queue", 0, "sluice admission.queue.max_depth in the overload phase")
	fs.DurationVar(&o.overloadLatency, "overload-latency", 100*time.Millisecond, "upstream latency in the overload phase")
	fs.DurationVar(&o.haproxyQueueTimeout, "haproxy-queue-timeout", time.Millisecond, "haproxy 'timeout queue' in the overload phase (1ms is its smallest)")
	fs.BoolVar(&o.haproxyAbort, "haproxy-abortonclose", false, "add 'option abortonclose' to haproxy's config (off: its default behaviour)")
	fs.IntVar(&o.streams, "streams", 5000, "concurrent streams in the memory phase")
	fs.IntVar(&o.streamTokens, "stream-tokens", 2000, "output tokens per stream in the memory phase")
	fs.DurationVar(&o.streamTPOT, "stream-tpot", 10*time.Millisecond, "upstream time per token in the memory phase")
	fs.DurationVar(&o.streamOpenTimeout, "stream-open-timeout", 60*time.Second, "how long to wait for every stream to be receiving")
	fs.IntVar(&o.brownoutClients, "brownout-clients", 200, "clients in the brownout phase")
	fs.DurationVar(&o.brownoutLatency, "brownout-latency", 30*time.Second, "upstream latency in the brownout phase")
	fs.DurationVar(&o.brownoutTimeout, "brownout-timeout", time.Second, "client timeout in the brownout phase")
	fs.DurationVar(&o.brownoutSettle, "brownout-settle", 500*time.Millisecond, "wait after the clients gave up before reading upstream counters")
	fs.IntVar(&o.hostileSockets, "hostile-sockets", 1000, "idle sockets declaring a 10 MiB body in the hostile phase")
	fs.IntVar(&o.hostileBaselineSockets, "hostile-baseline-sockets", 100, "the same for sluice-before, which allocates each declared body (10 MiB each)")
	fs.IntVar(&o.hostileAnswers, "hostile-answers", 16, "concurrent large embeddings answers in the hostile phase")
	fs.Int64Var(&o.hostileAnswerBytes, "hostile-answer-bytes", 100_000_000, "size of each large answer for sluice (bytes, approximate)")
	fs.Int64Var(&o.hostileBaselineBytes, "hostile-baseline-answer-bytes", 60_000_000, "size of each large answer for sluice-before, whose limit was 64 MiB (bytes, approximate)")
	fs.DurationVar(&o.hostileTimeout, "hostile-timeout", 5*time.Second, "client timeout of each request in the hostile phase's critical-header flood")
	phases := fs.String("phases", strings.Join(allPhases, ","), "comma-separated phases to run")
	fs.BoolVar(&o.quick, "quick", false, "smoke run of about a minute: short phases, fewer streams and clients; does not rewrite the doc unless --doc is given")
	fs.BoolVar(&o.portkey, "portkey", false, "also benchmark the Portkey gateway (npm install @portkey-ai/gateway into a temp dir)")
	fs.StringVar(&o.portkeyDir, "portkey-dir", "", "install Portkey here and keep it across runs (default: a temp dir removed on exit)")
	fs.StringVar(&o.sluiceBin, "sluice", "", "sluice binary (default: go build ./cmd/sluice into the temp dir)")
	fs.StringVar(&o.baseline, "sluice-baseline", "", "an earlier sluice binary: run it as target sluice-before beside sluice in every phase but brownout (mocks still use the current binary)")
	fs.StringVar(&o.haproxyBin, "haproxy", "", "haproxy binary (default: haproxy on PATH; skipped if absent)")
	fs.StringVar(&o.doc, "doc", "docs/BENCHMARKS.md", "write the figures between the markers of this Markdown file (empty: do not)")
	fs.BoolVar(&o.keep, "keep", false, "keep the temp dir (configs, process logs) for inspection")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	o.docSet = set["doc"]
	for p := range strings.SplitSeq(*phases, ",") {
		p = strings.TrimSpace(p)
		if !slices.Contains(allPhases, p) {
			return nil, fmt.Errorf("unknown phase %q; phases are %s", p, strings.Join(allPhases, ", "))
		}
		o.phases = append(o.phases, p)
	}
	if o.quick {
		quick := map[string]func(){
			"duration":         func() { o.duration = 2 * time.Second },
			"warmup":           func() { o.warmup = 500 * time.Millisecond },
			"rounds":           func() { o.rounds = 2 },
			"streams":          func() { o.streams = 1000 },
			"stream-tokens":    func() { o.streamTokens = 1000 },
			"brownout-clients": func() { o.brownoutClients = 50 },
			"hostile-sockets":  func() { o.hostileSockets = 200 },
			"hostile-answers":  func() { o.hostileAnswers = 4 },
		}
		for name, apply := range quick {
			if !set[name] {
				apply()
			}
		}
	}
	switch {
	case o.duration <= 0 || o.warmup < 0:
		return nil, fmt.Errorf("--duration must be positive and --warmup not negative")
	case o.rounds < 1:
		return nil, fmt.Errorf("--rounds must be at least 1")
	case o.concurrency < 1 || o.rate <= 0 || o.overloadRate <= 0:
		return nil, fmt.Errorf("--concurrency, --rate and --overload-rate must be positive")
	case o.overloadLimit < 1 || o.overloadQueue < 0 || o.overloadLatency <= 0:
		return nil, fmt.Errorf("--overload-limit and --overload-latency must be positive, --overload-queue not negative")
	case o.streams < 1 || o.streamTokens < 1 || o.brownoutClients < 1:
		return nil, fmt.Errorf("--streams, --stream-tokens and --brownout-clients must be positive")
	case o.hostileSockets < 1 || o.hostileBaselineSockets < 1 || o.hostileAnswers < 1 || o.hostileTimeout <= 0:
		return nil, fmt.Errorf("--hostile-sockets, --hostile-baseline-sockets, --hostile-answers and --hostile-timeout must be positive")
	case o.hostileAnswerBytes < 1<<20 || o.hostileBaselineBytes < 1<<20:
		return nil, fmt.Errorf("--hostile-answer-bytes and --hostile-baseline-answer-bytes must be at least 1 MiB")
	case o.brownoutTimeout >= o.brownoutLatency:
		return nil, fmt.Errorf("--brownout-timeout must be shorter than --brownout-latency")
	}
	return o, nil
}

// settings lists the knobs for the report.
func (o *options) settings() []string {
	s := []string{
		fmt.Sprintf("Phases: %s; %s measured per target per load phase, after %s warm-up, in %d interleaved rounds (all targets of a phase run at once, only one is loaded at a time)", strings.Join(o.phases, ", "), o.duration, o.warmup, o.rounds),
		"Each target has its own freshly started `sluice mock` upstream; the load generator, the proxy and the mock share the machine's CPUs",
		"Sluice: admission on (max_in_flight 20000, queue 150 outside the overload phase), Prometheus metrics on (scraped after the throughput phase), request log on (JSON, info, to a file)",
		fmt.Sprintf("HAProxy: HTTP mode, one server, keep-alive, no logging, maxconn above the stream count, `-db` foreground, option abortonclose %s", onOff(o.haproxyAbort)),
		"go-proxy: `net/http/httputil.ReverseProxy`, Transport with 20000 idle conns per host, no compression, FlushInterval -1 (`go run ./cmd/sluice-bench baseline-proxy`)",
		"Latencies are measured by the client from handing the request to its transport to the last body byte; `added` = target minus direct at the same percentile",
	}
	if o.baseline != "" {
		s = append(s, fmt.Sprintf("sluice-before: `%s` (--sluice-baseline), an earlier sluice with the same generated config, beside sluice in every phase but brownout; every mock is the current binary's", o.baseline))
	}
	if o.runs("hostile") {
		s = append(s, hostileSettings(o))
	}
	return s
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
