package spendstore

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-gw/sluice/internal/core/price"
	"github.com/sluice-gw/sluice/internal/core/spend"
)

// FileName is the spend journal's name in state.dir.
const FileName = "spend.journal"

// File keeps spend in memory and journals every change to a file in
// state.dir, so that a restart carries on from what was spent.
//
// The journal is a text file of lines "bucket delta expires" (expires in
// Unix nanoseconds). Every change is one write(2) of its lines before
// the call returns, so a crash of the process loses nothing: the kernel
// holds the bytes. The file is fsynced once a second when it changed
// (SyncEvery), so a crash of the machine (power, kernel) loses at most
// the last second's changes: spend, and the grants it would have
// refused, of that second. A line torn by such a crash is skipped when
// the journal is read.
//
// At open, and once the journal has CompactEvery lines, it is
// rewritten as one line per live bucket (to a temporary file, fsynced,
// renamed over the journal), so it stays as small as the live windows.
// Only one process may use a state.dir.
type File struct {
	mem   *Memory
	path  string
	f     *os.File
	lines int
	dirty bool
	stop  chan struct{}
	done  chan struct{}
	err   error // the last write's failure, reported by the next call
}

// SyncEvery is how often a changed journal is fsynced.
const SyncEvery = time.Second

// CompactEvery is how many lines the journal grows to before it is
// rewritten.
const CompactEvery = 100000

// OpenFile opens (or creates) dir's spend journal and replays it.
func OpenFile(dir string) (*File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("state.dir: %w", err)
	}
	s := &File{mem: NewMemory(), path: filepath.Join(dir, FileName), stop: make(chan struct{}), done: make(chan struct{})}
	if err := s.replay(); err != nil {
		return nil, err
	}
	if err := s.compact(); err != nil {
		return nil, err
	}
	go s.syncLoop()
	return s, nil
}

// replay reads the journal into memory.
func (s *File) replay() error {
	f, err := os.Open(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("state.dir: reading the spend journal: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		parts := strings.Fields(sc.Text())
		if len(parts) != 3 {
			continue // a torn last line
		}
		d, err1 := strconv.ParseInt(parts[1], 10, 64)
		exp, err2 := strconv.ParseInt(parts[2], 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		s.mem.add(spend.Bucket{ID: parts[0], Expires: time.Unix(0, exp)}, price.Micros(d))
	}
	return sc.Err()
}

// compact rewrites the journal as one line per live bucket. Under the
// memory's lock, or before the store is shared.
func (s *File) compact() error {
	tmp := s.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("state.dir: writing the spend journal: %w", err)
	}
	w := bufio.NewWriter(f)
	now := s.mem.now()
	n := 0
	for id, e := range s.mem.buckets {
		if now.After(e.exp) {
			delete(s.mem.buckets, id)
			continue
		}
		fmt.Fprintf(w, "%s %d %d\n", id, e.v, e.exp.UnixNano())
		n++
	}
	if err := w.Flush(); err == nil {
		err = f.Sync()
	}
	f.Close()
	if err != nil {
		return fmt.Errorf("state.dir: writing the spend journal: %w", err)
	}
	if err := os.Rename(tmp, s.path); err != nil {
		return fmt.Errorf("state.dir: writing the spend journal: %w", err)
	}
	if d, err := os.Open(filepath.Dir(s.path)); err == nil {
		d.Sync()
		d.Close()
	}
	if s.f != nil {
		s.f.Close()
	}
	s.f, err = os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("state.dir: opening the spend journal: %w", err)
	}
	s.lines = n
	return nil
}

// journal appends lines for buckets changed by d. Under the memory's lock.
func (s *File) journal(buckets []spend.Bucket, d price.Micros) error {
	var b strings.Builder
	for _, bk := range buckets {
		fmt.Fprintf(&b, "%s %d %d\n", bk.ID, d, bk.Expires.UnixNano())
	}
	if _, err := s.f.WriteString(b.String()); err != nil {
		return fmt.Errorf("spend journal: %w", err)
	}
	s.dirty = true
	s.lines += len(buckets)
	if s.lines >= CompactEvery {
		return s.compact()
	}
	return nil
}

func (s *File) syncLoop() {
	defer close(s.done)
	t := time.NewTicker(SyncEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		s.mem.mu.Lock()
		if s.dirty {
			s.dirty = false
			s.f.Sync()
		}
		s.mem.mu.Unlock()
	}
}

// Reserve implements Store: in memory, then journalled.
func (s *File) Reserve(_ context.Context, needs []spend.Need, amount price.Micros) (spend.Totals, *spend.Refusal, error) {
	s.mem.mu.Lock()
	defer s.mem.mu.Unlock()
	t, r := s.mem.reserve(needs, amount)
	if r != nil {
		return t, r, nil
	}
	buckets := make([]spend.Bucket, len(needs))
	for i, n := range needs {
		buckets[i] = n.Reserve
	}
	// A failed write keeps the reservation: in memory it still counts,
	// and the request goes on; the error is logged by the caller.
	return t, nil, s.journal(buckets, amount)
}

// Adjust implements Store.
func (s *File) Adjust(_ context.Context, buckets []spend.Bucket, delta price.Micros) error {
	s.mem.mu.Lock()
	defer s.mem.mu.Unlock()
	for _, b := range buckets {
		s.mem.add(b, delta)
	}
	return s.journal(buckets, delta)
}

// Read implements Store.
func (s *File) Read(ctx context.Context, needs []spend.Need) (spend.Totals, error) {
	return s.mem.Read(ctx, needs)
}

// Close stops the sync loop and fsyncs the journal.
func (s *File) Close() error {
	select {
	case <-s.stop:
		return nil
	default:
	}
	close(s.stop)
	<-s.done
	s.mem.mu.Lock()
	defer s.mem.mu.Unlock()
	err := s.f.Sync()
	s.f.Close()
	return err
}
