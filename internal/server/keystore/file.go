package keystore

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// FileName is the file in state.dir that holds the keys.
const FileName = "keys.json"

// File keeps the records in a JSON file (see the package comment). With
// an empty path it keeps them in memory only, for tests.
type File struct {
	path string
	mu   sync.Mutex // serialises Apply
	snap atomic.Pointer[Snapshot]
}

var _ Store = (*File)(nil)

// fileData is the file's contents.
type fileData struct {
	Version uint64    `json:"version"`
	Keys    []*Record `json:"keys"`
}

// OpenFile reads dir/keys.json, if it exists, and keeps the records
// there from now on; it makes dir if it is missing. dir "" keeps them in
// memory.
func OpenFile(dir string) (*File, error) {
	f := &File{}
	snap := &Snapshot{Loaded: true, Records: map[string]*Record{}}
	if dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("state.dir: %w", err)
		}
		f.path = filepath.Join(dir, FileName)
		data, err := os.ReadFile(f.path)
		switch {
		case os.IsNotExist(err):
		case err != nil:
			return nil, fmt.Errorf("state.dir: %w", err)
		default:
			var d fileData
			if err := json.Unmarshal(data, &d); err != nil {
				return nil, fmt.Errorf("%s: not the key store's JSON (%v); restore it from a backup, or move it away to start with no keys made at run time", f.path, err)
			}
			snap.Version = d.Version
			for _, r := range d.Keys {
				if r != nil && r.Key.Name != "" {
					snap.Records[r.Key.Name] = r
				}
			}
		}
	}
	f.snap.Store(snap)
	return f, nil
}

// Snapshot implements Store.
func (f *File) Snapshot() *Snapshot { return f.snap.Load() }

// Where implements Store.
func (f *File) Where() string {
	if f.path == "" {
		return "memory"
	}
	return f.path
}

// Close implements Store.
func (f *File) Close() error { return nil }

// Apply implements Store: the file is written before the change is
// published, and a change the file did not take is not published.
func (f *File) Apply(_ context.Context, name string, change Change) (*Record, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	old := f.snap.Load()
	var cur *Record
	if r := old.Records[name]; r != nil {
		cur = r.Clone()
	}
	next, err := change(cur)
	if err != nil {
		return nil, err
	}
	snap := &Snapshot{Version: old.Version + 1, Loaded: true, Records: make(map[string]*Record, len(old.Records)+1)}
	for n, r := range old.Records {
		snap.Records[n] = r
	}
	next.Version = snap.Version
	snap.Records[name] = next.Clone()
	if err := f.write(snap); err != nil {
		return nil, err
	}
	f.snap.Store(snap)
	return next, nil
}

// write replaces the file with snap: a temporary file, synced, then
// renamed over it, and the directory synced.
func (f *File) write(snap *Snapshot) error {
	if f.path == "" {
		return nil
	}
	d := fileData{Version: snap.Version, Keys: make([]*Record, 0, len(snap.Records))}
	for _, r := range snap.Records {
		d.Keys = append(d.Keys, r)
	}
	data, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(f.path)
	tmp, err := os.CreateTemp(dir, FileName+".*.tmp")
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	fail := func(err error) error {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("%w: writing %s: %v", ErrUnavailable, f.path, err)
	}
	if err := tmp.Chmod(0o600); err != nil {
		return fail(err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp.Name(), f.path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("%w: writing %s: %v", ErrUnavailable, f.path, err)
	}
	if dh, err := os.Open(dir); err == nil {
		dh.Sync()
		dh.Close()
	}
	return nil
}
