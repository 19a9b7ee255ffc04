// Package spendstore keeps the money spent against spend limits
// (package spend's buckets, in whole micro-dollars), where it outlives
// the process: in Redis when the config names a store (shared, exact,
// by the fleet), else in a journal file in state.dir; and in memory,
// for tests.
//
// Every store does the same two things. Reserve checks every limit of
// a request (spend.Fits on each limit's spent and reserved total) and,
// when all admit, adds the reservation to each limit's current bucket,
// as one atomic step. Adjust adds a settlement (actual - reserved) to
// the buckets a reservation went to. A reservation that is never
// settled (its replica died mid-request) stays charged at its maximum
// until its bucket expires with its window: its lease is the window.
// That errs toward spent, never toward a fresh allowance, and is
// bounded by the dead replica's requests in flight.
package spendstore

import (
	"context"

	"github.com/sluice-gw/sluice/internal/core/price"
	"github.com/sluice-gw/sluice/internal/core/spend"
)

// Store keeps spend.
type Store interface {
	// Reserve adds amount to each need's Reserve bucket if spend.Decide
	// admits the needs' totals, atomically. It returns the totals (with
	// the reservation, when admitted) and the refusal, nil when admitted.
	// On an error nothing was reserved, as far as the store knows.
	Reserve(ctx context.Context, needs []spend.Need, amount price.Micros) (spend.Totals, *spend.Refusal, error)
	// Adjust adds delta to each bucket (never below zero), for a
	// settlement: actual - reserved.
	Adjust(ctx context.Context, buckets []spend.Bucket, delta price.Micros) error
	// Read returns the needs' totals.
	Read(ctx context.Context, needs []spend.Need) (spend.Totals, error)
	// Close releases the store (flushes a file's journal).
	Close() error
}

var (
	_ Store = (*Memory)(nil)
	_ Store = (*File)(nil)
	_ Store = (*Redis)(nil)
)
