package spendstore

import (
	"context"
	"sync"
	"time"

	"github.com/sluice-gw/sluice/internal/core/price"
	"github.com/sluice-gw/sluice/internal/core/spend"
)

// Memory keeps spend in this process: for tests, and the table the file
// store journals.
type Memory struct {
	mu      sync.Mutex
	buckets map[string]entry
	// now is the clock expiry is judged by.
	now func() time.Time
}

type entry struct {
	v   price.Micros
	exp time.Time
}

// NewMemory returns an empty store.
func NewMemory() *Memory { return &Memory{buckets: map[string]entry{}, now: time.Now} }

// get is bucket b's amount; an expired bucket is gone. Under mu.
func (m *Memory) get(id string) price.Micros {
	e, ok := m.buckets[id]
	if !ok {
		return 0
	}
	if !e.exp.IsZero() && m.now().After(e.exp) {
		delete(m.buckets, id)
		return 0
	}
	return e.v
}

// add adds d to bucket b, never below zero. Under mu.
func (m *Memory) add(b spend.Bucket, d price.Micros) {
	v := max(m.get(b.ID)+d, 0)
	m.buckets[b.ID] = entry{v: v, exp: b.Expires}
}

func (m *Memory) totals(needs []spend.Need) spend.Totals {
	t := make(spend.Totals, len(needs))
	for i, n := range needs {
		t[i] = make([]price.Micros, len(n.Count))
		for j, b := range n.Count {
			t[i][j] = m.get(b.ID)
		}
	}
	return t
}

// Reserve implements Store.
func (m *Memory) Reserve(_ context.Context, needs []spend.Need, amount price.Micros) (spend.Totals, *spend.Refusal, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, r := m.reserve(needs, amount)
	return t, r, nil
}

func (m *Memory) reserve(needs []spend.Need, amount price.Micros) (spend.Totals, *spend.Refusal) {
	t := m.totals(needs)
	if r := spend.Decide(needs, t); r != nil {
		return t, r
	}
	for i, n := range needs {
		m.add(n.Reserve, amount)
		t[i][len(t[i])-1] += amount
	}
	return t, nil
}

// Adjust implements Store.
func (m *Memory) Adjust(_ context.Context, buckets []spend.Bucket, delta price.Micros) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, b := range buckets {
		m.add(b, delta)
	}
	return nil
}

// Read implements Store.
func (m *Memory) Read(_ context.Context, needs []spend.Need) (spend.Totals, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.totals(needs), nil
}

// Close implements Store.
func (m *Memory) Close() error { return nil }
