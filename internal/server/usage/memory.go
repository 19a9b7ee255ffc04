package usage

import (
	"context"
	"sync"
)

// MemoryStore keeps records in this process only: they are lost when
// it ends. It is the store when neither store: nor state.dir is set.
type MemoryStore struct {
	mu      sync.Mutex
	days    map[string]map[Row]Counts
	applied map[string]bool
}

// NewMemoryStore returns an empty store.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{days: map[string]map[Row]Counts{}, applied: map[string]bool{}}
}

// Where implements Store.
func (s *MemoryStore) Where() string { return "memory" }

// Add implements Store.
func (s *MemoryStore) Add(_ context.Context, id string, recs []Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.applied[id] {
		return nil
	}
	s.applied[id] = true
	if len(s.applied) > 64 {
		clear(s.applied) // a retry is of the last batch only
		s.applied[id] = true
	}
	for _, r := range recs {
		d := s.days[r.Day]
		if d == nil {
			d = map[Row]Counts{}
			s.days[r.Day] = d
		}
		c := d[r.Row]
		c.Add(r.Counts)
		d[r.Row] = c
	}
	return nil
}

// Read implements Store.
func (s *MemoryStore) Read(ctx context.Context, day string, fn func(Record) error) error {
	s.mu.Lock()
	d := s.days[day]
	recs := make([]Record, 0, len(d))
	for row, c := range d {
		recs = append(recs, Record{Day: day, Row: row, Counts: c})
	}
	s.mu.Unlock()
	for _, r := range recs {
		if err := fn(r); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// Prune implements Store.
func (s *MemoryStore) Prune(_ context.Context, before string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for d := range s.days {
		if d < before {
			delete(s.days, d)
		}
	}
	return nil
}

var _ Store = (*MemoryStore)(nil)
