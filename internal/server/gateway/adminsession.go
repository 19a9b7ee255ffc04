package gateway

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"sync"
	"time"
)

// Admin sessions: what a browser holds instead of the admin token.
const (
	// adminSessionTTL is how long a session lasts from the token's
	// exchange; then the dashboard asks for the token again.
	adminSessionTTL = 12 * time.Hour
	// maxAdminSessions bounds the table. Opening a session takes the
	// token, so only the operator fills it; past the bound the session
	// closest to its end is dropped.
	maxAdminSessions = 256
)

// adminSessions is the admin listener's table of browser sessions. A
// session's id is 32 random bytes, which the table keeps only as their
// SHA-256, with the session's end. Expired sessions are pruned when
// seen and whenever one is opened. The table lives in memory: a restart
// (the only way the admin token changes) ends every session.
type adminSessions struct {
	now func() time.Time
	ttl time.Duration
	max int

	mu   sync.Mutex
	ends map[[sha256.Size]byte]time.Time
}

func newAdminSessions(now func() time.Time) *adminSessions {
	if now == nil {
		now = time.Now
	}
	return &adminSessions{now: now, ttl: adminSessionTTL, max: maxAdminSessions, ends: map[[sha256.Size]byte]time.Time{}}
}

// open starts a session, returning its id (the cookie's value) and end.
func (s *adminSessions) open() (id string, ends time.Time) {
	var b [32]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	id = base64.RawURLEncoding.EncodeToString(b[:])
	now := s.now()
	ends = now.Add(s.ttl)
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, end := range s.ends {
		if !now.Before(end) {
			delete(s.ends, k)
		}
	}
	for len(s.ends) >= s.max {
		var first [sha256.Size]byte
		var firstEnd time.Time
		for k, end := range s.ends {
			if firstEnd.IsZero() || end.Before(firstEnd) {
				first, firstEnd = k, end
			}
		}
		delete(s.ends, first)
	}
	s.ends[sha256.Sum256([]byte(id))] = ends
	return id, ends
}

type sessionState int

const (
	sessionUnknown sessionState = iota
	sessionLive
	sessionExpired
)

// check says whether id is a live session, one that has expired (and
// is now forgotten), or none at all.
func (s *adminSessions) check(id string) sessionState {
	if id == "" {
		return sessionUnknown
	}
	k := sha256.Sum256([]byte(id))
	s.mu.Lock()
	defer s.mu.Unlock()
	end, ok := s.ends[k]
	switch {
	case !ok:
		return sessionUnknown
	case s.now().Before(end):
		return sessionLive
	default:
		delete(s.ends, k)
		return sessionExpired
	}
}

// size is how many sessions the table holds.
func (s *adminSessions) size() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ends)
}
