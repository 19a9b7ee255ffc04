package idempotency

import (
	"context"
	"net/http"
	"time"
)

// Response is a completed answer as stored: never modified once stored,
// so replays share it.
type Response struct {
	// Fingerprint is the request's that generated it: a replay is only
	// for a request with the same one.
	Fingerprint Fingerprint
	Status      int
	Header      http.Header
	Body        []byte
}

// entryOverhead approximates what holding an entry costs beyond its
// bytes: the map slot, list elements and slice and map headers.
const entryOverhead = 256

// Size is what holding r costs, about: its body, its headers' names and
// values, and a fixed overhead. Stores bound their entries by it.
func (r *Response) Size() int64 {
	n := int64(len(r.Body)) + entryOverhead
	for k, vv := range r.Header {
		n += int64(len(k))
		for _, v := range vv {
			n += int64(len(v)) + 16
		}
	}
	return n
}

// Claim is a flight's claim on a key in a store shared by replicas.
type Claim struct {
	Fingerprint Fingerprint
	// Token names the flight, so that only its own claim is released.
	Token string
	// TTL is how long the claim lasts unless released: it frees the key
	// of a replica that died mid-generation.
	TTL time.Duration
}

// Holder describes another replica's claim on a key.
type Holder struct {
	Fingerprint Fingerprint
	// Left is how long the claim lasts at most.
	Left time.Duration
}

// Store keeps completed answers for replay. Memory is one process's;
// Redis is a fleet's, and also marks keys in flight across replicas.
type Store interface {
	// Lookup returns the answer stored under k, if any. Otherwise a
	// shared store claims k for c, unless another replica holds it,
	// whose Holder it returns instead; a store of one process claims
	// nothing (its flights table does that job).
	Lookup(ctx context.Context, k Key, c Claim) (*Response, *Holder, error)
	// Finish stores r under k (when r is non-nil and within the
	// store's bounds) and releases c's claim, if it still holds.
	Finish(ctx context.Context, k Key, c Claim, r *Response) error
}
