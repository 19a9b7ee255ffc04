package idempotency

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"
)

// End is how a flight's answer ended.
type End uint8

const (
	running End = iota
	// Complete is a success, whole and well-formed: the only answer
	// stored for replay.
	Complete
	// Failed is an answer delivered whole that is not a success: an
	// error response, a stream that ended with an error event. Every
	// participant gets it, once; it is never stored.
	Failed
	// Aborted is an answer that broke after its status went out. Each
	// participant's connection must be aborted, as the leader's would
	// be, so that no client takes a short body for a whole one.
	Aborted
	// refused: the flight ended with a verdict (Conflict, InProgress)
	// instead of an answer.
	refused
)

var (
	// ErrAborted is what Reader.Read returns at the end of an Aborted
	// answer.
	ErrAborted = errors.New("idempotency: the answer was aborted")
	// ErrNoReaders is what a Recorder's Write returns once every
	// participant has left: nobody would read what it writes.
	ErrNoReaders = errors.New("idempotency: every participant has left")
	errFinished  = errors.New("idempotency: the flight has finished")
)

// A Flight is one generation shared by every request with its Key that
// arrives while it runs: the leader's handler writes the answer into the
// flight (Recorder), and each participant, the leader's client
// included, reads it from the first byte at its own pace (Reader).
//
// The flight's context (Context) is the generation's: it outlives any
// one client and is cancelled when the last participant leaves, so a
// generation runs for as long as somebody still wants it, and stops as
// soon as nobody does.
//
// Memory: a flight holds its answer while it might be stored or joined.
// Once the answer passes the store's per-entry cap it can be neither,
// so from then on only the bytes some participant has still to read are
// held, and a write waits (as a write to a slow client would) while the
// slowest participant is more than the cap behind. A flight therefore
// holds about the cap at most, whatever the answer's size.
type Flight struct {
	// Set at creation, then read without the lock.
	table  *Flights // counts the flight's participants
	key    Key
	fp     Fingerprint
	token  string
	keep   int64         // the per-entry cap, MaxResponseBytes
	ttl    time.Duration // the claim's, in a shared store
	ctx    context.Context
	cancel context.CancelCauseFunc
	// claimed: the shared store holds this flight's in-flight marker,
	// which Finish releases. Only the leader's goroutine touches it.
	claimed bool

	mu sync.Mutex
	// changed is closed, and replaced, whenever a reader or a waiting
	// writer may have something new to see.
	changed chan struct{}
	status  int
	header  http.Header // a snapshot taken at WriteHeader; read-only
	// buf holds the answer's bytes from offset base on (base is 0 until
	// the answer overflows the cap).
	buf      []byte
	base     int64
	overflow bool
	readers  []*Reader
	end      End
	// verdict and retryAfter: why a refused flight refused.
	verdict    Role
	retryAfter time.Duration
	// replayed: the answer came from the store, not a generation.
	replayed bool
	// note is the leader's summary of the generation (Keeper.Finish).
	note any
	// writerWaits: a write is waiting for the slowest reader to advance.
	writerWaits bool
}

func newFlight(ctx context.Context, t *Flights, key Key, fp Fingerprint, keep int64, ttl time.Duration) *Flight {
	f := &Flight{table: t, key: key, fp: fp, token: newToken(), keep: keep, ttl: ttl, changed: make(chan struct{})}
	// The generation keeps the leader's values (its deadline is set
	// from the request, not inherited) but not its cancellation: the
	// leader's client leaving must not end it while others still read.
	f.ctx, f.cancel = context.WithCancelCause(context.WithoutCancel(ctx))
	f.readers = []*Reader{{f: f}} // the leader's
	t.participants.Add(1)
	return f
}

// Context is the generation's context: cancelled when every participant
// has left (with the last one's cause), on Cancel, or once the flight
// has finished.
func (f *Flight) Context() context.Context { return f.ctx }

// Cancel ends the generation now, with cause, whoever is still reading:
// for a shutdown, which ends every request. Participants still get what
// the generation writes on its way out (an error event, say).
func (f *Flight) Cancel(cause error) { f.cancel(cause) }

// Recorder returns the http.ResponseWriter the leader's handler writes
// the generation into. Call it once.
func (f *Flight) Recorder() *Recorder { return &Recorder{f: f, h: http.Header{}} }

// Note is what the leader passed to Keeper.Finish, once the flight has
// ended; nil before, and for a replay.
func (f *Flight) Note() any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.note
}

// broadcast wakes every waiter. REQUIRES f.mu.
func (f *Flight) broadcast() {
	close(f.changed)
	f.changed = make(chan struct{})
	f.writerWaits = false
}

// wait releases f.mu until the flight changes or ctx ends, and takes it
// again. REQUIRES f.mu.
func (f *Flight) wait(ctx context.Context) error {
	ch := f.changed
	f.mu.Unlock()
	defer f.mu.Lock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// minOffset is where the slowest participant reads. REQUIRES f.mu.
func (f *Flight) minOffset() int64 {
	lo := f.base + int64(len(f.buf))
	for _, r := range f.readers {
		lo = min(lo, r.off)
	}
	return lo
}

func (f *Flight) writeHeader(status int, h http.Header) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.status != 0 || f.end != running {
		return
	}
	f.status, f.header = status, h
	f.broadcast()
}

func (f *Flight) write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for {
		if len(f.readers) == 0 {
			return 0, ErrNoReaders
		}
		// Before the answer overflows, it is at most keep bytes, so this
		// never waits; after, it bounds what the slowest reader lags.
		if f.base+int64(len(f.buf))-f.minOffset() <= f.keep {
			break
		}
		f.writerWaits = true
		f.wait(context.Background()) // a reader's progress or departure wakes it
	}
	f.buf = append(f.buf, p...)
	if !f.overflow && f.base+int64(len(f.buf)) > f.keep {
		// Too large to store, so too large to hold whole for joiners:
		// from here on, what every reader has read is let go.
		f.overflow = true
	}
	if f.overflow {
		if k := f.minOffset() - f.base; k > 0 {
			f.buf = f.buf[k:]
			f.base += k
		}
	}
	f.broadcast()
	return len(p), nil
}

// finish ends the flight; the first end wins.
func (f *Flight) finish(end End, note any) {
	f.mu.Lock()
	if f.end != running {
		f.mu.Unlock()
		return
	}
	f.end, f.note = end, note
	f.broadcast()
	f.mu.Unlock()
	f.cancel(errFinished)
}

// refuse ends the flight with a verdict instead of an answer.
func (f *Flight) refuse(v Role, retryAfter time.Duration) {
	f.mu.Lock()
	f.verdict, f.retryAfter = v, retryAfter
	f.mu.Unlock()
	f.finish(refused, nil)
}

// fill ends the flight with a stored answer, which it shares (a stored
// Response is never modified).
func (f *Flight) fill(r *Response) {
	f.mu.Lock()
	f.status, f.header, f.buf, f.replayed = r.Status, r.Header, r.Body, true
	f.mu.Unlock()
	f.finish(Complete, nil)
}

// join adds a participant for a request with fingerprint fp, or says
// why it cannot: false when the flight no longer stands for its key (it
// failed, or everyone left it and its end is near), so a new flight
// should replace it. REQUIRES the Flights lock (Flights before Flight).
func (f *Flight) join(fp Fingerprint) (Ticket, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.end == Failed || f.end == Aborted:
		return Ticket{}, false
	case f.end == running && len(f.readers) == 0:
		return Ticket{}, false
	case f.fp != fp:
		return Ticket{Role: Conflict}, true
	case f.base > 0:
		// Its first bytes are gone: it cannot be read from the start.
		return Ticket{Role: InProgress, RetryAfter: inProgressRetry}, true
	}
	r := &Reader{f: f}
	f.readers = append(f.readers, r)
	f.table.participants.Add(1)
	return Ticket{Role: Join, Reader: r}, true
}

// storable is the flight's answer, for the store, or nil when it may not
// be stored: a replay, an answer that overflowed the cap, or not a 2xx.
// REQUIRES a generation that has returned with a Complete answer.
func (f *Flight) storable() *Response {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.replayed || f.overflow || f.status/100 != 2 {
		return nil
	}
	return &Response{Fingerprint: f.fp, Status: f.status, Header: f.header, Body: f.buf[:len(f.buf):len(f.buf)]}
}

// Recorder is the http.ResponseWriter a flight's generation writes to.
// It has what the gateway's relays use of a response: Flush (every
// write is visible to readers at once, so it has nothing to do) and
// SetWriteDeadline, accepted and ignored. A write never waits on a
// client, only, past the cap, on the slowest participant, whose own
// write deadline makes it leave if it stalls; a generation is thus never
// cut short for everyone because one client stopped reading.
type Recorder struct {
	f     *Flight
	h     http.Header
	wrote bool
}

var (
	_ http.ResponseWriter = (*Recorder)(nil)
	_ http.Flusher        = (*Recorder)(nil)
)

// Header is the header map the answer's headers are set in.
func (r *Recorder) Header() http.Header { return r.h }

// WriteHeader records the status and a snapshot of the headers; as with
// net/http, later changes to the map are not part of the answer.
// Informational (1xx) statuses are not recorded.
func (r *Recorder) WriteHeader(status int) {
	if r.wrote || status < 200 {
		return
	}
	r.wrote = true
	r.f.writeHeader(status, r.h.Clone())
}

// Write appends p to the answer (copying it: callers reuse buffers).
func (r *Recorder) Write(p []byte) (int, error) {
	if !r.wrote {
		r.WriteHeader(http.StatusOK)
	}
	return r.f.write(p)
}

// Flush has nothing to do: see Recorder.
func (r *Recorder) Flush() {}

// FlushError is Flush for http.ResponseController.
func (r *Recorder) FlushError() error { return nil }

// SetWriteDeadline is accepted and ignored: see Recorder.
func (r *Recorder) SetWriteDeadline(time.Time) error { return nil }

// Reader is one participant's view of a flight: its answer from the
// first byte, at the participant's own pace. A participant calls Leave
// when it is done, whether it read to the end or gave up.
type Reader struct {
	f    *Flight
	off  int64
	left bool
}

// Flight is the flight r reads.
func (r *Reader) Flight() *Flight { return r.f }

// Head is an answer's status and headers, or the verdict of a flight
// that refused.
type Head struct {
	// Status is the answer's; 0 when the flight ended without one (a
	// refusal, or a generation that wrote nothing).
	Status int
	// Header is shared by every participant: read it, never modify it.
	Header http.Header
	// Verdict is Conflict or InProgress when the flight refused: the
	// store holds the key for another request, or another replica has
	// it in flight (RetryAfter then says when to look again).
	Verdict    Role
	RetryAfter time.Duration
	// Replayed: the answer is a stored one, not a generation's.
	Replayed bool
}

// Head waits for the answer's status and headers, or the flight's end,
// or ctx's (its cause is the error).
func (r *Reader) Head(ctx context.Context) (Head, error) {
	f := r.f
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.status == 0 && f.end == running {
		if err := f.wait(ctx); err != nil {
			return Head{}, err
		}
	}
	return Head{Status: f.status, Header: f.header, Verdict: f.verdict, RetryAfter: f.retryAfter, Replayed: f.replayed}, nil
}

// Read waits for bytes past what r has read, and returns all of them
// (valid until the caller drops them; never modified). At the end of
// the answer it returns io.EOF, or ErrAborted when the answer broke;
// when ctx ends first, its cause.
func (r *Reader) Read(ctx context.Context) ([]byte, error) {
	f := r.f
	f.mu.Lock()
	defer f.mu.Unlock()
	for {
		if end := f.base + int64(len(f.buf)); r.off < end {
			p := f.buf[r.off-f.base:]
			p = p[:len(p):len(p)] // appends go past it, never into it
			r.off = end
			if f.writerWaits {
				f.broadcast()
			}
			return p, nil
		}
		switch f.end {
		case running:
		case Aborted:
			return nil, ErrAborted
		default:
			return nil, io.EOF
		}
		if err := f.wait(ctx); err != nil {
			return nil, err
		}
	}
}

// Leave ends r's participation. The last participant to leave a flight
// still generating cancels its context with cause (nil: context.Canceled),
// which is how the upstream call learns that nobody wants its answer.
// Leaving twice is harmless.
func (r *Reader) Leave(cause error) {
	f := r.f
	f.mu.Lock()
	if r.left {
		f.mu.Unlock()
		return
	}
	r.left = true
	for i, o := range f.readers {
		if o == r {
			f.readers = append(f.readers[:i], f.readers[i+1:]...)
			break
		}
	}
	last := len(f.readers) == 0 && f.end == running
	f.broadcast() // a writer waiting on r may go on
	f.mu.Unlock()
	f.table.participants.Add(-1)
	if last {
		if cause == nil {
			cause = context.Canceled
		}
		f.cancel(cause)
	}
}
