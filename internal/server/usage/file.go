package usage

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// FileStore keeps records in a directory (state.dir/usage), one file
// per UTC day, usage-YYYY-MM-DD.jsonl: JSON lines, each a row's counts
// added by one flush. A flush appends its lines for a day with one
// write and fsyncs; a write that fails is cut off again, so a day's file
// holds whole flushes only. Reading a day adds its lines up. When a
// day's file holds more than compactFactor lines per distinct row, it
// is compacted: rewritten as one line per row (to a temporary file,
// fsynced, then renamed over it), so a file stays within a small
// multiple of its day's rows. A process that dies mid-write leaves at
// most a torn last line, which reading skips. Only this process writes
// the directory. Prune deletes the files of days past the retention.
type FileStore struct {
	dir string

	mu      sync.Mutex
	applied map[string]bool
	// hot is what the store knows of the day last written: its rows and
	// the lines its file holds.
	hot struct {
		day   string
		rows  map[Row]bool
		lines int
	}
}

// compactFactor: a day's file is compacted past this many lines per
// distinct row (and at least compactMin lines).
const (
	compactFactor = 8
	compactMin    = 1024
)

// NewFileStore returns a store in dir, which it creates if need be.
func NewFileStore(dir string) (*FileStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("usage records: %w; set state.dir to a directory this gateway may write", err)
	}
	return &FileStore{dir: dir, applied: map[string]bool{}}, nil
}

// Where implements Store.
func (s *FileStore) Where() string { return "file " + s.dir }

// Path is the file that holds day's records.
func (s *FileStore) Path(day string) string { return filepath.Join(s.dir, "usage-"+day+".jsonl") }

// line is a record as the files hold it (and as the JSON export writes
// a row).
type line struct {
	Key         string `json:"key"`
	Team        string `json:"team"`
	Model       string `json:"model"`
	Upstream    string `json:"upstream_model"`
	Requests    int64  `json:"requests"`
	Input       int64  `json:"input_tokens"`
	CachedInput int64  `json:"cached_input_tokens"`
	Output      int64  `json:"output_tokens"`
	Cost        int64  `json:"cost_micros"`
	Calls       int64  `json:"calls"` // 0 in lines written before calls were counted
}

func toLine(r Record) line {
	return line{r.Key, r.Team, r.Model, r.Upstream, r.Requests, r.Input, r.CachedInput, r.Output, r.Cost, r.Calls}
}

func (l line) record(day string) Record {
	return Record{Day: day, Row: Row{l.Key, l.Team, l.Model, l.Upstream}, Counts: Counts{l.Requests, l.Input, l.CachedInput, l.Output, l.Cost, l.Calls}}
}

// Add implements Store.
func (s *FileStore) Add(ctx context.Context, id string, recs []Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for start := 0; start < len(recs); {
		day := recs[start].Day
		end := start
		for end < len(recs) && recs[end].Day == day {
			end++
		}
		if _, err := time.Parse(time.DateOnly, day); err != nil {
			return fmt.Errorf("usage: record of day %q: %w", day, err)
		}
		if done := id + "/" + day; !s.applied[done] {
			if err := s.append(day, recs[start:end]); err != nil {
				return err
			}
			if len(s.applied) > 64 {
				clear(s.applied) // a retry is of the last batch only
			}
			s.applied[done] = true
		}
		start = end
	}
	return ctx.Err()
}

// append adds recs, all of day, to its file.
// REQUIRES: s.mu held.
func (s *FileStore) append(day string, recs []Record) error {
	if s.hot.day != day {
		if err := s.warm(day); err != nil {
			return err
		}
	}
	var b []byte
	for _, r := range recs {
		j, _ := json.Marshal(toLine(r))
		b = append(append(b, j...), '\n')
	}
	f, err := os.OpenFile(s.Path(day), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err == nil {
		if _, err = f.Write(b); err == nil {
			err = f.Sync()
		}
		if err != nil {
			f.Truncate(st.Size()) // whole flushes only
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	s.hot.lines += len(recs)
	for _, r := range recs {
		s.hot.rows[r.Row] = true
	}
	if s.hot.lines > max(compactMin, compactFactor*len(s.hot.rows)) {
		// The flush has landed: a compaction that fails leaves the file
		// as it was, to be compacted at a later append, and must not
		// fail the flush, whose retry would append it again.
		s.compact(day)
	}
	return nil
}

// warm makes day the hot day, reading what its file holds.
// REQUIRES: s.mu held.
func (s *FileStore) warm(day string) error {
	s.hot.day, s.hot.rows, s.hot.lines = day, map[Row]bool{}, 0
	if err := s.mend(day); err != nil {
		s.hot.day = ""
		return err
	}
	return s.scan(day, func(l line) { s.hot.rows[l.row()] = true; s.hot.lines++ })
}

// mend cuts a torn last line (a write the process died in) off day's
// file, so the next append starts a line of its own.
func (s *FileStore) mend(day string) error {
	f, err := os.OpenFile(s.Path(day), os.O_RDWR, 0)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return err
	}
	// Read back from the end to the last line break.
	var buf [4096]byte
	end := st.Size()
	for at := end; at > 0; {
		n := int64(len(buf))
		if at < n {
			n = at
		}
		at -= n
		if _, err := f.ReadAt(buf[:n], at); err != nil {
			return err
		}
		if at+n == end && buf[n-1] == '\n' {
			return nil // whole
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return f.Truncate(at + int64(i) + 1)
		}
	}
	return f.Truncate(0)
}

func (l line) row() Row { return Row{l.Key, l.Team, l.Model, l.Upstream} }

// scan calls fn with each whole line of day's file; a missing file has
// none.
func (s *FileStore) scan(day string, fn func(line)) error {
	f, err := os.Open(s.Path(day))
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var l line
		if json.Unmarshal(sc.Bytes(), &l) == nil {
			fn(l)
		}
	}
	return sc.Err()
}

// sum is day's rows with their counts added up.
func (s *FileStore) sum(day string) (map[Row]Counts, error) {
	rows := map[Row]Counts{}
	err := s.scan(day, func(l line) {
		r := l.record(day)
		c := rows[r.Row]
		c.Add(r.Counts)
		rows[r.Row] = c
	})
	return rows, err
}

// compact rewrites day's file as one line per row.
// REQUIRES: s.mu held.
func (s *FileStore) compact(day string) error {
	rows, err := s.sum(day)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(s.dir, ".usage-"+day+"-*.tmp")
	if err != nil {
		return err
	}
	w := bufio.NewWriter(tmp)
	for row, c := range rows {
		j, _ := json.Marshal(toLine(Record{Day: day, Row: row, Counts: c}))
		w.Write(j)
		w.WriteByte('\n')
	}
	err = w.Flush()
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), s.Path(day))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return err
	}
	s.hot.lines = len(rows)
	return nil
}

// rowsOf is day's rows with their counts added up.
func (s *FileStore) rowsOf(day string) (map[Row]Counts, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sum(day)
}

// days are the days the directory holds a file of, in order.
func (s *FileStore) days() ([]string, error) {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		day, ok := strings.CutPrefix(e.Name(), "usage-")
		day, ok2 := strings.CutSuffix(day, ".jsonl")
		if !ok || !ok2 || e.IsDir() {
			continue
		}
		if _, err := time.Parse(time.DateOnly, day); err == nil {
			out = append(out, day)
		}
	}
	return out, nil // ReadDir sorts by name: by day
}

// Read implements Store.
func (s *FileStore) Read(ctx context.Context, day string, fn func(Record) error) error {
	s.mu.Lock()
	rows, err := s.sum(day)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	for row, c := range rows {
		if err := fn(Record{Day: day, Row: row, Counts: c}); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// Prune implements Store.
func (s *FileStore) Prune(_ context.Context, before string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return filepath.WalkDir(s.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != s.dir {
				return filepath.SkipDir
			}
			return nil
		}
		day, ok := strings.CutPrefix(d.Name(), "usage-")
		day, ok2 := strings.CutSuffix(day, ".jsonl")
		if !ok || !ok2 || day >= before {
			return nil
		}
		if _, err := time.Parse(time.DateOnly, day); err != nil {
			return nil
		}
		if day == s.hot.day {
			s.hot.day = ""
		}
		return os.Remove(path)
	})
}

var _ Store = (*FileStore)(nil)
