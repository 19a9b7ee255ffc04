package chaos

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/sluice-gw/sluice/internal/harness/procs"
)

// The bounds every row is held to, and why.
const (
	// cancelWithin is how soon after the last client left every
	// upstream call must have ended (DESIGN.md's invariant 2).
	cancelWithin = 100 * time.Millisecond
	// settleWithin bounds the wait for the gateway's gauges and
	// goroutines to return to rest once traffic has stopped. Nothing in
	// the gateway holds work past its clients, but a loaded 2-core box
	// can take a while to run the last deferred releases and close the
	// connections the clients left.
	settleWithin = 10 * time.Second
	// goroutineSlack is what "back to baseline" allows beyond the idle
	// upstream connections the gateway's transport keeps for reuse (two
	// goroutines each, counted exactly at the relay): timers, the log
	// writer and the runtime's own come and go.
	goroutineSlack = 16
	// RSS cannot be held to "back to baseline" the way goroutines are:
	// an idle Go process keeps its freed heap until the next GC (forced
	// every two minutes) and hands it to the kernel at the scavenger's
	// pace, so RSS after a burst sits near its peak for minutes. What a
	// leak does instead is grow with the requests served, so the check
	// is that the second half of a fault's run, which serves as many
	// requests as the first, peaks no higher than the first half's peak
	// plus rssGrowthSlack, or a quarter of the first half's rise over
	// the baseline, whichever is more (the heap goal's own drift).
	rssGrowthSlack = 32 << 20
)

// run is one fault's processes, clients and observations. Every process
// in it is new: a fault never inherits another's state.
type run struct {
	bin, dir string
	span     time.Duration // how long the fault's traffic runs
	short    bool
	// overload is how long overload-10x runs; connections, how many
	// clients many-connections holds open at once.
	overload    time.Duration
	connections int

	group   procs.Group
	mocks   int
	gw      *gatewayProc
	ups     []*upstream
	clients []*client
	tally   tally

	before usage
	samp   *sampler
	row    row
}

// upstream is a sluice mock behind a relay of the run's own: the relay
// injects the toxics, and counts the gateway's open connections to the
// provider, which the goroutine check needs.
type upstream struct {
	mock  *mockProc
	relay *relay
}

// url is the provider's base_url for the gateway's config.
func (u *upstream) url() string { return "http://" + u.relay.addr() + "/v1" }

// startUpstream runs a mock (args added to the run's) behind a relay.
func (r *run) startUpstream(args ...string) (*upstream, error) {
	m, err := r.startMock(args...)
	if err != nil {
		return nil, err
	}
	rl, err := newRelay(m.addr)
	if err != nil {
		return nil, err
	}
	u := &upstream{mock: m, relay: rl}
	r.ups = append(r.ups, u)
	return u, nil
}

// note adds a fact to the row; fail adds a failed check.
func (r *run) note(format string, a ...any) {
	r.row.Notes = append(r.row.Notes, fmt.Sprintf(format, a...))
}

func (r *run) fail(format string, a ...any) {
	r.row.Fails = append(r.row.Fails, fmt.Sprintf(format, a...))
}

// begin records the gateway's resting state and starts sampling it.
// A fault calls it once its processes are up, before its traffic.
func (r *run) begin() error {
	m, err := scrape(r.gw.admin)
	if err != nil {
		return err
	}
	r.before = usageOf(m)
	r.samp = startSampler(r.gw.admin, 200*time.Millisecond)
	return nil
}

// measure fills the row once every client has finished: the checks
// that hold for every fault.
func (r *run) measure() {
	left := time.Now()
	r.row.Sent, r.row.Answered = r.tally.sent.Load(), r.tally.answered()
	r.row.OK, r.row.Errors = r.tally.count(vOK), r.tally.count(vError)
	r.row.Cut, r.row.Left = r.tally.count(vCut), r.tally.count(vLeft)
	r.row.Bad = r.tally.count(vMalformed) + r.tally.count(vNone)
	r.row.Double = r.tally.doubleAnswers()
	if kinds := r.tally.errorKinds(); kinds != "" {
		r.note("errors and cuts: %s", kinds)
	}
	if r.row.Sent == 0 {
		r.fail("no traffic was sent")
	}
	if r.row.Bad > 0 {
		r.fail("%d requests without one well-formed answer, e.g. %s", r.row.Bad, strings.Join(r.tally.examples, "; "))
	}
	if r.row.Double > 0 {
		r.fail("%d idempotency keys answered by two generations", r.row.Double)
	}
	r.measureUpstream(left)
	for _, c := range r.clients {
		c.hc.CloseIdleConnections()
	}
	if r.samp != nil {
		r.row.Peak, r.row.FirstHalf, r.row.SecondHalf = r.samp.finish()
		if growth, allowed := r.row.rssGrowth(); growth > allowed {
			r.fail("RSS grew %.0f MiB in the run's second half, more than the %.0f MiB allowed", mib(growth), mib(allowed))
		}
	}
	r.row.Before = r.before
	if r.gw == nil || r.gw.Exited() {
		r.row.GatewayExited = true
		return
	}
	r.measureGateway()
}

// measureUpstream counts the calls still running at the providers
// cancelWithin after the last client left (0 unless a cancel was lost),
// and how long they took to reach none.
func (r *run) measureUpstream(left time.Time) {
	inFlight := func() int64 {
		var n int64
		for _, u := range r.ups {
			if u.mock.Exited() {
				continue
			}
			if st, err := u.mock.stats(); err == nil {
				n += st.InFlight
			}
		}
		return n
	}
	r.row.UpstreamLeft = -1
	waitUntil(settleWithin, func() bool {
		// A count is as of when it was asked for: on a busy machine the
		// answer can take a while to come back.
		asked := time.Since(left)
		n := inFlight()
		if r.row.UpstreamLeft < 0 && asked >= cancelWithin {
			r.row.UpstreamLeft = n
		}
		if n == 0 && r.row.UpstreamZero == 0 {
			r.row.UpstreamZero = asked
		}
		return n == 0 && r.row.UpstreamLeft >= 0
	})
	if r.row.UpstreamLeft != 0 {
		r.fail("%d upstream calls still running %v after the last client left (none after %v)", r.row.UpstreamLeft, cancelWithin, r.row.UpstreamZero)
	}
}

// measureGateway reads the gateway at rest: its leak gauges must be 0,
// its goroutines back to baseline, its RSS near it.
func (r *run) measureGateway() {
	var m map[string]float64
	settled := waitUntil(settleWithin, func() bool {
		var err error
		m, err = scrape(r.gw.admin)
		if err != nil {
			return false
		}
		leak, _ := leaked(m)
		return leak == 0 && usageOf(m).Goroutines <= r.goroutineBound()
	})
	if m == nil {
		r.fail("the gateway's /metrics did not answer after the fault")
		return
	}
	r.row.After = usageOf(m)
	r.row.GoroutineBound = r.goroutineBound()
	leak, which := leaked(m)
	r.row.Leaked = leak
	if leak != 0 {
		r.fail("leaked after %v: %s", settleWithin, strings.Join(which, ", "))
	}
	if !settled && r.row.After.Goroutines > r.row.GoroutineBound {
		r.fail("%d goroutines after the fault, over the bound of %d", r.row.After.Goroutines, r.row.GoroutineBound)
	}
}

// goroutineBound is the baseline, plus two goroutines for each idle
// connection the gateway's transport keeps open to a provider (its read
// and write loops), plus the slack.
func (r *run) goroutineBound() int {
	conns := 0
	for _, u := range r.ups {
		conns += u.relay.open()
	}
	return r.before.Goroutines + 2*conns + goroutineSlack
}

func mib(b float64) float64 { return b / (1 << 20) }

// close stops everything the run started and removes its files.
func (r *run) close() {
	for _, c := range r.clients {
		c.hc.CloseIdleConnections()
	}
	r.group.StopAll()
	for _, u := range r.ups {
		u.relay.close()
	}
	os.RemoveAll(r.dir)
}
