package gateway

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/server/fleetstore"
	"github.com/sluice-gw/sluice/internal/server/idempotency"
	"github.com/sluice-gw/sluice/internal/server/metrics"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// Idempotency keys (package idempotency). A request that carries
// Idempotency-Key is decided once its body is read and its model known
// (the fingerprint needs the body; a request its key may not make is
// refused as any other):
//
//   - the leader, the first with its key, is served as any request, but
//     into its flight's recorder and on the flight's context, which ends
//     only when every participant has left; its own client reads the
//     flight like any other participant, on a goroutine of its own;
//   - a duplicate in flight joins: no admission slot, no budget, just a
//     copy of the flight's answer from its first byte;
//   - a duplicate after the leader succeeded replays the stored answer;
//   - a duplicate with another body gets 422, one in flight on another
//     replica 409 with Retry-After, a malformed key 400.
//
// Answers a request did not generate carry Idempotent-Replayed: true,
// and the client's own rate-limit headers rather than the leader's. A
// request without the header pays one map lookup for all of this.

// idemState is a gateway's idempotency machinery; nil when disabled.
type idemState struct {
	keeper *idempotency.Keeper
	// memory is the store when it is this process's; nil with a fleet.
	memory  *idempotency.Memory
	metrics *metrics.Metrics
	log     *slog.Logger
	now     func() time.Time
	// writeTimeout bounds each write of a shared answer
	// (server.write_timeout).
	writeTimeout time.Duration
	// rateHeaders sets a request's own rate-limit headers on an answer
	// it shares (Gateway.setRateHeaders).
	rateHeaders func(http.Header, *exchange)
}

// idemShared is what outlives one configuration (Host): the flights in
// progress, so a reload's duplicates join them, and the memory store,
// so a reload keeps what it holds.
type idemShared struct {
	flights *idempotency.Flights
	memory  *idempotency.Memory
}

func newIdemShared() *idemShared {
	return &idemShared{flights: idempotency.NewFlights(), memory: idempotency.NewMemory(idempotency.MemoryOptions{})}
}

// claimMargin is added to a request's deadline for its claim in the
// fleet's store: the claim must outlast the generation (its answer is
// stored as it ends), and it is released then, so only a replica that
// died leaves it to expire.
const claimMargin = 5 * time.Second

// newIdemState builds the gateway's idempotency machinery from cfg:
// answers in the fleet's Redis when there is a fleet (f), else in
// memory. Nil when cfg turns idempotency off.
func newIdemState(cfg *config.Config, shared *idemShared, f *fleet, m *metrics.Metrics, log *slog.Logger, now func() time.Time,
	writeTimeout time.Duration, rateHeaders func(http.Header, *exchange)) *idemState {
	ic := cfg.Idempotency.WithDefaults()
	if !ic.On() {
		m.SetIdempotency(func() metrics.IdempotencyState { return metrics.IdempotencyState{} })
		return nil
	}
	if shared == nil {
		shared = newIdemShared()
	}
	o := idempotency.Options{MaxResponseBytes: ic.MaxResponseBytes.Int64(), Flights: shared.flights}
	s := &idemState{metrics: m, log: log, now: now, writeTimeout: writeTimeout, rateHeaders: rateHeaders}
	if f != nil {
		prefix := cfg.Fleet.Prefix
		if prefix == "" {
			prefix = fleetstore.DefaultPrefix
		}
		o.Store = fleetIdemStore{idempotency.NewRedis(f.rdb, idempotency.RedisOptions{
			Prefix: prefix, Replica: f.id, TTL: ic.TTL.D(), MaxEntryBytes: ic.MaxResponseBytes.Int64(),
		}), f}
		// An idempotent request is about to wait seconds for a model;
		// a few more milliseconds on Redis to avoid a second generation
		// is the better bargain than the fleet's per-decision timeout.
		o.StoreTimeout = max(4*f.timeout, 100*time.Millisecond)
	} else {
		shared.memory.Configure(idempotency.MemoryOptions{
			TTL: ic.TTL.D(), MaxEntries: ic.MaxEntries, MaxBytes: ic.MaxBytes.Int64(),
			MaxEntryBytes: ic.MaxResponseBytes.Int64(), Now: now,
		})
		o.Store, s.memory = shared.memory, shared.memory
	}
	s.keeper = idempotency.New(o)
	m.SetIdempotency(func() metrics.IdempotencyState {
		st := metrics.IdempotencyState{InFlight: shared.flights.Len(), Participants: shared.flights.Participants()}
		if s.memory != nil {
			st.Memory = true
			st.Stored, st.StoredBytes = s.memory.Stats()
		}
		return st
	})
	return s
}

// fleetIdemStore is the fleet's Redis store, asked only while the fleet
// finds Redis reachable: while it does not, requests are decided on
// this replica at once rather than each waiting out the timeout.
type fleetIdemStore struct {
	*idempotency.Redis
	f *fleet
}

var errStoreDown = errors.New("gateway: the shared store is unreachable")

func (s fleetIdemStore) Lookup(ctx context.Context, k idempotency.Key, c idempotency.Claim) (*idempotency.Response, *idempotency.Holder, error) {
	if !s.f.reachable.Load() {
		return nil, nil, errStoreDown
	}
	return s.Redis.Lookup(ctx, k, c)
}

func (s fleetIdemStore) Finish(ctx context.Context, k idempotency.Key, c idempotency.Claim, r *idempotency.Response) error {
	if !s.f.reachable.Load() {
		return errStoreDown
	}
	return s.Redis.Finish(ctx, k, c, r)
}

// idemScope is who a key belongs to: the tenant of the client's virtual
// key; without one, the client's credential (its hash), so that clients
// of an open gateway that send different keys do not share answers; and
// with neither, one anonymous scope.
func idemScope(r *http.Request, x *exchange) string {
	if x.key != nil {
		return "tenant:" + x.key.tenant
	}
	if k := clientKey(r); k != "" {
		sum := sha256.Sum256([]byte(k))
		return "credential:" + string(sum[:])
	}
	return "anonymous"
}

// answered reports whether a request the gateway is about to shed
// from its headers alone has an Idempotency-Key whose answer is already
// on its way here (a flight in this process, or one stored in memory):
// sharing it costs no slot, so shedding it would only make the client
// come back for it. Only asked on the way to a refusal; false when
// idempotency is off (s nil).
func (s *idemState) answered(r *http.Request, x *exchange) bool {
	if s == nil {
		return false
	}
	vv, ok := r.Header[idempotency.HeaderKey]
	if !ok {
		return false
	}
	key, err := idempotency.ParseHeader(vv)
	return err == nil && s.keeper.Known(idempotency.NewKey(idemScope(r, x), key))
}

// idemNote is what a leader tells its flight's other participants about
// the generation, for their own metrics and log lines.
type idemNote struct {
	outcome, reason, provider string
}

// serve serves a request that carries Idempotency-Key (values)
// and whose body is raw. generate is the rest of serve's path, into a
// writer and on a request's context; timeout is the longest it may take.
func (s *idemState) serve(w http.ResponseWriter, r *http.Request, x *exchange, values []string, raw []byte, timeout time.Duration,
	generate func(http.ResponseWriter, *http.Request)) {
	key, err := idempotency.ParseHeader(values)
	if err != nil {
		x.idem = "invalid"
		s.metrics.Idempotency.WithLabelValues(x.idem).Inc()
		x.fail(w, protocol.InvalidRequest, outcomeClientError, "bad_idempotency_key", err.Error(), 0)
		return
	}
	k := idempotency.NewKey(idemScope(r, x), key)
	fp := idempotency.FingerprintOf(r.Method, r.URL.Path, raw)
	t := s.keeper.Begin(r.Context(), k, fp, timeout-s.now().Sub(x.start)+claimMargin)
	x.idem = t.Role.String()
	if t.Role == idempotency.Join {
		// Counted once its flight says what it was: a joiner of a
		// flight that was asking the store may be refused, or replayed.
		defer func() { s.metrics.Idempotency.WithLabelValues(x.idem).Inc() }()
	} else {
		s.metrics.Idempotency.WithLabelValues(x.idem).Inc()
	}
	switch t.Role {
	case idempotency.Lead:
		s.lead(w, r, x, t, generate)
	case idempotency.Join, idempotency.Replay:
		s.share(w, r, x, t.Reader)
	default:
		s.refuse(w, x, t.Role, t.RetryAfter)
	}
}

// refuse answers a request its key refuses.
func (s *idemState) refuse(w http.ResponseWriter, x *exchange, role idempotency.Role, retryAfter time.Duration) {
	if role == idempotency.Conflict {
		x.fail(w, protocol.Unprocessable, outcomeClientError, "idempotency_conflict",
			"the Idempotency-Key was already used with a different request body; send a new key for a new request, or the same body to get the first request's answer", 0)
		return
	}
	x.fail(w, protocol.Conflict, outcomeClientError, "idempotency_in_progress",
		"the original request with this Idempotency-Key is still in progress (on another replica, or too large to share); retry after it has finished to get its answer", max(retryAfter, 100*time.Millisecond))
}

// lead generates a flight's answer on this goroutine while another
// copies it to the leader's own client, then ends the flight.
func (s *idemState) lead(w http.ResponseWriter, r *http.Request, x *exchange, t idempotency.Ticket, generate func(http.ResponseWriter, *http.Request)) {
	copied := make(chan shared, 1)
	go func() { copied <- s.copyFlight(w, r, t.Reader, nil) }()
	end := s.generateInto(t.Flight, r, x, generate)
	s.keeper.Finish(t.Flight, end, idemNote{outcome: x.outcome, reason: x.reason, provider: x.provider})
	// The log line and metrics describe the generation, which others
	// may have received whole even if this client left.
	if res := <-copied; res.head.Status == 0 && !res.gone {
		// The generation ended without an answer while its client
		// waited: it must still get one.
		x.fail(w, protocol.Upstream, outcomeUpstreamError, "no_answer", "the request ended without an answer; retry it", 0)
	}
}

// generateInto runs generate into f: its recorder, its context. A
// panic becomes a 500 in the flight (or, once its status went out, an
// aborted answer), here rather than in serveInference, since this
// goroutine does not own the client's writer while the flight is read.
func (s *idemState) generateInto(f *idempotency.Flight, r *http.Request, x *exchange, generate func(http.ResponseWriter, *http.Request)) (end idempotency.End) {
	rec := f.Recorder()
	defer func() {
		if v := recover(); v != nil {
			if v != http.ErrAbortHandler {
				s.log.Error("handler panic", "panic", fmt.Sprint(v), "endpoint", x.endpoint.Name)
			}
			if x.wroteHeader {
				x.outcome, x.reason, x.abort = outcomeInternal, "panic", true
				end = idempotency.Aborted
				return
			}
			x.fail(rec, protocol.Internal, outcomeInternal, "panic", "internal error in the gateway", 0)
			end = idempotency.Failed
		}
	}()
	generate(rec, r.WithContext(f.Context()))
	switch {
	case x.abort:
		return idempotency.Aborted
	case x.outcome == outcomeOK && x.status/100 == 2:
		return idempotency.Complete
	}
	return idempotency.Failed
}

// share serves a request another request's flight answers: a duplicate
// of one in flight, or of one stored.
func (s *idemState) share(w http.ResponseWriter, r *http.Request, x *exchange, rd *idempotency.Reader) {
	x.borrowed = true
	res := s.copyFlight(w, r, rd, func(h http.Header) {
		h.Set(idempotency.HeaderReplayed, "true")
		s.rateHeaders(h, x)
	})
	switch {
	case res.head.Verdict != 0:
		x.idem = res.head.Verdict.String()
		s.refuse(w, x, res.head.Verdict, res.head.RetryAfter)
		return
	case res.head.Status == 0 && res.gone:
		x.outcome, x.reason, x.status = outcomeCancelled, "client_disconnected", 499
		return
	case res.head.Status == 0:
		x.fail(w, protocol.Upstream, outcomeUpstreamError, "no_answer",
			"the original request with this Idempotency-Key ended without an answer; retry it", 0)
		return
	}
	if res.head.Replayed {
		x.idem = idempotency.Replay.String()
	}
	x.wroteHeader, x.status, x.bytesOut = true, res.head.Status, res.bytes
	x.outcome = outcomeOK
	if n, ok := rd.Flight().Note().(idemNote); ok {
		x.outcome, x.reason, x.provider = n.outcome, n.reason, n.provider
	}
	switch {
	case res.gone:
		x.outcome, x.reason = outcomeCancelled, "client_disconnected"
		if res.stalled {
			x.reason = "client_stalled"
		}
	case res.aborted:
		x.abort = true // as the leader's client's answer was
	}
}

// shared is how one participant's copy of a flight ended.
type shared struct {
	head  idempotency.Head
	bytes int64
	// gone: the client left, or stopped reading (stalled) until a
	// write timed out.
	gone, stalled bool
	// aborted: the answer broke after its status went out.
	aborted bool
}

// copyFlight copies a flight's answer to one participant's client, from
// the first byte, each write under server.write_timeout. decorate, when
// set, edits the headers of an answer the client did not generate. It
// touches no exchange, since the leader's copy runs beside its
// generation. A client that leaves (or stalls) leaves the flight, and
// the last to leave ends the generation; a shutdown ends the generation
// at once, and each participant still relays what it writes on its way
// out (a 503, an error event).
func (s *idemState) copyFlight(w http.ResponseWriter, r *http.Request, rd *idempotency.Reader, decorate func(http.Header)) shared {
	c := &flightCopy{ctx: r.Context(), rd: rd}
	defer func() { rd.Leave(context.Cause(c.ctx)) }()
	var err error
	for {
		if c.res.head, err = rd.Head(c.ctx); err == nil {
			break
		}
		if c.stop(err) {
			return c.res
		}
	}
	if c.res.head.Status == 0 {
		return c.res // a refusal, or a flight that ended with no answer
	}
	h := w.Header()
	for k, vv := range c.res.head.Header {
		if decorate != nil && isRateLimitHeader(k) {
			continue // another caller's budget
		}
		h[k] = vv // the flight's values are never modified, nor are these
	}
	if decorate != nil {
		decorate(h)
	}
	w.WriteHeader(c.res.head.Status)
	var scratch exchange
	// An answer with a length is whole, to its client, at its last byte,
	// which therefore waits for the flight's end: by then the key is
	// settled (its answer stored, its claim released; Keeper.Finish), so
	// a client that has its answer finds it from any replica. A stream
	// ends with the response itself, after the end anyway, and no event
	// of it waits.
	c.body(writerFor(w, &scratch, s.writeTimeout), c.res.head.Header.Get("Content-Length") != "")
	c.res.bytes, c.res.stalled = scratch.bytesOut, scratch.stalled
	return c.res
}

// flightCopy is one participant's copy of a flight in progress
// (copyFlight).
type flightCopy struct {
	// ctx is the participant's request's; a shutdown makes it one
	// that is never cancelled (stop).
	ctx context.Context
	rd  *idempotency.Reader
	res shared
}

// stop reports whether err (a wait's) ends the copy; a shutdown does
// not: it ends the generation, and the copy goes on to relay what the
// generation writes on its way out.
func (c *flightCopy) stop(err error) bool {
	if errors.Is(err, ErrShutdown) {
		c.rd.Flight().Cancel(ErrShutdown)
		c.ctx = context.WithoutCancel(c.ctx)
		return false
	}
	c.res.gone = true
	return true
}

// body copies the flight's answer after its head to cw until it ends;
// hold keeps its last byte back until then.
func (c *flightCopy) body(cw clientWriter, hold bool) {
	var last [1]byte
	held := false
	for {
		p, err := c.rd.Read(c.ctx)
		switch {
		case len(p) > 0:
			var werr error
			if held {
				_, werr = cw.write(last[:])
			}
			if hold {
				last[0], held, p = p[len(p)-1], true, p[:len(p)-1]
			}
			if werr == nil && len(p) > 0 {
				_, werr = cw.write(p)
			}
			if werr != nil {
				c.res.gone = true
				return
			}
		case err == io.EOF:
			if held {
				if _, werr := cw.write(last[:]); werr != nil {
					c.res.gone = true
				}
			}
			return
		case errors.Is(err, idempotency.ErrAborted):
			c.res.aborted = true
			return
		case c.stop(err):
			return
		}
	}
}
