package gateway

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/sluice-gw/sluice/internal/core/price"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// The ledger: every upstream call a request makes is recorded once, as
// one callRecord, and every book of what calls cost reads that record
// (docs/SPEND.md, docs/USAGE.md, docs/METRICS.md):
//
//   - the call's spend reservation is settled with the record's cost
//     (a loser's at once; the answer's, with its continuations', when
//     the request ends: settleSpend);
//   - sluice_tokens_total and sluice_cost_total add the record's tokens
//     and cost;
//   - the usage records add them to the row of the call's own upstream
//     model (usageBook.record);
//   - the request log line sums the request's records (tally): its
//     tokens, cost and calls.
//
// The cost of a call is computed in one place, post, from the call's
// usage at its own target's price. What a call used is read where the
// call ends: the answer once it is relayed (recordAnswer), a call the
// client did not get when it is discarded (recordDiscarded), a
// continuation when it is retired or its stream ends (recordContinuation).
//
// Which calls are recorded: the first call, a retry, a hedge, a rescue
// or a first-token call, the call that lost a race, and each
// continuation of a broken stream; a call never sent (a second call its
// spend limit refused) is not. Calls that are not a client's are outside
// the ledger: the breakers' probes (probe.go), the fallback evals
// (evals.go) and count_tokens calls (counttokens.go, which providers do
// not bill). A call that failed (an error status, no connection) is
// recorded, for the log's count, and bills nothing. A request the
// response cache answered made no call: it is not in the ledger, and
// the usage records count it apart, at no cost (recordHit, cache.go).

// callKind is what made an upstream call, or what became of it.
type callKind uint8

const (
	// callAttempt is the request's first call.
	callAttempt callKind = iota
	// callRetry is a call made after one failed, before any byte went to
	// the client (retry, retry_same, retry_after).
	callRetry
	// callHedge is a second call raced beside the first: a hedge, a
	// rescue or a first-token call.
	callHedge
	// callHedgeLoser is the call of a race that the client did not get,
	// cancelled when the other answered: the first call or the second.
	callHedgeLoser
	// callContinuation carried on a broken stream.
	callContinuation
)

var callKindNames = [...]string{"attempt", "retry", "hedge", "hedge_loser", "continuation"}

func (k callKind) String() string { return callKindNames[k] }

// kindOf is what made a.
func kindOf(a *attempt) callKind {
	switch a.second {
	case "":
		return callAttempt
	case secondHedge, secondRescue, secondFirstToken:
		return callHedge
	}
	return callRetry
}

// Token sources, as sluice_tokens_total labels them.
const (
	sourceReported  = "reported"
	sourceCounted   = "counted"
	sourceEstimated = "estimated"
)

// callRecord is one upstream call: its target, what it used and what
// that cost.
type callRecord struct {
	kind callKind
	// provider and upstream are the call's target: its provider and the
	// provider's name for the model, which prices are keyed by.
	provider, upstream string
	// use is what the call used; Input excludes CachedInput.
	use price.Usage
	// inSource says where its input count came from ("": none is
	// known, and Input is 0); outSource, its output's.
	inSource, outSource string
	// billed: the provider may charge for the call (it answered 2xx, or
	// it was cancelled after it was sent); a failed call is not.
	billed bool
	// answer: the call's answer was the client's, from a 2xx: the
	// request counts once, on this call's usage row.
	answer bool
	// cost is use at upstream's price; priced: upstream has one.
	cost   price.Micros
	priced bool
}

// tally is a request's sum of its call records, for its log line, and
// the cost its answering call's reservation is settled with. Records
// come from the handler and from a race's loser, which ends off the
// request's path; the log line is written when the handler is done and
// every call is recorded, by whichever comes last.
type tally struct {
	mu sync.Mutex
	// calls are the records; billed, those the provider may charge for.
	calls, billed int
	use           price.Usage
	inKnown       bool
	cost          price.Micros
	// answerCost is what the answering call of the current hop and its
	// continuations cost; contOutput, the continuations' output, which
	// the answer's summed output includes.
	answerCost price.Micros
	contOutput int64
	// pending counts the losers still to be recorded; finished: the
	// handler is done, and dur is the request's duration.
	pending  int
	finished bool
	dur      time.Duration
}

// post prices r (the one place a call's cost is computed) and hands it
// to every book; it returns the cost. model is the client-facing model
// the call served. At debug level it logs the record (msg=call). Safe
// to call off the request's path (a race's loser).
func (g *Gateway) post(x *exchange, model string, r *callRecord) price.Micros {
	if r.billed {
		if p, ok := g.prices[r.upstream]; ok {
			r.cost, r.priced = p.Cost(r.use), true
		}
		key := "-"
		if x.key != nil {
			key = x.key.name
		}
		if r.inSource != "" {
			g.metrics.Tokens.WithLabelValues(key, model, r.provider, "input", r.inSource).Add(float64(r.use.Input + r.use.CachedInput))
		}
		g.metrics.Tokens.WithLabelValues(key, model, r.provider, "output", r.outSource).Add(float64(r.use.Output))
		if r.priced {
			g.metrics.Cost.WithLabelValues(key, model, r.provider, r.upstream).Add(r.cost.Dollars())
		}
		g.usage.record(x, model, r)
	}
	t := &x.tally
	t.mu.Lock()
	t.calls++
	if r.billed {
		t.billed++
		t.use.Input += r.use.Input
		t.use.CachedInput += r.use.CachedInput
		t.use.Output += r.use.Output
		t.inKnown = t.inKnown || r.inSource != ""
		t.cost += r.cost
	}
	if r.kind == callContinuation {
		t.contOutput += r.use.Output
	}
	if r.kind == callContinuation || r.answer {
		t.answerCost += r.cost // settles the answering call's reservation
	}
	t.mu.Unlock()
	if g.log.Enabled(context.Background(), slog.LevelDebug) {
		g.log.LogAttrs(context.Background(), slog.LevelDebug, "call", slog.String("kind", r.kind.String()),
			slog.String("model", model), slog.String("provider", r.provider), slog.String("upstream_model", r.upstream),
			slog.Bool("billed", r.billed), slog.Int64("input_tokens", r.use.Input+r.use.CachedInput),
			slog.Int64("cached_input_tokens", r.use.CachedInput), slog.Int64("output_tokens", r.use.Output),
			slog.Int64("cost_micros", int64(r.cost)))
	}
	return r.cost
}

// inputOf is the request's input as Sluice counted it, for a call whose
// provider reported none: its count and source, or no source when
// nothing needed it counted (usesTokens).
func (g *Gateway) inputOf(counted int64, exact bool) (int64, string) {
	switch {
	case !g.counts.on:
		return 0, ""
	case exact:
		return counted, sourceCounted
	}
	return counted, sourceEstimated
}

// recordAnswer records the call whose answer, or failure, the client
// got, once it is relayed: at the provider's reported usage, or what
// was counted (the input) and relayed (the output); the continuations
// of its stream are recorded apart. A call never sent (a second call
// its spend limit refused, reported as the last failure) is not.
func (c *calls) recordAnswer(a *attempt) {
	x, g := c.x, c.g
	if x.borrowed || a.start.IsZero() {
		return
	}
	r := callRecord{kind: kindOf(a), provider: a.t.provider.name, upstream: a.t.model}
	if x.upstreamStatus/100 == 2 {
		r.billed, r.answer = true, true
		in, src := g.inputOf(c.input, c.exact)
		var cached int64
		if x.reportedInput > 0 {
			in, src = x.reportedInput, sourceReported
			cached = min(x.reportedCached, in)
			x.inputTokens = in // the trace shows the provider's count
		}
		x.tally.mu.Lock()
		contOut := x.tally.contOutput
		x.tally.mu.Unlock()
		r.use = price.Usage{Input: in - cached, CachedInput: cached, Output: max(int64(x.outputTokens)-contOut, 0)}
		r.inSource, r.outSource = src, sourceEstimated
		if x.usageKnown {
			r.outSource = sourceReported
		}
	}
	g.post(x, c.m.name, &r)
}

// recordDiscarded records a call whose answer the client did not get,
// and settles its spend reservation with what it cost: nothing when it
// failed; its input when it was cancelled before answering (it lost a
// race, and its provider may well have read the prompt); else its input
// and what it generated: a whole answer's reported usage, or a token
// per answer for a stream cut at its first token. lost: it lost a race.
func (c *calls) recordDiscarded(a *attempt, lost bool) {
	if a.start.IsZero() || errors.Is(a.err, errNoSpend) {
		return // never sent
	}
	g := c.g
	r := callRecord{kind: kindOf(a), provider: a.t.provider.name, upstream: a.t.model}
	if lost {
		r.kind = callHedgeLoser
	}
	switch {
	case a.resp == nil && a.err != nil && a.ctx.Err() != nil:
		r.billed = true
		r.use.Input, r.inSource = g.inputOf(c.input, c.exact)
		r.outSource = sourceEstimated
	case a.answered():
		r.billed = true
		r.use.Input, r.inSource = g.inputOf(c.input, c.exact)
		r.use.Output, r.outSource = c.choices, sourceEstimated
		if a.haveWhole {
			if n, found, _, _, input := protocol.AnswerUsage(a.whole); found {
				r.use.Output, r.outSource = int64(n), sourceReported
				if input.Found {
					r.use.Input, r.use.CachedInput, r.inSource = input.Tokens-input.Cached, input.Cached, sourceReported
				}
			}
		}
	}
	cost := g.post(c.x, c.m.name, &r)
	if a.hold != nil {
		a.hold.settle(cost)
		a.hold = nil
	}
}

// recordContinuation records a continuation call of x's stream to t,
// which used u: as its provider reported it (inKnown, outKnown), or its
// input estimated and its output as relayed. billed false: the call was
// refused or did not connect, and u is nothing.
func (g *Gateway) recordContinuation(x *exchange, t target, billed bool, u price.Usage, inKnown, outKnown bool) {
	r := callRecord{kind: callContinuation, provider: t.provider.name, upstream: t.model, billed: billed}
	if billed {
		r.use = u
		r.inSource, r.outSource = sourceEstimated, sourceEstimated
		if inKnown {
			r.inSource = sourceReported
		}
		if outKnown {
			r.outSource = sourceReported
		}
	}
	model := "-"
	if x.cont.m != nil {
		model = x.cont.m.name
	}
	g.post(x, model, &r)
}

// answerSettled is what the answering call of the hop that ends, and its
// continuations, cost; the next hop starts from nothing.
func (t *tally) answerSettled() price.Micros {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.answerCost
	t.answerCost, t.contOutput = 0, 0
	return c
}

// expect notes a loser still to be recorded, off the request's path.
func (t *tally) expect() {
	t.mu.Lock()
	t.pending++
	t.mu.Unlock()
}

// settled notes that an expected loser is recorded; it reports whether
// the request's log line is now due (the handler is done).
func (t *tally) settled() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pending--
	return t.finished && t.pending == 0
}

// finish notes that the handler is done with the request, which took
// dur; it reports whether the log line is due now (no loser is still to
// be recorded).
func (t *tally) finish(dur time.Duration) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.finished, t.dur = true, dur
	return t.pending == 0
}

// logRequest writes x's log line: once per request, when the handler
// is done and every call is recorded.
func (g *Gateway) logRequest(x *exchange) {
	level := slog.LevelInfo
	if x.outcome == outcomeInternal {
		level = slog.LevelError
	}
	if !g.log.Enabled(context.Background(), level) {
		return
	}
	model, provider := x.model, x.provider
	if model == "" {
		model = "-"
	}
	if provider == "" {
		provider = "-"
	}
	g.log.LogAttrs(context.Background(), level, "request", x.logAttrs(model, provider)...)
}
