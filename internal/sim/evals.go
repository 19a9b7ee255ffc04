package sim

import (
	"math/rand/v2"
	"time"

	"github.com/sluice-gw/sluice/internal/core/evals"
	"github.com/sluice-gw/sluice/internal/policy"
)

// Evals in the simulator. A model's eval set (models[].evals) runs on the
// same evals.Core the gateway's evalrunner.Runner drives, on the virtual
// clock, and a target it degrades is degraded in every replica's engine
// (lifecycle.Engine.SetEvalDegraded), so routing around it is the
// gateway's own code. What the simulator does not model is the eval
// calls' cost: each is answered at once, right with its provider's
// quality (the upstream's quality:, upstream.Config.Quality), and takes no
// capacity; a set is a few calls an interval against thousands of
// requests. One schedule serves a whole fleet.
//
// Answers are graded the same way: a request answered OK by a provider
// of quality q is correct with probability q, drawn from a source of its
// own so that grading changes no other draw (the table's correct and
// correct/s columns).

type simEvals struct {
	core *evals.Core
	rng  *rand.Rand
	// scope maps a provider's name to its index in run.ups.
	scope map[string]int
	at    time.Duration // the pending evEval, -1 if none
}

// startEvals sets the evals up when the configuration declares any.
func (r *run) startEvals() error {
	sets, err := policy.EvalSets(r.cfg)
	if err != nil || len(sets) == 0 {
		return err
	}
	b := r.cfg.Evals.WithDefaults()
	e := &simEvals{rng: rand.New(rand.NewPCG(r.sc.Seed, r.sc.Seed^0xe7a15)), scope: map[string]int{}, at: -1}
	e.core = evals.NewCore(evals.Options{Sets: sets, MaxInFlight: b.MaxInFlight, CallsPerMinute: b.MaxCallsPerMinute, Seed: r.sc.Seed ^ 0xe7a1}, r.clock(0))
	for i, p := range r.cfg.Providers {
		e.scope[p.Name] = i
	}
	r.evals = e
	return nil
}

// evalTick runs the eval calls due now, each answered at once.
func (r *run) evalTick() {
	e := r.evals
	e.at = -1
	now := r.clock(r.now)
	for {
		calls := e.core.Due(now)
		if len(calls) == 0 {
			break
		}
		for _, c := range calls {
			t := c.Set.Targets[c.Target]
			res := evals.Result{Answered: true}
			if q := r.ups[e.scope[t.Provider]].quality; q < 1 && e.rng.Float64() >= q {
				res.Reason = "wrong"
			}
			for _, tr := range e.core.Done(now, c.ID, res) {
				if tr.Degraded {
					r.row.EvalDegraded++
				}
				for _, rp := range r.reps {
					rp.eng.SetEvalDegraded(tr.Model, tr.Target, tr.Degraded)
				}
			}
		}
	}
}

// armEvals schedules the evals' next timer.
func (r *run) armEvals() {
	e := r.evals
	if e == nil {
		return
	}
	next, ok := e.core.NextTimer()
	if !ok {
		return
	}
	at := max(r.quantise(sinceOrigin(next)), r.now)
	if e.at >= 0 && e.at <= at {
		return
	}
	e.at = at
	r.seq++
	r.events.push(event{at: at, order: order(classEngine, r.seq), kind: evEval})
}

// reapplyEvals tells a restarted replica's engine what the evals found.
func (r *run) reapplyEvals(rp *replica) {
	if r.evals == nil {
		return
	}
	for _, st := range r.evals.core.Status() {
		for i, t := range st.Targets {
			if t.Degraded {
				rp.eng.SetEvalDegraded(st.Model, i, true)
			}
		}
	}
}

// grade counts an OK answer from upstream u as correct with u's quality.
func (r *run) grade(u *upstream) {
	if u == nil || !r.row.Graded {
		return
	}
	if u.quality >= 1 || r.gradeRng.Float64() < u.quality {
		r.row.Correct++
	}
}
