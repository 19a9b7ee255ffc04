package lifecycle

import "time"

// The first-token deadline: a call that has sent no first token (for a
// stream; no answer at all for a whole one; no headers is the same case)
// by a deadline derived from its own target's recent time to first token
// gets a second call on the request's next target, racing it exactly as
// a hedge does: the first call to produce a token wins and the host
// cancels the other upstream. It is on by default and needs no traffic
// to work: with no history yet, the deadline is the ceiling, so a single
// request into a silent provider is rescued after the ceiling, not after
// the provider's whole timeout.
//
// The deadline is Factor times the target's EWMA of its recent times to
// first token (streams and whole answers apart, since a whole answer's
// "first token" is its last), no less than Floor, no more than Ceiling
// (Request.FirstTokenCeiling overrides Ceiling per model: a reasoning
// model may be silent for longer), and no more than half the request's
// remaining time, so the second call has as long as the first had.
//
// Accounting. The second call goes to ANOTHER target only (never the
// silent one, which would only add load to it), and it is charged to
// the hedge budget, as a hedge is: it is a hedge whose delay the engine
// chose, so invariant 5 holds for it unchanged. The silent provider's
// retry budget is not touched. A first call that loses such a race is
// reported to its breaker as slow, since another provider answered
// before it: a silent provider is taken out of rotation by its silence,
// not kept in it because its calls were cancelled.
//
// With hedge_after set too, whichever delay is shorter fires: a
// hedge_after at or below the first-token deadline hedges as it always
// did (to the next target or the same one); a longer one is pre-empted
// by the first-token deadline, and comes back if that found no target.

// FirstTokenConfig configures the first-token deadline. A zero Ceiling
// turns it off (an engine built in code); the config's defaults turn it
// on (config.DefaultFirstTokenCeiling).
type FirstTokenConfig struct {
	// Ceiling bounds the deadline above, and is the deadline of a target
	// with no history yet.
	Ceiling time.Duration
	// Floor bounds it below, so a target whose first tokens come in
	// milliseconds is not raced on every hiccup.
	Floor time.Duration
	// Factor multiplies the target's recent TTFT (its EWMA).
	Factor float64
}

// ttftAlpha weighs each new time to first token in a target's EWMA: the
// last ten or so calls dominate, so a target that slowed is followed
// within a few calls and one slow call moves the deadline by a fifth.
const ttftAlpha = 0.2

// ttftEWMA is one target's recent time to first token, for one kind of
// call (stream or whole).
type ttftEWMA struct {
	mean float64 // nanoseconds
	n    int
}

func (t *ttftEWMA) add(d time.Duration) {
	if t.n == 0 {
		t.mean = float64(d)
	} else {
		t.mean += ttftAlpha * (float64(d) - t.mean)
	}
	t.n++
}

// firstToken holds the deadline's config and each scope's history.
type firstToken struct {
	cfg FirstTokenConfig
	// ttft[s][0] is scope s's whole answers', [1] its streams'.
	ttft [][2]ttftEWMA
}

func streamIdx(stream bool) int {
	if stream {
		return 1
	}
	return 0
}

// noteTTFT feeds a call's time to first token into its scope's history:
// only calls that answered, and whose first token came.
func (e *Engine) noteTTFT(s int, stream bool, started, firstByte time.Time, o Outcome) {
	if o.Kind != OK || started.IsZero() || firstByte.IsZero() || s < 0 || s >= len(e.scopes) {
		return
	}
	if e.ft.ttft == nil {
		e.ft.ttft = make([][2]ttftEWMA, len(e.scopes))
	}
	e.ft.ttft[s][streamIdx(stream)].add(firstByte.Sub(started))
}

// firstTokenDelay is how long q's call may go without a first
// token before the next target starts, at now; zero for none.
func (e *Engine) firstTokenDelay(now time.Time, q *request) time.Duration {
	ceiling := e.ft.cfg.Ceiling
	if c := q.req.FirstTokenCeiling; c != 0 {
		ceiling = c
	}
	if ceiling <= 0 || q.target+1 >= len(targets(q.req)) {
		return 0 // off, or nowhere else to go
	}
	d := ceiling
	if s := q.scope; s >= 0 && s < len(e.ft.ttft) {
		if h := e.ft.ttft[s][streamIdx(q.req.Stream)]; h.n > 0 {
			d = min(ceiling, max(e.ft.cfg.Floor, time.Duration(e.ft.cfg.Factor*h.mean)))
		}
	}
	if dl := q.req.Deadline; !dl.IsZero() {
		d = min(d, dl.Sub(now)/2)
	}
	return max(d, 0)
}

// armSecond arms q's race timer at the shorter of its hedge delay and
// its first-token deadline, and notes which one it is (q.firstTokenDue).
// Both spend the hedge budget, so neither fires without one.
func (e *Engine) armSecond(now time.Time, q *request) {
	if !e.hedges.enabled() {
		return
	}
	h := e.hedgeDelay(q)
	f := e.firstTokenDelay(now, q)
	q.firstTokenDue = f > 0 && (h <= 0 || f < h)
	switch {
	case q.firstTokenDue:
		e.hedgeT.push(q, now.Add(f))
	case h > 0:
		e.hedgeT.push(q, now.Add(h))
	}
}

// fireFirstToken sends q's first-token second call, to a target after
// its own, if the hedge budget allows; when none can take it, a longer
// hedge_after still hedges at its own time.
func (e *Engine) fireFirstToken(now time.Time, q *request, rd *Ready) {
	q.firstTokenDue = false
	if q.second != nil || q.primaryDone || q.expired || q.committed >= 0 || !q.firstByte.IsZero() {
		return
	}
	if e.hedges.tokens < 1 {
		e.hedges.stats.NoBudget++
		return
	}
	if i, ok := e.second(now, q, false, false); ok {
		e.hedges.tokens--
		e.hedges.stats.FirstToken++
		q.firstTokenRace = true
		rd.Second = append(rd.Second, SecondCall{ID: q.id, Target: i, Kind: FirstToken})
		return
	}
	e.hedges.stats.NoTarget++
	if h := e.hedgeDelay(q); h > 0 && q.started.Add(h).After(now) {
		e.hedgeT.push(q, q.started.Add(h))
	}
}

// lostFirstTokenRace tells q's breaker that its first call, cancelled
// because a first-token second call answered first, was slow.
func (e *Engine) lostFirstTokenRace(now time.Time, q *request, o Outcome) {
	if o.Kind != Cancelled || !q.firstTokenRace || q.committed != 1 || !q.hasTicket {
		return
	}
	e.scopes[q.scope].cfg.Breaker.Slow(now, q.ticket)
}
