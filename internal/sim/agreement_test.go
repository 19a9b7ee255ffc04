package sim

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	"github.com/sluice-gw/sluice/internal/core/lifecycle/lifecycletest"
	"github.com/sluice-gw/sluice/internal/core/quota"
	upmodel "github.com/sluice-gw/sluice/internal/model/upstream"
	"github.com/sluice-gw/sluice/internal/sim/report"
	"github.com/sluice-gw/sluice/internal/sim/scenario"
)

// The agreement tests feed lifecycletest's cases to the simulator's side
// of each rule that the gateway once kept a copy of; the gateway's tests
// of the same name feed it the same cases
// (server/gateway/agreement_test.go), so both hosts decide every case
// alike.

// TestAgreementClassify: each case the simulator has a stream for, its
// drawn class as the header.
func TestAgreementClassify(t *testing.T) {
	for _, c := range lifecycletest.Classify {
		if !c.SimExpresses() {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			fl := &flow{rng: rand.New(rand.NewPCG(1, 2))}
			fl.shares[c.Claim.Header] = 1 // the draw is the header
			switch {
			case c.Claim.Keyed && !c.Claim.Asked:
				fl.keyed, fl.class = true, c.Claim.Key
			case c.Claim.Keyed:
				fl.hasCeiling, fl.ceiling = true, c.Claim.Key
			}
			if p := fl.priority(); p != c.Want {
				t.Fatalf("priority %v, want %v", p, c.Want)
			}
		})
	}
}

// TestAgreementAnswer: each case's refusal as the simulator's client
// sees it.
func TestAgreementAnswer(t *testing.T) {
	for _, c := range lifecycletest.Answers {
		t.Run(c.Name, func(t *testing.T) {
			got := repliedOf(lifecycle.Answer(c.Rejection))
			ra := int((got.retryAfter + time.Second - 1) / time.Second)
			if got.status != c.Status || ra != c.RetryAfter || got.noRetry != c.Want.NoRetry {
				t.Fatalf("answered %d, Retry-After %d, no retry %v; want %d, %d, %v", got.status, ra, got.noRetry, c.Status, c.RetryAfter, c.Want.NoRetry)
			}
			if c.Status == http.StatusRequestEntityTooLarge && got.outcome != report.Failed {
				t.Errorf("a 413 recorded as %v", got.outcome)
			}
		})
	}
}

// TestAgreementDegrade: each case's key, its budget in the fleet's
// store, and the engine's pressure, through degradeAsk.
func TestAgreementDegrade(t *testing.T) {
	d := lifecycletest.Degradation
	for _, c := range lifecycletest.Degrades {
		t.Run(c.Name, func(t *testing.T) {
			r := &run{}
			q := &request{pri: c.Priority, st: &flow{key: 1, mayDegrade: !c.KeyOptsOut}, rep: &replica{}}
			if c.Remaining >= 0 {
				l := quota.Limits{quota.Requests: {PerMinute: 100}}
				b, err := quota.New(l)
				if err != nil {
					t.Fatal(err)
				}
				b.Take(r.clock(0), quota.Cost{Requests: 100 - c.Remaining})
				r.fleet = &fleet{shared: true, keys: []*quota.Budget{b}, limits: []quota.Limits{l}}
			}
			ask := r.degradeAsk(q, &d)
			ask.Pressure = func(lifecycle.Request, lifecycle.Degradation) bool { return c.Pressure }
			got := lifecycle.Degrade(lifecycle.Request{Priority: c.Priority, Model: lifecycletest.Model, MaxOutput: c.MaxOutput, Key: 1}, ask)
			if got != c.Want {
				t.Fatalf("Degrade = %+v, want %+v", got, c.Want)
			}
		})
	}
}

// TestAgreementEnding: each case's ending, from the mock's plan for the
// call (planEnd) to what the simulator reports (upCall.result).
func TestAgreementEnding(t *testing.T) {
	for _, c := range lifecycletest.Endings {
		t.Run(c.Name, func(t *testing.T) {
			e := c.Ending
			var f *upmodel.Failure
			switch e.Kind {
			case lifecycle.EndRefused:
				f = &upmodel.Failure{Kind: upmodel.FailStatus, Status: e.Status, RetryAfter: e.RetryAfter}
			case lifecycle.EndUnreachable:
				f = &upmodel.Failure{Kind: upmodel.FailReset}
			case lifecycle.EndBroken:
				f = &upmodel.Failure{Kind: upmodel.FailMalformed}
			}
			u := &upCall{plan: upmodel.Plan{Fail: f}}
			u.endKind, u.status = planEnd(f)
			if got := u.result(); got != c.Want {
				t.Fatalf("result = %+v, want %+v", got, c.Want)
			}
		})
	}
}

// TestAgreementRetry: each case's calls fail in turn, planned as the mock
// plans them, and the simulator asks for a retry after each before it
// ends the call, as upstreamDone does; the engine alone decides.
func TestAgreementRetry(t *testing.T) {
	for _, c := range lifecycletest.Retries {
		t.Run(c.Name, func(t *testing.T) {
			e := lifecycle.New(lifecycletest.RetryConfig())
			now := origin
			req := lifecycle.Request{Targets: []int{0, 1}, Deadline: now.Add(time.Minute)}
			if c.Hedge {
				req.HedgeAfter = time.Millisecond
			}
			a, _ := e.Arrive(now, req)
			if c.Hedge {
				now = now.Add(time.Millisecond)
				if rd := e.Tick(now); len(rd.Second) != 1 {
					t.Fatalf("no hedge: %+v", rd)
				}
			}
			for i, s := range c.Steps {
				f := &upmodel.Failure{Kind: upmodel.FailStatus, Status: s.Status, RetryAfter: s.RetryAfter}
				if s.Status == 0 {
					f = &upmodel.Failure{Kind: upmodel.FailReset}
				}
				u := &upCall{plan: upmodel.Plan{Fail: f}, attempt: s.Attempt}
				u.endKind, u.status = planEnd(f)
				o := u.result()
				rc, ok := e.RetryCall(now, a.ID, o)
				if ok != s.Retried {
					t.Fatalf("step %d: retried %v, want %v", i, ok, s.Retried)
				}
				if ok && (rc.Target != s.Target || rc.Why != s.Why) {
					t.Fatalf("step %d: retry %+v, want target %d (%v)", i, rc, s.Target, s.Why)
				}
				e.End(now, a.ID, s.Attempt, o)
			}
		})
	}
}

// TestAgreementMend: each case the simulator plans a stream for, as the
// mock's failure that ends it so, through generate: whether the call is
// continued, for which cause, and, for a complete stream, that it ends
// answered.
func TestAgreementMend(t *testing.T) {
	for _, c := range lifecycletest.Mends {
		if !c.SimExpresses() {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			var f *upmodel.Failure
			switch c.Stop {
			case lifecycle.StopCut:
				f = &upmodel.Failure{Kind: upmodel.FailReset, AfterTokens: 8}
			case lifecycle.StopUnterminated:
				f = &upmodel.Failure{Kind: upmodel.FailEOF, AfterTokens: 8}
				if c.Facts.Finished {
					f = &upmodel.Failure{Kind: upmodel.FailNoDone}
				}
			case lifecycle.StopMalformed:
				f = &upmodel.Failure{Kind: upmodel.FailMalformed, AfterTokens: 8}
			case lifecycle.StopStalled:
				f = &upmodel.Failure{Kind: upmodel.FailStall, AfterTokens: 8}
			}
			r := &run{cfg: config.Default("http://127.0.0.1:1"), sc: &scenario.Scenario{}}
			r.sc.Clients.Stream = true
			u := newUpstream(upmodel.Config{TTFT: 100 * time.Millisecond, TPOT: 10 * time.Millisecond}, false)
			call := &upCall{u: u, q: &request{}, plan: upmodel.Plan{TTFT: 100 * time.Millisecond, TPOTScale: 1, Tokens: 32, Fail: f}}
			r.generate(call)
			if call.midStream != c.Mended || c.Mended && call.cause != c.Cause {
				t.Fatalf("continued %v (cause %v); want %v (%v)", call.midStream, call.cause, c.Mended, c.Cause)
			}
			if answered := call.endKind == lifecycle.EndAnswered; answered != c.Complete {
				t.Fatalf("ends %v; complete %v", call.endKind, c.Complete)
			}
		})
	}
}

// TestAgreementContinue: each case's model, in a scenario's config, as
// the simulator builds a request of it: what each target can do (the
// caps its continuation hands the engine), and where a stream broken on
// its first target goes on.
func TestAgreementContinue(t *testing.T) {
	opt := func(s string) string {
		if s == "" {
			return ""
		}
		return ", continuation: " + s
	}
	for _, c := range lifecycletest.Caps {
		t.Run(c.Name, func(t *testing.T) {
			y := fmt.Sprintf(`
providers:
  - {name: base, kind: openai, continuation: none, base_url: http://127.0.0.1:1/v1}
  - {name: p, kind: %s, base_url: http://127.0.0.1:2/v1%s}
models:
  - name: m
    targets: [{provider: base, model: x}, {provider: p, model: x%s}]
scenario:
  name: caps
  seed: 1
  duration: 1s
  clients: {model: m, rate: [{at: 0s, rps: 1}], stream: true}
  upstreams:
    base: {ttft: 100ms, tpot: 10ms}
    p: {ttft: 100ms, tpot: 10ms}
`, c.Kind, opt(c.Provider), opt(c.Target))
			f, err := scenario.Parse([]byte(y), "caps.yaml")
			if err != nil {
				t.Fatal(err)
			}
			p := f.Policies()[0]
			cfg, err := f.PolicyConfig(p)
			if err != nil {
				t.Fatal(err)
			}
			r, err := newRun(f, p, cfg, Options{RPSScale: 1, SampleEvery: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			q := &request{st: r.flows[0], pri: 1}
			r.request(q, time.Minute)
			caps := r.contCaps(q)
			if len(caps) != 2 || caps[0] != (lifecycle.ContinueCaps{}) || caps[1] != c.Want {
				t.Fatalf("caps %+v, want [{} %+v]", caps, c.Want)
			}
			if got := lifecycletest.ContinueOn(caps); got != c.WantContinue() {
				t.Fatalf("continued %+v, want %+v", got, c.WantContinue())
			}
		})
	}
}
