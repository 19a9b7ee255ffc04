package keystore

import (
	"context"
	"errors"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
)

// Record is one key made at run time.
type Record struct {
	// Key is the key as the config would declare it: name, tenant
	// (its team), the SHA-256 of its current secret, priority, models,
	// limits, and any field config.Key gains later.
	Key config.Key `json:"key"`
	// ExpiresAt, when set, is when the key stops working.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// Disabled: the key is refused until enabled again.
	Disabled bool `json:"disabled,omitempty"`
	// Revoked: the key is gone for good; the record is its tombstone.
	Revoked   bool       `json:"revoked,omitempty"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
	// OldSHA256 is the previous secret's SHA-256 after a rotation; it
	// works until OldUntil.
	OldSHA256 string    `json:"old_sha256,omitempty"`
	OldUntil  time.Time `json:"old_until,omitzero"`
	// Version is the store's version (Snapshot.Version) this record was
	// written at, and Epoch the fleet's epoch then (Redis only): when
	// Redis loses its data, each replica writes back the records it
	// holds, and of two copies of a record written before the loss the
	// higher version wins, while a record written since the loss (in
	// the current epoch) is never replaced by one written before it.
	Version uint64 `json:"version,omitempty"`
	Epoch   string `json:"epoch,omitempty"`
}

// Clone is a deep copy of r, which the store's callers may change.
func (r *Record) Clone() *Record {
	c := *r
	c.Key.Models = append([]string(nil), r.Key.Models...)
	if r.Key.Degrade != nil {
		d := *r.Key.Degrade
		c.Key.Degrade = &d
	}
	if r.ExpiresAt != nil {
		t := *r.ExpiresAt
		c.ExpiresAt = &t
	}
	if r.RevokedAt != nil {
		t := *r.RevokedAt
		c.RevokedAt = &t
	}
	return &c
}

// Snapshot is every record as the store last read them. It is never
// changed once published: a change makes a new one.
type Snapshot struct {
	// Version grows with every change the store has seen.
	Version uint64
	// Loaded: the records were read at least once (a Redis store that
	// has not reached Redis yet has not).
	Loaded  bool
	Records map[string]*Record
}

// HasAny reports whether the store holds any record, a revoked one
// included: a store that ever held keys.
func (s *Snapshot) HasAny() bool { return len(s.Records) > 0 }

// Errors a change can end with.
var (
	// ErrNotFound: no key of that name (or only its tombstone).
	ErrNotFound = errors.New("no such key")
	// ErrExists: a live key already has that name.
	ErrExists = errors.New("a key of that name exists")
	// ErrUnavailable: the store did not answer.
	ErrUnavailable = errors.New("the key store is unavailable")
)

// Change computes a key's new record from its current one (nil when
// there is none, a tombstone included as it is). It returns the record
// to write, or an error to write nothing; it must not keep cur, and may
// be called more than once (a Redis change whose read went stale is
// tried again).
type Change func(cur *Record) (*Record, error)

// Store keeps the records.
type Store interface {
	// Snapshot is the latest records the store has read; never nil.
	Snapshot() *Snapshot
	// Apply changes one key's record atomically: change sees the
	// record as it is at the moment the new one is written, and the
	// new snapshot is published before Apply returns.
	Apply(ctx context.Context, name string, change Change) (*Record, error)
	// Where says where the records live, for logs and answers.
	Where() string
	// Close stops following changes.
	Close() error
}
