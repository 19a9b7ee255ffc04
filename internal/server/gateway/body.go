package gateway

import (
	"crypto/sha256"
	"errors"
	"io"
	"net/http"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Request bodies are the gateway's largest holding before admission, and
// what a client declares is not what it sends: a Content-Length of 10 MB
// on a socket that then sends nothing must cost nothing. So a body is
// read into buffers that grow with what has actually arrived, and every
// byte of buffer comes out of one budget shared by all requests
// (server.max_body_bytes_in_flight), held until the request ends. A
// request that would pass the budget is refused as overload, 503/529,
// rather than let a crowd of large uploads take the process's memory.
//
// One client must not take that budget from the others, so each client
// may hold at most its share of it (server.max_body_bytes_per_client;
// by default a quarter): past that, its own requests are refused 429
// and everyone else's still have room. A client is its virtual key when
// it sent a known one (keys are matched from the headers, before the
// body is read), and otherwise its IP address; an IPv6 address counts
// by its /64, which one client usually holds whole.
//
// The budget counts what is really allocated, and nothing is allocated
// that it does not count. A body is read into a list of blocks (4 KiB,
// then doubling to 64 KiB each), so growing copies nothing and leaves no
// old buffer behind; each block is charged before it is made. The body
// then becomes one piece: at its end (chunked), or, when the client
// declared a length, once half of it has arrived, in one buffer of
// exactly the declared length. That copy is charged while the blocks and
// the whole both exist, so a body costs about twice its size for that
// moment (never more than twice max_body_bytes, as no block reaches past
// it: the validator asks for budgets of at least that), and the blocks
// are given back when it is done.

// errBodyBudget: the bodies in flight already use the whole budget.
var errBodyBudget = errors.New("gateway: request bodies in flight use the whole budget")

// errBodyShare: this client's bodies in flight use its whole share of
// the budget.
var errBodyShare = errors.New("gateway: this client's request bodies use its whole share of the budget")

// errBodyTimeout: the client took longer than body_read_timeout.
var errBodyTimeout = errors.New("gateway: request body read timed out")

// errBodyLonger: more bytes came than the body may have, without the
// reader saying so (a guard; net/http's readers end at the declared
// length and max_body_bytes).
var errBodyLonger = errors.New("gateway: request body is longer than it may be")

// bodySource is who a request body is charged to: a known virtual key
// (by the SHA-256 of what the client sent, as keys are matched), or,
// without one, the client's address.
type bodySource struct {
	key  [sha256.Size]byte
	addr netip.Prefix
}

// sourceOf names the client a request's body is charged to: its key, or
// else its address (an IPv6 /64), as its trusted proxies saw it
// (clientAddr). REQUIRES: authenticate has run, so x.key is the
// request's key when it has one.
func (in *intake) sourceOf(r *http.Request, x *exchange) bodySource {
	if x.key != nil {
		return bodySource{key: sha256.Sum256([]byte(clientKey(r)))}
	}
	a, ok := clientAddr(r, in.proxies)
	if !ok {
		return bodySource{} // not an IP socket: all such clients are one
	}
	bits := a.BitLen()
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits)
	return bodySource{addr: p}
}

// intake is how request bodies are read: at most maxBody bytes each,
// within timeout, every buffer taken from the budget bodies (at most
// share of it for one client, told apart by key or by address as the
// trusted proxies say: sourceOf).
type intake struct {
	maxBody int64
	bodies  *byteBudget
	share   int64
	proxies []netip.Prefix // server.trusted_proxies (proxies.go)
	timeout time.Duration
}

// byteBudget is a shared allowance of bytes, what each client holds of
// it, and a count of the requests reading their bodies against it.
type byteBudget struct {
	limit   int64
	used    atomic.Int64 // written under mu; read without it
	reading atomic.Int64

	mu       sync.Mutex
	bySource map[bodySource]int64
	peak     int64 // the most used has been: for tests and benchmarks
}

// bodyHold is what one request holds of the budget, and whose it is.
type bodyHold struct {
	src bodySource
	n   int64
}

// take adds n bytes to h, or reports which limit they would pass: the
// client's share first (its own doing, so its own answer), then the
// whole budget. A share as large as the budget is none.
func (b *byteBudget) take(h *bodyHold, n, share int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	mine := b.bySource[h.src]
	if share < b.limit && mine+n > share {
		return errBodyShare
	}
	used := b.used.Load() + n
	if used > b.limit {
		return errBodyBudget
	}
	if b.bySource == nil {
		b.bySource = make(map[bodySource]int64)
	}
	b.bySource[h.src] = mine + n
	b.used.Store(used)
	b.peak = max(b.peak, used)
	h.n += n
	return nil
}

// put gives n of h's bytes back.
func (b *byteBudget) put(h *bodyHold, n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if left := b.bySource[h.src] - n; left > 0 {
		b.bySource[h.src] = left
	} else {
		delete(b.bySource, h.src)
	}
	b.used.Add(-n)
	h.n -= n
}

// give returns all that h holds: the request is done with its body.
func (b *byteBudget) give(h bodyHold) { b.put(&h, h.n) }

// highWater is the most the budget has held at once.
func (b *byteBudget) highWater() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peak
}

const (
	// firstBodyChunk is the first read's size. It is not taken from the
	// budget until bytes arrive, so a socket that declares a body and
	// sends nothing holds no budget (and 4 KiB of memory, bounded by
	// server.max_connections).
	firstBodyChunk = 4 << 10
	// maxBodyBlock bounds a block, and so the budget a slow sender holds
	// beyond what it has sent.
	maxBodyBlock = 64 << 10
)

// bodyWithin gives every request's body d to arrive, counted from its
// headers. intake.read sets the same deadline again and clears it once the
// body is in; this one bounds a request answered before its body is
// read (a wrong Host, a refused origin or key, a shed): net/http reads
// what is left of a small body before it writes such an answer, and
// without a deadline a client that sends that body a byte at a time
// would hold its connection for as long as it liked. Past d the server
// answers and closes the connection.
func bodyWithin(d time.Duration, next http.Handler) http.Handler {
	if d <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength != 0 { // a body, declared or chunked
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(d))
		}
		next.ServeHTTP(w, r)
	})
}

// read reads the request body, bounded in size (max_body_bytes),
// time (body_read_timeout) and memory: its client's share, and every
// request's budget. held is what it took from the budget, which the
// caller gives back when the request ends, error or not.
func (in *intake) read(w http.ResponseWriter, r *http.Request, src bodySource) (body []byte, held bodyHold, err error) {
	held.src = src
	if r.ContentLength > in.maxBody {
		return nil, held, &http.MaxBytesError{Limit: in.maxBody}
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(in.timeout))
	defer rc.SetReadDeadline(time.Time{})
	in.bodies.reading.Add(1)
	defer in.bodies.reading.Add(-1)
	body, err = readBlocks(http.MaxBytesReader(w, r.Body, in.maxBody), r.ContentLength, in.maxBody, in.bodies, &held, in.share)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		err = errBodyTimeout
	}
	return body, held, err
}

// readBlocks reads rd to its end: declared bytes (-1: unknown), and at
// most maxBody. Every buffer it makes is first taken from b into h (at
// most share for h's client); the caller gives h back.
func readBlocks(rd io.Reader, declared, maxBody int64, b *byteBudget, h *bodyHold, share int64) ([]byte, error) {
	bound := maxBody // no body has more bytes than this
	if declared >= 0 {
		bound = min(bound, declared)
	}
	var (
		full [][]byte // blocks read to their end, in order
		got  int64    // bytes in full
	)
	// The first block is charged when its first bytes arrive.
	cur := make([]byte, 0, min(firstBodyChunk, bound))
	for {
		if len(cur) == cap(cur) {
			total := got + int64(len(cur))
			switch {
			case total == bound:
				// Only the end may come now; a byte more is too many.
				if err := atEnd(rd); err != nil {
					return nil, err
				}
				return whole(full, cur, b, h, share)
			case declared >= 0 && 2*total >= declared:
				// Half of a declared body is here: hold it in one buffer
				// of its length, charged before it is made.
				if err := b.take(h, declared, share); err != nil {
					return nil, err
				}
				one := joined(full, cur, declared)
				b.put(h, h.n-declared)
				full, got, cur = nil, 0, one
				continue
			}
			size := min(max(total, firstBodyChunk), maxBodyBlock, bound-total)
			if err := b.take(h, size, share); err != nil {
				return nil, err
			}
			full, got = append(full, cur), total
			cur = make([]byte, 0, size)
		}
		n, err := rd.Read(cur[len(cur):cap(cur)])
		if n > 0 && h.n == 0 {
			// The first bytes arrived: the first block counts from now.
			if err := b.take(h, int64(cap(cur)), share); err != nil {
				return nil, err
			}
		}
		cur = cur[:len(cur)+n]
		if errors.Is(err, io.EOF) {
			return whole(full, cur, b, h, share)
		}
		if err != nil {
			return nil, err
		}
	}
}

// atEnd reads what follows a body that has all the bytes it may have:
// its end, or an error.
func atEnd(rd io.Reader) error {
	var one [1]byte
	for range 100 { // a reader may return 0, nil; not forever
		n, err := rd.Read(one[:])
		switch {
		case n > 0:
			return errBodyLonger
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return err
		}
	}
	return io.ErrNoProgress
}

// whole is the body in one piece: cur when there were no other blocks,
// else one exact copy of them all, charged while both exist, after which
// the blocks go back to the budget.
func whole(full [][]byte, cur []byte, b *byteBudget, h *bodyHold, share int64) ([]byte, error) {
	if h.n == 0 {
		return nil, nil // no byte came: the first block was never charged, nor is it kept
	}
	if len(full) == 0 {
		return cur, nil
	}
	n := int64(len(cur))
	for _, blk := range full {
		n += int64(len(blk))
	}
	if err := b.take(h, n, share); err != nil {
		return nil, err
	}
	one := joined(full, cur, n)
	b.put(h, h.n-n)
	return one, nil
}

// joined copies the blocks, then cur, into one new buffer of capacity c.
func joined(full [][]byte, cur []byte, c int64) []byte {
	one := make([]byte, 0, c)
	for _, blk := range full {
		one = append(one, blk...)
	}
	return append(one, cur...)
}
