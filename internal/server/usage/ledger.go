package usage

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"
)

// ledger is what one replica added to a shared store: per UTC day, the
// totals of the rows it added, so that it can write them again when the
// store loses them (RedisStore). With a directory (state.dir/usage) it
// is a FileStore there, each batch appended and fsynced before the
// shared store is sent it, and memory holds the days being written;
// without one it lives in memory, at most max rows, past which its
// oldest days are forgotten (and the span noted: a loss of them cannot
// be written back, and is reported).
//
// It is not safe for concurrent use: RedisStore holds its lock.
type ledger struct {
	files *FileStore // nil: memory only
	max   int

	days map[string]map[Row]Counts // held in memory
	rows int                       // in days
	// first and last are the span of days the ledger holds, forgotten
	// ones included ("" when none).
	first, last string
	// forgotFrom..forgotTo are the days a memory-only ledger dropped to
	// stay within max ("" when none).
	forgotFrom, forgotTo string
	// batch is the last batch added, and done how many of its records
	// (in its order) landed, so that its retry adds only the rest.
	batch string
	done  int
}

// DefaultLedgerRows bounds a ledger kept in memory (no state.dir):
// about 40 MB, enough for a year of a few hundred rows a day.
const DefaultLedgerRows = 250_000

func newLedger(files *FileStore, max int) (*ledger, error) {
	if max <= 0 {
		max = DefaultLedgerRows
	}
	l := &ledger{files: files, max: max, days: map[string]map[Row]Counts{}}
	if files != nil {
		days, err := files.days()
		if err != nil {
			return nil, err
		}
		if len(days) > 0 {
			l.first, l.last = days[0], days[len(days)-1]
		}
	}
	return l, nil
}

// add adds recs, a batch named id, sorted by day: each day's part to
// its file first, then to memory. A batch added again under the same
// id (a retry, whole and in the same order) adds only what did not
// land before.
func (l *ledger) add(id string, recs []Record) error {
	if id != l.batch {
		l.batch, l.done = id, 0
	}
	for l.done < len(recs) {
		start := l.done
		day := recs[start].Day
		end := start
		for end < len(recs) && recs[end].Day == day {
			end++
		}
		if _, err := time.Parse(time.DateOnly, day); err != nil {
			return fmt.Errorf("usage: record of day %q: %w", day, err)
		}
		rows, err := l.load(day)
		if err != nil {
			return err
		}
		if l.files != nil {
			if err := l.files.Add(context.Background(), id+"@"+strconv.Itoa(start), recs[start:end]); err != nil {
				return err
			}
		}
		for _, r := range recs[start:end] {
			c, ok := rows[r.Row]
			if !ok {
				l.rows++
			}
			c.Add(r.Counts)
			rows[r.Row] = c
		}
		if l.first == "" || day < l.first {
			l.first = day
		}
		if day > l.last {
			l.last = day
		}
		l.done = end
	}
	return nil
}

// load is day's rows in memory, read from its file first if need be.
func (l *ledger) load(day string) (map[Row]Counts, error) {
	if rows, ok := l.days[day]; ok {
		return rows, nil
	}
	rows := map[Row]Counts{}
	if l.files != nil {
		var err error
		if rows, err = l.files.rowsOf(day); err != nil {
			return nil, err
		}
	}
	l.days[day] = rows
	l.rows += len(rows)
	return rows, nil
}

// day is day's rows: from memory, else from its file (not kept in
// memory); nil when the ledger holds none.
func (l *ledger) day(day string) (map[Row]Counts, error) {
	if rows, ok := l.days[day]; ok {
		return rows, nil
	}
	if l.files != nil {
		return l.files.rowsOf(day)
	}
	return nil, nil
}

// list is every day the ledger holds, in order.
func (l *ledger) list() ([]string, error) {
	seen := map[string]bool{}
	var out []string
	for d := range l.days {
		seen[d] = true
		out = append(out, d)
	}
	if l.files != nil {
		days, err := l.files.days()
		if err != nil {
			return nil, err
		}
		for _, d := range days {
			if !seen[d] {
				out = append(out, d)
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// trim keeps memory small: with files, it drops the days keep does not
// want (they are on disk); in memory only, it drops the oldest days
// keep does not need while more than max rows are held, noting them as
// forgotten.
func (l *ledger) trim(keep func(day string) bool) {
	if l.files != nil {
		for d, rows := range l.days {
			if !keep(d) {
				l.rows -= len(rows)
				delete(l.days, d)
			}
		}
		return
	}
	if l.rows <= l.max {
		return
	}
	days := make([]string, 0, len(l.days))
	for d := range l.days {
		days = append(days, d)
	}
	sort.Strings(days)
	for _, d := range days {
		if l.rows <= l.max {
			break
		}
		if keep(d) {
			continue
		}
		l.rows -= len(l.days[d])
		delete(l.days, d)
		if l.forgotFrom == "" || d < l.forgotFrom {
			l.forgotFrom = d
		}
		if d > l.forgotTo {
			l.forgotTo = d
		}
	}
}

// prune drops the days before before.
func (l *ledger) prune(before string) error {
	for d, rows := range l.days {
		if d < before {
			l.rows -= len(rows)
			delete(l.days, d)
		}
	}
	if l.forgotTo != "" && l.forgotTo < before {
		l.forgotFrom, l.forgotTo = "", ""
	} else if l.forgotFrom != "" && l.forgotFrom < before {
		l.forgotFrom = before
	}
	if l.files != nil {
		if err := l.files.Prune(context.Background(), before); err != nil {
			return err
		}
	}
	days, err := l.list()
	if err != nil {
		return err
	}
	l.first, l.last = "", ""
	if len(days) > 0 {
		l.first, l.last = days[0], days[len(days)-1]
	}
	if l.forgotFrom != "" && (l.first == "" || l.forgotFrom < l.first) {
		l.first = l.forgotFrom
	}
	if l.forgotTo > l.last {
		l.last = l.forgotTo
	}
	return nil
}
