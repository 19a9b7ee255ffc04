package idempotency

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisOptions configure a Redis store.
type RedisOptions struct {
	// Prefix starts every name the store keeps (the fleet's prefix).
	Prefix string
	// Replica names this replica in its claims (the fleet's id). A claim
	// of this replica's own that its flights table no longer holds is
	// stale, and is taken over rather than refused.
	Replica string
	// TTL is how long an answer is replayed (default 1h).
	TTL time.Duration
	// MaxEntryBytes is the largest answer stored (default 1 MiB).
	MaxEntryBytes int64
}

// Redis is a Store in the fleet's Redis, shared by every replica. Per
// key it keeps two names, under one hash tag so a Redis Cluster keeps
// them in one slot:
//
//	<prefix>idem:{<key hex>}:answer  the stored answer, SET with PX = TTL
//	<prefix>idem:{<key hex>}:flight  the in-flight marker, SET NX PX = the claim's TTL
//
// Lookup is one round trip (a script: the answer, else the marker, else
// claim), and so is Finish (store the answer, release the marker if it
// is still this flight's). Answers expire by TTL only: Redis's own
// maxmemory policy bounds the total, not MaxEntries or MaxBytes.
type Redis struct {
	rdb redis.UniversalClient
	o   RedisOptions
	// mine starts this replica's markers after the fingerprint.
	mine string
}

var _ Store = (*Redis)(nil)

// NewRedis returns a store in rdb.
func NewRedis(rdb redis.UniversalClient, o RedisOptions) *Redis {
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.MaxEntryBytes <= 0 {
		o.MaxEntryBytes = DefaultMaxResponseBytes
	}
	return &Redis{rdb: rdb, o: o, mine: o.Replica + "\n"}
}

func (s *Redis) names(k Key) []string {
	base := s.o.Prefix + "idem:{" + k.String() + "}:"
	return []string{base + "answer", base + "flight"}
}

// A marker is the fingerprint in hex (64 bytes), the replica, a newline
// and the flight's token.
func (s *Redis) marker(c Claim) string {
	return hex.EncodeToString(c.Fingerprint[:]) + s.mine + c.Token
}

// lookupScript: KEYS answer, flight; ARGV this flight's marker, its TTL
// in ms, this replica's part of a marker. Returns {1, answer}, or {2,
// marker, its PTTL} for another replica's flight, or {0}: claimed.
var lookupScript = redis.NewScript(`
local answer = redis.call('GET', KEYS[1])
if answer then return {1, answer} end
local marker = redis.call('GET', KEYS[2])
if marker and string.sub(marker, 65, 64 + #ARGV[3]) ~= ARGV[3] then
  return {2, marker, redis.call('PTTL', KEYS[2])}
end
if marker then
  redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
else
  redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2])
end
return {0}
`)

// finishScript: KEYS answer, flight; ARGV this flight's marker, the
// answer (empty for none), its TTL in ms.
var finishScript = redis.NewScript(`
if ARGV[2] ~= '' then redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) end
if redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[2]) end
return 1
`)

// Lookup returns k's stored answer; else claims k for c, unless another
// replica holds it.
func (s *Redis) Lookup(ctx context.Context, k Key, c Claim) (*Response, *Holder, error) {
	ttl := max(c.TTL.Milliseconds(), 1)
	v, err := lookupScript.Run(ctx, s.rdb, s.names(k), s.marker(c), ttl, s.mine).Slice()
	if err != nil {
		return nil, nil, err
	}
	kind, _ := v[0].(int64)
	switch {
	case kind == 1 && len(v) == 2:
		data, _ := v[1].(string)
		r, err := decodeResponse([]byte(data))
		if err != nil {
			// Not one of ours, or from a newer version: no answer.
			return nil, nil, nil
		}
		return r, nil, nil
	case kind == 2 && len(v) == 3:
		m, _ := v[1].(string)
		left, _ := v[2].(int64)
		var h Holder
		if len(m) < 64 {
			return nil, nil, errors.New("idempotency: malformed in-flight marker")
		}
		if _, err := hex.Decode(h.Fingerprint[:], []byte(m[:64])); err != nil {
			return nil, nil, errors.New("idempotency: malformed in-flight marker")
		}
		h.Left = time.Duration(max(left, 0)) * time.Millisecond
		return nil, &h, nil
	case kind == 0:
		return nil, nil, nil
	}
	return nil, nil, fmt.Errorf("idempotency: unexpected reply %v", v)
}

// Finish stores r (when within MaxEntryBytes) for TTL, and releases c's
// claim if it is still c's.
func (s *Redis) Finish(ctx context.Context, k Key, c Claim, r *Response) error {
	var data []byte
	if r != nil && r.Size() <= s.o.MaxEntryBytes {
		data = encodeResponse(r)
	}
	return finishScript.Run(ctx, s.rdb, s.names(k), s.marker(c), data, max(s.o.TTL.Milliseconds(), 1)).Err()
}

// The stored form of a Response: a magic and version, the fingerprint,
// the status, the headers (count, then each name and its values, every
// length a uvarint), and the body to the end.
var responseMagic = []byte("sidem1")

func encodeResponse(r *Response) []byte {
	b := make([]byte, 0, int(r.Size())+len(responseMagic)+len(r.Fingerprint)+16)
	b = append(b, responseMagic...)
	b = append(b, r.Fingerprint[:]...)
	b = binary.AppendUvarint(b, uint64(r.Status))
	b = binary.AppendUvarint(b, uint64(len(r.Header)))
	for k, vv := range r.Header {
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
		b = binary.AppendUvarint(b, uint64(len(vv)))
		for _, v := range vv {
			b = binary.AppendUvarint(b, uint64(len(v)))
			b = append(b, v...)
		}
	}
	return append(b, r.Body...)
}

var errEncoding = errors.New("idempotency: not a stored answer")

func decodeResponse(b []byte) (*Response, error) {
	if len(b) < len(responseMagic)+len(Fingerprint{}) || string(b[:len(responseMagic)]) != string(responseMagic) {
		return nil, errEncoding
	}
	b = b[len(responseMagic):]
	r := &Response{}
	copy(r.Fingerprint[:], b)
	b = b[len(r.Fingerprint):]
	// Each count is bounded by the bytes left, so a corrupt entry cannot
	// make the decoder allocate more than the entry's own size.
	num := func() (int, bool) {
		v, n := binary.Uvarint(b)
		if n <= 0 || v > uint64(len(b)) {
			return 0, false
		}
		b = b[n:]
		return int(v), true
	}
	str := func() (string, bool) {
		n, ok := num()
		if !ok || n > len(b) {
			return "", false
		}
		s := string(b[:n])
		b = b[n:]
		return s, true
	}
	status, n := binary.Uvarint(b)
	if n <= 0 || status < 100 || status > 999 {
		return nil, errEncoding
	}
	b = b[n:]
	r.Status = int(status)
	nh, ok := num()
	if !ok {
		return nil, errEncoding
	}
	r.Header = make(http.Header, nh)
	for range nh {
		k, ok := str()
		if !ok {
			return nil, errEncoding
		}
		nv, ok := num()
		if !ok {
			return nil, errEncoding
		}
		vv := make([]string, 0, nv)
		for range nv {
			v, ok := str()
			if !ok {
				return nil, errEncoding
			}
			vv = append(vv, v)
		}
		r.Header[k] = vv
	}
	r.Body = b
	return r, nil
}
