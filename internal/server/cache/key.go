package cache

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// Key names one answer: the SHA-256 of a request read by its meaning,
// within its scope (the tenant). Scope and Model are kept beside the
// hash so that an operator can clear a tenant's or a model's entries;
// the hash already holds both.
type Key struct {
	Sum   [sha256.Size]byte
	Scope string
	Model string
}

// String is the hash in hex.
func (k Key) String() string { return hex.EncodeToString(k.Sum[:]) }

// Request is what a key is made of.
type Request struct {
	// Scope is whose answers these are: a tenant, a credential's hash,
	// or the anonymous scope. One scope's requests never name another's
	// answers.
	Scope string
	// Endpoint is the client's path (/v1/chat/completions,
	// /v1/messages): the same words sent to another API are another
	// request.
	Endpoint string
	// Model is the model the client named.
	Model string
	// Headers are the request's headers that reach a provider and may
	// change its answer (a provider's forwarded headers, such as
	// anthropic-beta), as name and value, names lower-case. Their order
	// does not matter.
	Headers [][2]string
	// Body is the request's JSON body.
	Body []byte
}

// Facts are what reading a request found that decides whether it may
// be cached at all.
type Facts struct {
	// Sampled: the request samples above temperature 0: it names a
	// temperature above 0, or none, so its provider's default (above 0
	// for every provider Sluice speaks) applies.
	Sampled bool
}

// ErrUnreadable is a body the key cannot be read from: not one JSON
// object, a name repeated in an object, a string that is not UTF-8.
// Such a request is served, and never cached: a provider might read it
// otherwise than the key does.
var ErrUnreadable = errors.New("cache: the body cannot be read by its meaning")

// Ignored lists, by endpoint, the top-level fields that do not change
// an answer and so do not split entries: how the answer is delivered
// (stream, stream_options), and what the client says about itself for
// the provider's records (user, metadata, store, safety_identifier)
// or its prompt cache (prompt_cache_key, prompt_cache_retention). Every
// other field is part of the key, including ones Sluice does not know:
// an unknown field may change the answer. model is read apart (Model).
var Ignored = map[string][]string{
	"/v1/chat/completions": {"model", "stream", "stream_options", "user", "metadata", "store", "safety_identifier", "prompt_cache_key", "prompt_cache_retention"},
	"/v1/messages":         {"model", "stream", "metadata"},
}

// cacheControlAt are where Anthropic's prompt-caching marks
// (cache_control) may stand in a Messages request: on a system block,
// a message's content block, a tool result's content block, and a
// tool. A mark says what the provider may cache of the prompt, not
// what it answers, so it is left out there and only there: a field of
// that name anywhere else (a property of a tool's JSON schema, say) is
// part of the request.
var cacheControlAt = [][]string{
	{"system", "[]"},
	{"messages", "[]", "content", "[]"},
	{"messages", "[]", "content", "[]", "content", "[]"},
	{"tools", "[]"},
}

// KeyOf reads r by its meaning and returns its key: the order of an
// object's names, whitespace, a string's escapes and a number's
// spelling (1, 1.0, 1e0) change nothing; a value's type does (1 is not
// "1", null is not absent). The fields Ignored lists for r's endpoint
// are left out. An error (ErrUnreadable) means the request must not be
// cached.
func KeyOf(r Request) (Key, Facts, error) {
	k := Key{Scope: r.Scope, Model: r.Model}
	h := sha256.New()
	writeString(h, keyVersion)
	writeString(h, r.Scope)
	writeString(h, r.Endpoint)
	writeString(h, r.Model)
	hdrs := slices.Clone(r.Headers)
	slices.SortFunc(hdrs, func(a, b [2]string) int {
		if c := strings.Compare(a[0], b[0]); c != 0 {
			return c
		}
		return strings.Compare(a[1], b[1])
	})
	writeUint(h, uint64(len(hdrs)))
	for _, kv := range hdrs {
		writeString(h, kv[0])
		writeString(h, kv[1])
	}
	rd := reader{dec: jsontext.NewDecoder(bytes.NewReader(r.Body)), ignored: Ignored[r.Endpoint]}
	if r.Endpoint == "/v1/messages" {
		rd.marks = cacheControlAt
	}
	if rd.dec.PeekKind() != '{' {
		return k, Facts{}, ErrUnreadable
	}
	if err := rd.value(h); err != nil {
		return k, Facts{}, ErrUnreadable
	}
	if _, err := rd.dec.ReadToken(); err == nil {
		return k, Facts{}, ErrUnreadable // more than one value
	}
	h.Sum(k.Sum[:0])
	return k, Facts{Sampled: rd.temperature != "0"}, nil
}

// keyVersion starts every key's hash: a change to how keys are read
// changes it, so that no entry stored under the old reading is found
// under the new.
const keyVersion = "sluice-cache-key-1"

// reader hashes one JSON value by its meaning.
//
// The hash is a tree of hashes where an order must be undone: each
// member of an object is hashed alone, and the object is the hash of
// its members' names and hashes, sorted by name. Arrays and scalars are
// written into their parent's hash as they are read, each with a tag
// and a length, so no two values write the same bytes. The work is one
// pass over the body whatever its nesting (an object's members are
// hashed once, not copied at each level).
type reader struct {
	dec *jsontext.Decoder
	// path is where the value being read stands: member names, and "[]"
	// for an array's element.
	path []string
	// ignored are the top-level names left out; marks, the paths where
	// a cache_control member is left out.
	ignored []string
	marks   [][]string
	// temperature is the top-level temperature, as a canonical number
	// ("" when not named, or not a number).
	temperature string
}

// member is an object's member: its name and its value's hash.
type member struct {
	name string
	sum  [sha256.Size]byte
}

func (r *reader) value(h hash.Hash) error {
	switch r.dec.PeekKind() {
	case '{':
		return r.object(h)
	case '[':
		if _, err := r.dec.ReadToken(); err != nil {
			return err
		}
		h.Write([]byte{'['})
		r.path = append(r.path, "[]")
		for r.dec.PeekKind() != ']' {
			if err := r.value(h); err != nil {
				return err
			}
		}
		r.path = r.path[:len(r.path)-1]
		_, err := r.dec.ReadToken()
		h.Write([]byte{']'})
		return err
	}
	tok, err := r.dec.ReadToken()
	if err != nil {
		return err
	}
	switch tok.Kind() {
	case '"':
		h.Write([]byte{'s'})
		writeString(h, tok.String())
	case '0':
		n := canonNumber(tok.String())
		if len(r.path) == 1 && r.path[0] == "temperature" {
			r.temperature = n
		}
		h.Write([]byte{'n'})
		writeString(h, n)
	case 't', 'f':
		h.Write([]byte{byte(tok.Kind())})
	case 'n':
		h.Write([]byte{'z'})
	default:
		return ErrUnreadable
	}
	return nil
}

func (r *reader) object(h hash.Hash) error {
	if _, err := r.dec.ReadToken(); err != nil {
		return err
	}
	var members []member
	for r.dec.PeekKind() != '}' {
		tok, err := r.dec.ReadToken()
		if err != nil {
			return err
		}
		name := tok.String()
		if r.skip(name) {
			if err := r.dec.SkipValue(); err != nil {
				return err
			}
			continue
		}
		mh := sha256.New()
		r.path = append(r.path, name)
		err = r.value(mh)
		r.path = r.path[:len(r.path)-1]
		if err != nil {
			return err
		}
		m := member{name: name}
		mh.Sum(m.sum[:0])
		members = append(members, m)
	}
	if _, err := r.dec.ReadToken(); err != nil {
		return err
	}
	slices.SortFunc(members, func(a, b member) int { return strings.Compare(a.name, b.name) })
	oh := sha256.New()
	writeUint(oh, uint64(len(members)))
	for _, m := range members {
		writeString(oh, m.name)
		oh.Write(m.sum[:])
	}
	var sum [sha256.Size]byte
	h.Write([]byte{'{'})
	h.Write(oh.Sum(sum[:0]))
	return nil
}

// skip reports whether the member name, in the object at r.path, is
// left out of the key.
func (r *reader) skip(name string) bool {
	if len(r.path) == 0 {
		return slices.Contains(r.ignored, name)
	}
	if name != "cache_control" {
		return false
	}
	for _, at := range r.marks {
		if slices.Equal(at, r.path) {
			return true
		}
	}
	return false
}

func writeUint(h hash.Hash, n uint64) {
	var b [binary.MaxVarintLen64]byte
	h.Write(b[:binary.PutUvarint(b[:], n)])
}

// writeString writes s with its length first, so that no two strings
// run together into the same bytes.
func writeString(h hash.Hash, s string) {
	writeUint(h, uint64(len(s)))
	h.Write([]byte(s))
}

// canonNumber spells a JSON number (as jsontext has checked it) one way
// for each value: its digits without leading or trailing zeros and a
// power of ten, "0" for any zero. 1, 1.0, 1e0 and 10e-1 are all "1e0";
// 0.25 and 25e-2 "25e-2". The value is exact (no rounding through a
// float), so two numbers a float cannot tell apart (the seeds
// 9007199254740993 and 9007199254740992) stay apart. An exponent too
// long to add to is kept as written: such numbers split entries rather
// than merge them.
func canonNumber(raw string) string {
	s := raw
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	mant, expPart, hasExp := strings.Cut(strings.ToLower(s), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	var exp int64
	if hasExp {
		e := strings.TrimPrefix(expPart, "+")
		eneg := strings.HasPrefix(e, "-")
		e = strings.TrimPrefix(e, "-")
		e = strings.TrimLeft(e, "0")
		if len(e) > 9 {
			return raw
		}
		for _, c := range e {
			exp = exp*10 + int64(c-'0')
		}
		if eneg {
			exp = -exp
		}
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	exp -= int64(len(frac))
	if digits == "" {
		return "0"
	}
	trimmed := strings.TrimRight(digits, "0")
	exp += int64(len(digits) - len(trimmed))
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	b.WriteString(trimmed)
	b.WriteByte('e')
	b.WriteString(strconv.FormatInt(exp, 10))
	return b.String()
}
