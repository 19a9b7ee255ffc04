package config

import (
	"fmt"
	"time"
)

// The response cache (docs/CACHE.md): an answer to a request is kept and
// given again to the same request from the same tenant. It is off unless
// a model (models[].cache) or a key (keys[].cache) turns it on; cache:
// at the top bounds what every model's entries take together.

// Cache bounds the response cache's store.
type Cache struct {
	// MaxBytes caps what the stored answers take in all (default
	// 64MiB): in this process, least recently used first out; in the
	// fleet's store, as the bytes written within the longest entry's
	// life, past which answers are not stored until older ones expire.
	MaxBytes ByteSize `yaml:"max_bytes"`
	// MaxEntryBytes is the largest answer stored (default 1MiB); a
	// larger one is answered but not kept.
	MaxEntryBytes ByteSize `yaml:"max_entry_bytes"`
}

// Cache defaults.
const (
	DefaultCacheMaxBytes      = 64 << 20
	DefaultCacheMaxEntryBytes = 1 << 20
	DefaultCacheTTL           = 10 * time.Minute
)

// ModelCache turns the cache on for one model, and says for how long
// its answers are given again.
type ModelCache struct {
	// Enabled (default true once cache: is written): false keeps the
	// model's answers out of the cache, whatever a key says.
	Enabled *bool `yaml:"enabled"`
	// TTL is how long an answer is given again after it was stored
	// (default 10m).
	TTL Duration `yaml:"ttl"`
	// Temperature: requests sampled above temperature 0 are cached too
	// (default false). A request that names no temperature samples at
	// its provider's default, which is above 0, so without this only
	// requests that say temperature: 0 are cached.
	Temperature bool `yaml:"temperature"`
	// StaleIfError is how long past its TTL an entry is kept, for an
	// answer when no target of the model can answer (default 0: not
	// kept). The store keeps entries this long; answering from them is
	// not yet done (docs/CACHE.md#what-comes-next).
	StaleIfError Duration `yaml:"stale_if_error"`
}

// On reports whether the model's cache is on, when it is configured.
func (m *ModelCache) On() bool { return m != nil && (m.Enabled == nil || *m.Enabled) }

// Off reports whether the model's cache is explicitly off, which no
// key's setting overrides.
func (m *ModelCache) Off() bool { return m != nil && m.Enabled != nil && !*m.Enabled }

// WithDefaults returns the model's settings with every zero field at
// its default; a nil m gives the defaults a key's enabled: true uses on
// a model that says nothing.
func (m *ModelCache) WithDefaults() ModelCache {
	var out ModelCache
	if m != nil {
		out = *m
	}
	if out.TTL == 0 {
		out.TTL = Duration(DefaultCacheTTL)
	}
	return out
}

// KeyCache is a key's say over the cache.
type KeyCache struct {
	// Enabled: unset, the key's requests are cached where their model
	// says; false, never; true, on every model not explicitly off, at
	// the model's settings or the defaults.
	Enabled *bool `yaml:"enabled"`
	// ClientControls (default true): the key's requests may steer the
	// cache with Cache-Control (no-cache, no-store, max-age); false,
	// the header is ignored.
	ClientControls *bool `yaml:"client_controls"`
}

// Controls reports whether a key's clients may steer the cache with
// Cache-Control; a nil k (a key that says nothing, or no key) may.
func (k *KeyCache) Controls() bool { return k == nil || k.ClientControls == nil || *k.ClientControls }

// CacheOn reports whether key k's requests for model m are cached; k
// may be nil (no key, or a key that says nothing).
func CacheOn(m *ModelCache, k *KeyCache) bool {
	switch {
	case m.Off():
		return false
	case k != nil && k.Enabled != nil:
		return *k.Enabled
	}
	return m.On()
}

func (c *Cache) fill(unset func(field string, zero bool) bool) {
	if unset("max_bytes", c.MaxBytes == 0) {
		c.MaxBytes = DefaultCacheMaxBytes
	}
	if unset("max_entry_bytes", c.MaxEntryBytes == 0) {
		c.MaxEntryBytes = DefaultCacheMaxEntryBytes
	}
}

// WithDefaults returns c with every zero field at its default: for a
// Config built in code, where zero means unset.
func (c Cache) WithDefaults() Cache {
	c.fill(func(_ string, zero bool) bool { return zero })
	return c
}

// cacheDefaults fills the cache's settings the file left out.
func (c *Config) cacheDefaults(unset func(path string, zero bool) bool) {
	c.Cache.fill(func(field string, zero bool) bool { return unset("cache."+field, zero) })
	for i := range c.Models {
		if mc := c.Models[i].Cache; mc != nil && unset(fmt.Sprintf("models[%d].cache.ttl", i), mc.TTL == 0) {
			mc.TTL = Duration(DefaultCacheTTL)
		}
	}
}

func (c *Config) validateCache(v *checker) {
	cc := c.Cache
	if cc.MaxBytes < 0 || (cc.MaxBytes == 0 && v.src.has("cache.max_bytes")) {
		v.add("cache.max_bytes", "must be positive; write e.g. 64MiB")
	}
	if cc.MaxEntryBytes < 0 || (cc.MaxEntryBytes == 0 && v.src.has("cache.max_entry_bytes")) {
		v.add("cache.max_entry_bytes", "must be positive; write e.g. 1MiB")
	}
	if cc.MaxBytes > 0 && cc.MaxEntryBytes > cc.MaxBytes {
		v.add("cache.max_entry_bytes", "%s is more than max_bytes (%s), so no answer that large could be stored; lower it, or raise max_bytes",
			cc.MaxEntryBytes, cc.MaxBytes)
	}
	for i := range c.Models {
		mc := c.Models[i].Cache
		if mc == nil || mc.Off() {
			continue
		}
		at := func(f string) string { return fmt.Sprintf("models[%d].cache.%s", i, f) }
		if mc.TTL < 0 || (mc.TTL == 0 && v.src.has(at("ttl"))) {
			v.add(at("ttl"), "must be positive; write e.g. 10m, or enabled: false to keep the model's answers out of the cache")
		}
		if mc.StaleIfError < 0 {
			v.add(at("stale_if_error"), "is negative; write e.g. 1h, or 0s (the default) to keep no entry past its ttl")
		}
	}
}
