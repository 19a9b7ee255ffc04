package sim

import (
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	"github.com/sluice-gw/sluice/internal/core/lifecycle/lifecycletest"
	"github.com/sluice-gw/sluice/internal/core/quota"
	upmodel "github.com/sluice-gw/sluice/internal/model/upstream"
	"github.com/sluice-gw/sluice/internal/sim/report"
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
