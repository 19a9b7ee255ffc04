package idempotency

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"sync/atomic"
	"time"
)

// Role is what Keeper.Begin made of a request.
type Role uint8

const (
	_ Role = iota
	// Lead: the request generates the answer, into its Flight, and
	// reads it like every other participant.
	Lead
	// Join: the request shares a flight in this process: one still
	// generating, one filling from the store, or one just finished.
	Join
	// Replay: the request gets the stored answer.
	Replay
	// Conflict: the key was used for a request with another body.
	Conflict
	// InProgress: the key is in flight where this request cannot join
	// it (on another replica, or in an answer too large to replay from
	// its start); Ticket.RetryAfter says when to look again.
	InProgress
)

// String is the role as metrics label it.
func (r Role) String() string {
	switch r {
	case Lead:
		return "leader"
	case Join:
		return "joined"
	case Replay:
		return "replayed"
	case Conflict:
		return "conflict"
	case InProgress:
		return "in_progress"
	}
	return "none"
}

// inProgressRetry is the Retry-After of an InProgress refusal: the
// original's end is not known, and polling once a second costs little.
const inProgressRetry = time.Second

// minInProgressRetry: a claim about to expire is still worth a pause.
const minInProgressRetry = 100 * time.Millisecond

// Ticket is Begin's answer.
type Ticket struct {
	Role Role
	// Flight is the leader's to generate into (Recorder, Context) and to
	// end (Keeper.Finish); nil for the other roles.
	Flight *Flight
	// Reader is the answer for Lead, Join and Replay; the caller must
	// Leave it.
	Reader *Reader
	// RetryAfter is for InProgress.
	RetryAfter time.Duration
}

// Flights is the table of flights in one process, by key. Keepers that
// share one join each other's flights: a configuration reloaded while a
// generation runs lets the new one's duplicates join it.
type Flights struct {
	mu sync.Mutex
	m  map[Key]*Flight
	// participants counts the readers that have not left, across flights.
	participants atomic.Int64
}

// NewFlights returns an empty table.
func NewFlights() *Flights { return &Flights{m: make(map[Key]*Flight)} }

// Len is how many keys have a flight now.
func (t *Flights) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

// Participants is how many requests read a flight now, leaders'
// clients included.
func (t *Flights) Participants() int64 { return t.participants.Load() }

// has reports whether key has a flight.
func (t *Flights) has(key Key) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[key] != nil
}

// remove takes f out of the table, unless another flight replaced it.
func (t *Flights) remove(f *Flight) {
	t.mu.Lock()
	if t.m[f.key] == f {
		delete(t.m, f.key)
	}
	t.mu.Unlock()
}

// Options configure a Keeper. Every field may be left zero.
type Options struct {
	// Store keeps completed answers for replay, and, when shared by
	// replicas, marks keys in flight. Nil: nothing is stored, and only
	// duplicates that arrive while the original runs share it.
	Store Store
	// MaxResponseBytes is the largest answer body stored or joined
	// from its start, and about the most a flight holds (Flight).
	// Zero: DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// StoreTimeout bounds each call to the store; past it the store
	// is taken to be unreachable and the request decided locally.
	// Zero: one second.
	StoreTimeout time.Duration
	// Flights is the table of flights; nil: one of the Keeper's own.
	Flights *Flights
}

// DefaultMaxResponseBytes is Options.MaxResponseBytes's default: a long
// chat answer, streamed, is tens of kilobytes.
const DefaultMaxResponseBytes = 1 << 20

// Keeper decides, for each request with an Idempotency-Key, whether it
// leads a generation, joins one, replays a stored answer, or is refused;
// and, when a generation ends, stores its answer if it may.
type Keeper struct {
	o Options
}

// New returns a Keeper.
func New(o Options) *Keeper {
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if o.StoreTimeout <= 0 {
		o.StoreTimeout = time.Second
	}
	if o.Flights == nil {
		o.Flights = NewFlights()
	}
	return &Keeper{o: o}
}

// Flights is the Keeper's table of flights.
func (k *Keeper) Flights() *Flights { return k.o.Flights }

// Begin decides a request with key and fingerprint fp. A flight for the
// key in this process is joined (or is a Conflict); otherwise the
// caller's own flight goes into the table at once, so later duplicates
// join it while the store is asked, and then the store decides: its
// stored answer fills the flight (Replay), another body's answer or
// another replica's flight refuse it, and otherwise the caller leads,
// with the key claimed in a shared store for ttl (the longest the
// generation can take, plus a margin; a replica that dies frees its keys
// when their claims expire). A store that errs is taken as empty: the
// request is decided in this process, as if no store were configured.
//
// ctx is the request's: the flight keeps its values, not its
// cancellation.
func (k *Keeper) Begin(ctx context.Context, key Key, fp Fingerprint, ttl time.Duration) Ticket {
	t := k.o.Flights
	t.mu.Lock()
	if f := t.m[key]; f != nil {
		if tk, ok := f.join(fp); ok {
			t.mu.Unlock()
			return tk
		}
	}
	f := newFlight(ctx, t, key, fp, k.o.MaxResponseBytes, ttl)
	own := f.readers[0] // read before joiners can append to it
	t.m[key] = f
	t.mu.Unlock()
	lead := Ticket{Role: Lead, Flight: f, Reader: own}
	if k.o.Store == nil {
		return lead
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), k.o.StoreTimeout)
	stored, holder, err := k.o.Store.Lookup(sctx, key, Claim{Fingerprint: fp, Token: f.token, TTL: ttl})
	cancel()
	switch {
	case err != nil:
		return lead
	case stored != nil && stored.Fingerprint == fp:
		f.fill(stored)
		t.remove(f)
		return Ticket{Role: Replay, Reader: own}
	case stored != nil || (holder != nil && holder.Fingerprint != fp):
		f.refuse(Conflict, 0)
		t.remove(f)
		own.Leave(nil) // the caller reads nothing; joiners read the verdict
		return Ticket{Role: Conflict}
	case holder != nil:
		ra := min(max(holder.Left, minInProgressRetry), inProgressRetry)
		f.refuse(InProgress, ra)
		t.remove(f)
		own.Leave(nil)
		return Ticket{Role: InProgress, RetryAfter: ra}
	}
	f.claimed = true
	return lead
}

// Known reports, without a store round trip, whether a request with key
// would be answered without a generation of its own: a flight for it
// runs in this process, or this process's store holds its answer. It is
// for deciding cheaply not to shed such a request; a request's own
// outcome is Begin's.
func (k *Keeper) Known(key Key) bool {
	if k.o.Flights.has(key) {
		return true
	}
	m, ok := k.o.Store.(*Memory)
	return ok && m.has(key)
}

// Finish ends a flight the caller led, with how its answer ended and a
// note that participants read (Flight.Note). Call it exactly once per
// led flight, after the generation has returned.
//
// The key is settled before the participants see the end: a Complete
// answer that fits MaxResponseBytes is stored, and a shared store's
// claim released, first (the flight stays in the table meanwhile, so a
// duplicate finds the answer in one place or the other); any other end
// frees the key first. A participant that holds its answer's last byte
// until the end (as the gateway does for an answer with a length) thus
// knows, once it has its whole answer, that a retry anywhere in the
// fleet finds what the key now stands for.
func (k *Keeper) Finish(f *Flight, end End, note any) {
	if end != Complete {
		k.o.Flights.remove(f)
	}
	if s := k.o.Store; s != nil {
		var r *Response
		if end == Complete {
			r = f.storable()
		}
		if r != nil || f.claimed {
			ctx, cancel := context.WithTimeout(context.Background(), k.o.StoreTimeout)
			_ = s.Finish(ctx, f.key, Claim{Fingerprint: f.fp, Token: f.token, TTL: f.ttl}, r)
			cancel()
		}
	}
	f.finish(end, note)
	k.o.Flights.remove(f)
}

// newToken names one flight among the claims in a shared store.
func newToken() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
