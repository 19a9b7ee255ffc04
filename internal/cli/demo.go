package cli

import (
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/config/upstreamscript"
	"github.com/sluice-gw/sluice/internal/harness/loadgen"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/server/gateway"
	"github.com/sluice-gw/sluice/internal/sim"
	"github.com/sluice-gw/sluice/internal/sim/report"
	"github.com/sluice-gw/sluice/internal/sim/scenario"
)

//go:embed demo.yaml
var demoScenario string

// The demo's two policies, as demo.yaml names them.
const (
	demoPolicy  = "sluice"
	plainPolicy = "plain proxy"
)

// demoPlan is one tour's times and addresses.
type demoPlan struct {
	duration, brownStart, brownEnd time.Duration
	listen, admin                  string
}

// demoDuration is how long the tour runs unless --duration says.
const demoDuration = 60 * time.Second

// brownout places the scripted brownout in the run: from a quarter of it
// to seven twelfths (15 s to 35 s of the default 60 s), leaving time to
// watch the gateway notice, fail over, and then probe and fail back.
func brownout(d time.Duration) (start, end time.Duration) {
	return (d / 4).Round(time.Millisecond), (d * 7 / 12).Round(time.Millisecond)
}

// scenarioText is demo.yaml with the plan's times and the addresses.
func (p demoPlan) scenarioText(primary, backup string) []byte {
	return []byte(strings.NewReplacer(
		"${LISTEN}", p.listen, "${ADMIN}", p.admin, "${PRIMARY}", primary, "${BACKUP}", backup,
		"${DURATION}", p.duration.String(), "${BROWNOUT_START}", p.brownStart.String(), "${BROWNOUT_END}", p.brownEnd.String(),
	).Replace(demoScenario))
}

// Demo implements "sluice demo": the fake providers, the gateway and the
// load generator, all in this process on loopback, through a scripted
// brownout of the primary, watched live; then the same traffic with and
// without Sluice's policies, the "without" from the simulator, which runs
// alongside so the tour takes --duration.
//
// Everything runs in one process rather than as child processes: nothing
// to build or clean up, one Ctrl-C ends it all, and the live view reads
// the gateway's dashboard recorder directly instead of scraping it. The
// components still talk real HTTP over loopback, as in production.
func Demo(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sluice demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	duration := fs.Duration("duration", demoDuration, "how long the traffic runs; the brownout runs from a quarter of it to seven twelfths")
	listen := fs.String("listen", "127.0.0.1:8080", "the gateway's client `address` (a free port when the default is taken)")
	admin := fs.String("admin", "127.0.0.1:9090", "the admin `address`: dashboard and /metrics (a free port when the default is taken)")
	noHint := fs.Bool("no-browser-hint", false, "print the dashboard URL without the suggestion to open it")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "sluice demo: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *duration < 10*time.Second || *duration > time.Hour {
		fmt.Fprintf(stderr, "sluice demo: --duration %v: want 10s to 1h (the brownout needs room), e.g. 60s\n", *duration)
		return 2
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runDemo(ctx, demoOptions{duration: *duration, listen: *listen, admin: *admin,
		fixedListen: set["listen"], fixedAdmin: set["admin"], hint: !*noHint}, stdout, stderr)
}

type demoOptions struct {
	duration                time.Duration
	listen, admin           string
	fixedListen, fixedAdmin bool
	hint                    bool
	// onReady, when set, is called with the dashboard URL once the
	// gateway serves (tests use it to open the page).
	onReady func(dashboard string)
}

func runDemo(ctx context.Context, o demoOptions, stdout, stderr io.Writer) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(stderr, "sluice demo: "+format+"\n", args...)
		return 1
	}
	client, err := listenOrFree(o.listen, o.fixedListen)
	if err != nil {
		return fail("--listen: %v", err)
	}
	adminLn, err := listenOrFree(o.admin, o.fixedAdmin)
	if err != nil {
		client.Close()
		return fail("--admin: %v", err)
	}
	plan := demoPlan{duration: o.duration, listen: client.Addr().String(), admin: adminLn.Addr().String()}
	plan.brownStart, plan.brownEnd = brownout(o.duration)

	// The fake providers: their scripts come from the scenario, and their
	// brownout clocks start now, with the traffic.
	mockCfg := func(name string) (mock.Config, error) {
		return upstreamscript.ScenarioUpstream(plan.scenarioText("x", "x"), name)
	}
	var addrs [2]string
	for i, name := range []string{"primary", "backup"} {
		cfg, err := mockCfg(name)
		if err != nil {
			client.Close()
			adminLn.Close()
			return fail("the %s provider's script: %v", name, err)
		}
		base, stopMock, err := mock.New(cfg).Start("127.0.0.1:0")
		if err != nil {
			client.Close()
			adminLn.Close()
			return fail("starting the %s provider: %v", name, err)
		}
		defer stopMock()
		addrs[i] = strings.TrimPrefix(base, "http://")
	}
	f, err := scenario.Parse(plan.scenarioText(addrs[0], addrs[1]), "demo.yaml")
	if err == nil {
		err = prepareDemoGateway(f, &plan)
	}
	if err != nil {
		client.Close()
		adminLn.Close()
		return fail("%v", err)
	}
	pol, _ := f.Policy(demoPolicy)
	cfg, err := f.PolicyConfig(pol)
	if err != nil {
		client.Close()
		adminLn.Close()
		return fail("%v", err)
	}
	cfg.Listen, cfg.AdminListen = plan.listen, plan.admin
	if err := cfg.Validate(); err != nil {
		client.Close()
		adminLn.Close()
		return fail("%v", err)
	}
	h, err := gateway.NewHost(cfg, gateway.Options{Logger: gateway.NewLogger(io.Discard, cfg.Log)})
	if err != nil {
		client.Close()
		adminLn.Close()
		return fail("%v", err)
	}
	served := make(chan error, 1)
	go func() { served <- h.Serve(client, adminLn) }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		h.Shutdown(sctx, 0)
		<-served
	}()

	url := "http://" + plan.admin + "/dashboard/"
	fmt.Fprintf(stdout, "sluice demo: %v of chat at 80 req/s through the gateway on %s; the primary browns out from %v to %v.\n",
		o.duration, plan.listen, plan.brownStart, plan.brownEnd)
	if o.hint {
		fmt.Fprintf(stdout, "Open the dashboard in a browser to watch: %s\n\n", url)
	} else {
		fmt.Fprintf(stdout, "dashboard: %s\n\n", url)
	}
	if o.onReady != nil {
		o.onReady(url)
	}

	// The "without" case, simulated alongside on a virtual clock.
	simDone := make(chan simResult, 1)
	go func() {
		res, err := sim.Run(f, sim.Options{})
		simDone <- simResult{res, err}
	}()

	start := time.Now()
	rec := h.Dashboard()
	marks := []*time.Timer{
		time.AfterFunc(plan.brownStart, func() { rec.Mark(time.Now(), "brownout starts (primary 6 s a call)") }),
		time.AfterFunc(plan.brownEnd, func() { rec.Mark(time.Now(), "brownout ends") }),
	}
	defer func() {
		for _, t := range marks {
			t.Stop()
		}
	}()
	view := newLiveView(stdout, rec, plan, start)
	stopView := view.run()
	row, loadErr := loadgen.Run(ctx, f, loadgen.Options{Target: "http://" + plan.listen, Policy: demoPolicy,
		Metrics: "http://" + plan.admin + "/metrics", Notes: io.Discard})
	stopView()
	wall := time.Since(start)
	if loadErr != nil && !errors.Is(loadErr, context.Canceled) {
		return fail("load: %v", loadErr)
	}
	if ctx.Err() != nil {
		// No table: the requests cut off by the interrupt would count as
		// users who gave up, which is not what the gateway did.
		answered := 0
		if row != nil {
			answered = row.Counts[report.OK]
		}
		fmt.Fprintf(stdout, "\nsluice demo: interrupted after %v (%d requests answered within patience); stopped.\n", wall.Round(100*time.Millisecond), answered)
		return 130
	}
	sr := <-simDone
	if sr.err != nil {
		return fail("simulator: %v", sr.err)
	}
	writeDemoSummary(stdout, row, sr.res, wall, url)
	return 0
}

type simResult struct {
	res *sim.Result
	err error
}

// prepareDemoGateway checks that the embedded scenario has both policies.
func prepareDemoGateway(f *scenario.File, _ *demoPlan) error {
	for _, n := range []string{demoPolicy, plainPolicy} {
		if _, err := f.Policy(n); err != nil {
			return err
		}
	}
	return nil
}

// listenOrFree listens on addr; when addr is a default the user did not
// choose and it is taken, it listens on a free loopback port instead.
func listenOrFree(addr string, fixed bool) (net.Listener, error) {
	if !fixed && !config.Loopback(addr) {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil && !fixed {
		return net.Listen("tcp", "127.0.0.1:0")
	}
	return ln, err
}

// writeDemoSummary prints the closing table: the run just measured, and
// the simulator's rows for both policies.
func writeDemoSummary(w io.Writer, real *report.Row, res *sim.Result, wall time.Duration, url string) {
	rows := []*report.Row{}
	if real != nil {
		real.Name = "with Sluice (measured)"
		rows = append(rows, real)
	}
	for _, r := range res.Rows {
		switch r.Name {
		case demoPolicy:
			r.Name = "with Sluice (simulated)"
		case plainPolicy:
			r.Name = "plain proxy (simulated)"
		}
		rows = append(rows, r)
	}
	fmt.Fprintf(w, "\nThe same traffic with and without Sluice's policies (%v of wall time):\n\n", wall.Round(100*time.Millisecond))
	report.WriteTable(w, rows)
	fmt.Fprintf(w, "\nok: answered within the user's patience; timedOut: the user gave up waiting (a plain proxy leaves them on the slow primary).\n")
	fmt.Fprintf(w, "Every gateway serves this dashboard on its admin address (sluice serve: http://127.0.0.1:9090/dashboard/); this run's was %s.\n", url)
}
