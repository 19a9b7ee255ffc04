package idempotency

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
)

// Header names. HeaderKey is the request header clients send (the name
// Stripe's API and the IETF draft use, and the one package client
// adds); HeaderReplayed marks an answer that another request generated.
const (
	HeaderKey      = "Idempotency-Key"
	HeaderReplayed = "Idempotent-Replayed"
)

// MaxKeyLength is the longest Idempotency-Key accepted, in bytes:
// Stripe's limit, room for any UUID, ULID or hash a client would use.
const MaxKeyLength = 255

// Key names one idempotent request within its scope: the SHA-256 of the
// scope and the client's key. Only the hash is kept or sent to a store,
// so a stored answer cannot be found without both, and one scope's keys
// can never name another's answers.
type Key [sha256.Size]byte

// NewKey is the Key of the client's key within scope (a tenant, say).
// The scope is length-prefixed, so no choice of key can make one scope's
// hash collide with another's by shifting bytes across the boundary.
func NewKey(scope, key string) Key {
	h := sha256.New()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(scope)))
	h.Write(n[:])
	h.Write([]byte(scope))
	h.Write([]byte(key))
	var k Key
	h.Sum(k[:0])
	return k
}

// String is the key in hex: how stores name it.
func (k Key) String() string { return hex.EncodeToString(k[:]) }

// Fingerprint identifies a request's content: the SHA-256 of its method,
// path and body bytes. Two requests under one Key with different
// fingerprints are a client's mistake (a key reused for another
// request), never a duplicate.
type Fingerprint [sha256.Size]byte

// FingerprintOf is the fingerprint of one request. Method and path are
// length-prefixed, so ("POST", "/a", "b") and ("POST", "/ab", "") differ.
func FingerprintOf(method, path string, body []byte) Fingerprint {
	h := sha256.New()
	var n [8]byte
	for _, s := range []string{method, path} {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	h.Write(body)
	var f Fingerprint
	h.Sum(f[:0])
	return f
}

// ParseHeader checks the Idempotency-Key values a request carries (all
// of them: a key sent twice is ambiguous) and returns the key, or an
// error whose text tells the client what to send instead.
func ParseHeader(values []string) (string, error) {
	if len(values) != 1 {
		return "", fmt.Errorf("%s: sent %d times; send one key per request", HeaderKey, len(values))
	}
	v := values[0]
	switch {
	case v == "":
		return "", fmt.Errorf("%s: empty; send a unique key per request (e.g. a UUID), or leave the header out", HeaderKey)
	case len(v) > MaxKeyLength:
		return "", fmt.Errorf("%s: %d characters; a key may have at most %d (a UUID has 36)", HeaderKey, len(v), MaxKeyLength)
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c > 0x7e {
			return "", fmt.Errorf("%s: byte %d is not printable ASCII; use letters, digits and punctuation (e.g. a UUID)", HeaderKey, i+1)
		}
	}
	return v, nil
}
