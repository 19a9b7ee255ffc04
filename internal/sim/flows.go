package sim

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	"github.com/sluice-gw/sluice/internal/model/workload"
	"github.com/sluice-gw/sluice/internal/sim/report"
	"github.com/sluice-gw/sluice/internal/sim/scenario"
)

// flow is one traffic stream of the scenario (scenario.Clients.All): its
// arrivals, its key, its model's route and its own random draws. The
// main stream (index 0) draws its arrivals, priorities and retries from
// the sources the simulator always used, so a scenario without streams
// replays exactly as before; every other stream has sources of its own,
// derived from the seed and its index, and draws nothing from the
// others'.
type flow struct {
	c     scenario.Clients
	sched workload.Schedule
	arr   *workload.Arrivals
	// rng draws priorities and retry delays; tokens draws prompt sizes.
	rng, tokens *rand.Rand
	shares      workload.Mix
	prompt      workload.Sizes
	// key is the stream's key, from 1 in the policy's keys[] (the order
	// policy.FromConfig gives the engine's budgets), 0 for none.
	key int
	// With a key, its class is the requests' class (keyed: the key has
	// a priority of its own), or the most urgent one a drawn class may
	// be (ceiling: admission.default_priority), as the gateway treats
	// a keyed request's X-Sluice-Priority.
	keyed      bool
	class      admission.Priority
	ceiling    admission.Priority
	hasCeiling bool
	mayDegrade bool
	// route is the model's route, as policy.FromConfig builds it for
	// the gateway too.
	route lifecycle.Route
	row   *report.StreamRow // nil when the scenario has no streams
	index int
	// gov is the stream's client process's retry budget and adaptive
	// throttle, when its clients are the client package (retry strategy
	// sluice), nil otherwise.
	gov *workload.Governor
	// next is its next new request's evArrive, when pending.
	next    event
	pending bool
}

// newFlows builds the run's streams for its policy's config.
func (r *run) newFlows() error {
	sc := r.sc
	seed := sc.Seed
	withRows := sc.Clients.HasStreams()
	defPri, ok := admission.ParsePriority(r.cfg.Admission.DefaultPriority)
	if !ok {
		defPri = admission.Interactive
	}
	for i, c := range sc.Clients.All() {
		fl := &flow{c: c, index: i, shares: c.PriorityShares(), prompt: c.Prompt(), mayDegrade: true}
		fl.sched = c.Schedule(r.o.RPSScale, 1)
		k := uint64(i)
		if i == 0 {
			fl.rng = r.rng
			fl.arr = workload.NewArrivals(fl.sched, sc.Duration, c.Spacing(), rand.New(rand.NewPCG(seed^0xa771, seed)))
		} else {
			fl.rng = rand.New(rand.NewPCG(seed^0x51ce^k*0x9e3779b97f4a7c15, seed+k))
			fl.arr = workload.NewArrivals(fl.sched, sc.Duration, c.Spacing(),
				rand.New(rand.NewPCG(seed^0xa771^k*0xbf58476d1ce4e5b9, seed+k)))
		}
		fl.tokens = rand.New(rand.NewPCG(seed^0x7043, k))
		rt, ok := r.routes[c.Model]
		if !ok || len(rt.Targets) == 0 {
			return fmt.Errorf("scenario: stream %s: model %q is not a configured model", c.Name, c.Model)
		}
		fl.route = rt
		if c.Key != "" {
			found := false
			for j := range r.cfg.Keys {
				kc := &r.cfg.Keys[j]
				if kc.Name != c.Key {
					continue
				}
				found = true
				fl.key, fl.mayDegrade = j+1, kc.MayDegrade()
				if p, ok := admission.ParsePriority(kc.Priority); ok && kc.Priority != "" {
					fl.keyed, fl.class = true, p
				} else {
					fl.hasCeiling, fl.ceiling = true, defPri
				}
			}
			if !found {
				return fmt.Errorf("scenario: stream %s: key %q is not in this policy's keys", c.Name, c.Key)
			}
		}
		if withRows {
			fl.row = &report.StreamRow{Name: c.Name}
		}
		if r.retry.Strategy == workload.Governed {
			fl.gov = workload.NewGovernor()
		}
		r.flows = append(r.flows, fl)
	}
	if withRows {
		for _, fl := range r.flows {
			r.row.Streams = append(r.row.Streams, fl.row)
		}
	}
	return nil
}

// pushArrival schedules a stream's next new request. A stream has at
// most one pending, which it holds itself (flow.next) rather than the
// event heap; r.arrival is the stream whose comes first.
func (r *run) pushArrival(at time.Duration, fl *flow) {
	r.seq++
	fl.next, fl.pending = event{at: r.quantise(at), order: order(classArrival, r.seq), kind: evArrive, flow: uint16(fl.index)}, true
	if a := r.arrival; a == nil || fl.next.before(&a.next) {
		r.arrival = fl
	}
}

// popArrival takes the first stream's pending arrival.
func (r *run) popArrival() event {
	e := r.arrival.next
	r.arrival.pending = false
	r.arrival = nil
	for _, fl := range r.flows {
		if fl.pending && (r.arrival == nil || fl.next.before(&r.arrival.next)) {
			r.arrival = fl
		}
	}
	return e
}

// priority is a new request's class, as lifecycle.Classify decides it
// for the gateway: a stream with a key of its own class sends no header;
// any other sends the class it draws as its X-Sluice-Priority, and one
// without a key stands for callers whose credentials are declared
// critical keys, so what it draws is what it gets.
func (fl *flow) priority() admission.Priority {
	c := lifecycle.Claim{Keyed: fl.keyed || fl.hasCeiling, Key: fl.class, Declared: true}
	if fl.hasCeiling {
		c.Key = fl.ceiling
	}
	if !fl.keyed {
		c.Header, c.Asked = fl.draw(), true
	}
	p, _ := lifecycle.Classify(c)
	return p
}

func (fl *flow) draw() admission.Priority {
	return admission.Priority(fl.shares.Class(fl.rng.Float64()))
}

// promptTokens draws a new request's prompt length.
func (fl *flow) promptTokens() int64 { return int64(fl.prompt.Draw(fl.tokens)) }

// request is the engine's request for q's attempt, as the gateway builds
// it: its key, its input tokens and max_tokens, and, for a background
// request of a model with degrade:, served degraded when lifecycle.Degrade
// says so (another model's route, a lower max_tokens). Trimming the
// history (degrade.trim_to) is not simulated: the simulated prompt is
// one message, and the gateway never drops a request's last message.
func (r *run) request(q *request, deadline time.Duration) lifecycle.Request {
	fl := q.st
	now := r.clock(r.now)
	stream := r.sc.Clients.Stream
	req := fl.route.Request(q.pri, stream, now, deadline)
	req.Key, req.InputTokens, req.MaxOutput = fl.key, q.inTok, int64(fl.c.MaxTokens)
	req.Choices = 1 // simulated clients ask for one answer
	q.route = &fl.route
	if d := fl.route.Degrade; d != nil {
		dg := lifecycle.Degrade(req, r.degradeAsk(q, d))
		var to lifecycle.Route
		if rt, ok := r.routeRefs[dg.To]; ok && dg.To != "" {
			to, q.route = *rt, rt
		} else {
			dg.To = ""
		}
		req = dg.Apply(req, to, now, deadline)
	}
	q.maxOut, q.degraded = req.MaxOutput, req.Degraded
	return req
}

// refused answers an attempt refused on arrival, by the engine or by
// its key's shared budget, as lifecycle.Answer says.
func (r *run) refused(q *request, a lifecycle.Arrival) {
	r.reply(q, lifecycle.Answer(a.Rejection()))
}

// reply ends an attempt Sluice refused, as the gateway answers it
// (replied).
func (r *run) reply(q *request, a lifecycle.Reply) {
	if a.Kind == lifecycle.ReplyOverloaded {
		r.shedAnswer(q, a)
		return
	}
	s := repliedOf(a)
	r.failStatus(q, s.outcome, s.status, s.retryAfter, s.noRetry)
}

// replied is a reply as the simulator's client sees it: the outcome it
// records, the status it judges a retry by, the wait and whether it was
// told not to retry.
type replied struct {
	outcome    report.Outcome
	status     int
	retryAfter time.Duration
	noRetry    bool
}

// repliedOf: a key's budget is 429 with its exact wait, a request no
// budget could ever take 413 (never retried), a deadline passed in the
// queue 504, anything else a shed.
func repliedOf(a lifecycle.Reply) replied {
	switch a.Kind {
	case lifecycle.ReplyTooLarge:
		return replied{outcome: report.Failed, status: http.StatusRequestEntityTooLarge}
	case lifecycle.ReplyRateLimited:
		return replied{outcome: report.RateLimited, status: clientStatus(report.RateLimited), retryAfter: a.RetryAfter}
	case lifecycle.ReplyTimedOut:
		return replied{outcome: report.TimedOut, status: clientStatus(report.TimedOut)}
	}
	return replied{outcome: report.Shed, status: clientStatus(report.Shed), retryAfter: a.RetryAfter, noRetry: a.NoRetry}
}
