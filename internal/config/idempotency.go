package config

import "time"

// Idempotency is how the gateway treats requests that carry an
// Idempotency-Key: a duplicate of one still generating shares its
// answer, and one that comes later gets the stored answer, for TTL.
// Answers are stored in this process (bounded by MaxEntries and
// MaxBytes) or, with store: set, in the fleet's Redis.
type Idempotency struct {
	// Enabled turns the header's handling on (default true). Off, the
	// header is ignored and every request generates.
	Enabled *bool `yaml:"enabled"`
	// TTL is how long a successful answer is replayed (default 1h).
	TTL Duration `yaml:"ttl"`
	// MaxEntries caps the answers stored in memory (default 10000).
	MaxEntries int `yaml:"max_entries"`
	// MaxBytes caps the memory stored answers take in all (default
	// 64MiB).
	MaxBytes ByteSize `yaml:"max_bytes"`
	// MaxResponseBytes is the largest answer stored; a larger one is
	// not stored, and its duplicates cannot join it once it has passed
	// this size (default 1MiB).
	MaxResponseBytes ByteSize `yaml:"max_response_bytes"`
}

// Idempotency defaults.
const (
	DefaultIdempotencyTTL              = time.Hour
	DefaultIdempotencyMaxEntries       = 10000
	DefaultIdempotencyMaxBytes         = 64 << 20
	DefaultIdempotencyMaxResponseBytes = 1 << 20
)

// On reports whether Idempotency-Key is honoured.
func (i Idempotency) On() bool { return i.Enabled == nil || *i.Enabled }

// fill sets each field that unset says to default.
func (i *Idempotency) fill(unset func(field string, zero bool) bool) {
	if unset("ttl", i.TTL == 0) {
		i.TTL = Duration(DefaultIdempotencyTTL)
	}
	if unset("max_entries", i.MaxEntries == 0) {
		i.MaxEntries = DefaultIdempotencyMaxEntries
	}
	if unset("max_bytes", i.MaxBytes == 0) {
		i.MaxBytes = DefaultIdempotencyMaxBytes
	}
	if unset("max_response_bytes", i.MaxResponseBytes == 0) {
		i.MaxResponseBytes = DefaultIdempotencyMaxResponseBytes
	}
}

// WithDefaults returns i with every zero field at its default: for a
// Config built in code, where zero means unset.
func (i Idempotency) WithDefaults() Idempotency {
	i.fill(func(_ string, zero bool) bool { return zero })
	return i
}

func (c *Config) validateIdempotency(v *checker) {
	i := c.Idempotency
	if !i.On() {
		return
	}
	if i.TTL < 0 || (i.TTL == 0 && v.src.has("idempotency.ttl")) {
		v.add("idempotency.ttl", "must be positive; write e.g. 1h, or enabled: false to ignore Idempotency-Key")
	}
	if i.MaxEntries < 0 || (i.MaxEntries == 0 && v.src.has("idempotency.max_entries")) {
		v.add("idempotency.max_entries", "%d must be positive; write e.g. %d", i.MaxEntries, DefaultIdempotencyMaxEntries)
	}
	if i.MaxBytes < 0 || (i.MaxBytes == 0 && v.src.has("idempotency.max_bytes")) {
		v.add("idempotency.max_bytes", "must be positive; write e.g. 64MiB")
	}
	if i.MaxResponseBytes < 0 || (i.MaxResponseBytes == 0 && v.src.has("idempotency.max_response_bytes")) {
		v.add("idempotency.max_response_bytes", "must be positive; write e.g. 1MiB")
	}
	if i.MaxBytes > 0 && i.MaxResponseBytes > i.MaxBytes {
		v.add("idempotency.max_response_bytes", "%s is more than max_bytes (%s), so no answer that large could be stored; lower it, or raise max_bytes",
			i.MaxResponseBytes, i.MaxBytes)
	}
}
