package usage

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/sluice-gw/sluice/internal/server/fleetstore"
)

// What a RedisStore does when Redis loses its data (redis.go has the
// layout). Every write's script reads the fleet's epoch; one that finds
// another than the writer knew calls lost, and the next syncs write
// back:
//
//  1. marks: every writer this replica knew (the registry and the marks
//     as it last read them, and itself) that has no registry entry yet
//     in the new epoch is marked, so an export in the meantime, or
//     forever for a writer that never comes back, says its days may be
//     incomplete;
//  2. days: every day the ledger holds, newest first, all its rows;
//  3. the registry entry, and the writer's own mark cleared (or set to
//     the days a memory-only ledger forgot).
//
// Each step is idempotent and kept across syncs: a write-back that
// fails or runs out of its time goes on at the next flush, and one
// interrupted by another loss starts again with the marks of both.

// Losses is how many times this store found that Redis lost its data.
func (s *RedisStore) Losses() int64 { return s.losses.Load() }

// IncompleteDays is how many days within the retention the marks, as
// this replica last read them, say may lack records.
func (s *RedisStore) IncompleteDays() int64 { return s.incomplete.Load() }

// entryOf is a registry entry or mark, read.
type entryOf struct {
	durable     bool
	first, last string
	label       string
}

func parseEntry(e string) (entryOf, bool) {
	p := strings.SplitN(e, " ", 4)
	if len(p) < 3 || (p[0] != "0" && p[0] != "1") {
		return entryOf{}, false
	}
	for _, d := range p[1:3] {
		if _, err := time.Parse(time.DateOnly, d); err != nil {
			return entryOf{}, false
		}
	}
	en := entryOf{durable: p[0] == "1", first: p[1], last: p[2], label: "-"}
	if len(p) == 4 {
		en.label = p[3]
	}
	return en, true
}

// lost starts a write-back after Redis lost its data: old is the epoch
// this writer knew, new the one Redis holds now.
// REQUIRES: s.mu held.
func (s *RedisStore) lost(old, new string) {
	marks := map[string]string{}
	if s.restore != nil {
		for w, e := range s.restore.all {
			marks[w] = e
		}
	}
	for w, e := range s.view.gaps {
		marks[w] = e
	}
	for w, e := range s.view.writers {
		if _, ok := parseEntry(e); ok {
			marks[w] = e
		}
	}
	delete(marks, s.writer)
	if e := s.entry(); e != "" {
		marks[s.writer] = e
	}
	days, err := s.own.list()
	if err != nil {
		// The ledger's directory cannot be listed: write back what
		// memory holds; the rest stays marked as this writer's gap.
		s.log.Error("usage: the ledger's days cannot be listed; writing back those in memory", "dir", s.dir, "err", err)
		days = days[:0]
		for d := range s.own.days {
			days = append(days, d)
		}
		sort.Strings(days)
	}
	all := map[string]string{}
	for w, e := range marks {
		all[w] = e
	}
	s.known = new
	s.restore = &restore{marks: marks, all: all, days: days, since: time.Now(), loss: true}
	s.dirty = map[string]map[Row]bool{}
	s.view = view{}
	s.losses.Add(1)
	if s.onLoss != nil {
		s.onLoss(old, new)
	}
	s.log.Warn("usage: the shared store lost its data (the fleet's epoch changed); this replica writes back the usage records it holds, and until each replica it knew has done so the export marks that replica's days as possibly incomplete",
		"epoch_was", old, "epoch", new, "days", len(days), "writers_known", len(marks), "writer", s.writer)
	s.save()
}

// restoreStep goes on with the write-back: the marks, then the days,
// newest first, then the registry entry. It stops, to go on at the
// next sync, after about two seconds of days.
// REQUIRES: s.mu held; s.restore set.
func (s *RedisStore) restoreStep(ctx context.Context) error {
	r := s.restore
	if len(r.marks) > 0 {
		n, err := s.mark(ctx, r.marks)
		if err != nil {
			return err
		}
		r.marks, r.marked = nil, n
	}
	start := time.Now()
	for len(r.days) > 0 {
		if time.Since(start) > 2*time.Second {
			return nil
		}
		day := r.days[len(r.days)-1]
		totals, err := s.own.day(day)
		if err != nil {
			return err
		}
		rows := make([]Row, 0, len(totals))
		for row := range totals {
			rows = append(rows, row)
		}
		for at := 0; at < len(rows); at += chunkRows {
			part := rows[at:min(at+chunkRows, len(rows))]
			if err := s.call(ctx, day, s.fields(totals, part), "", ""); err != nil {
				return err
			}
		}
		r.days = r.days[:len(r.days)-1]
		r.rows += len(rows)
	}
	mark := "-"
	if s.own.forgotFrom != "" {
		mark = "0 " + s.own.forgotFrom + " " + s.own.forgotTo + " " + s.label
	}
	if err := s.call(ctx, "", nil, s.entry(), mark); err != nil {
		return err
	}
	s.restore = nil
	if r.loss {
		s.log.Info("usage: wrote back this replica's usage records after the shared store lost its data",
			"rows", r.rows, "took", time.Since(r.since).Round(time.Millisecond), "marked", r.marked, "writer", s.writer)
		if mark != "-" {
			s.log.Warn("usage: this replica no longer held some of the days it wrote (its ledger in memory is bounded; set state.dir to keep it whole): they stay marked incomplete in the export",
				"from", s.own.forgotFrom, "to", s.own.forgotTo)
		}
	}
	s.save()
	return nil
}

// mark writes marks (writer → entry) for the writers with no registry
// entry, in chunks; it returns how many it made.
// REQUIRES: s.mu held.
func (s *RedisStore) mark(ctx context.Context, marks map[string]string) (int, error) {
	writers := make([]string, 0, len(marks))
	for w := range marks {
		writers = append(writers, w)
	}
	sort.Strings(writers)
	keys := []string{fleetstore.EpochKey(s.prefix), s.registryKey(), s.gapsKey()}
	total := 0
	for at := 0; at < len(writers); at += chunkRows {
		args := []any{fleetstore.NewEpochName(), s.known}
		for _, w := range writers[at:min(at+chunkRows, len(writers))] {
			args = append(args, w, marks[w])
		}
		res, err := markScript.Run(ctx, s.c, keys, args...).Slice()
		if err != nil {
			return total, err
		}
		if len(res) != 2 {
			return total, fmt.Errorf("usage: the store's answer %v is not {epoch, marks}", res)
		}
		id, _ := res[0].(string)
		n, _ := res[1].(int64)
		if n < 0 {
			s.lost(s.known, id)
			return total, errLost
		}
		total += int(n)
	}
	return total, nil
}

// after runs at the end of a sync that reached Redis: the view is read
// again if the registry changed, the marks are logged once they have
// stood for the settling time, and a durable writer forgets the days it
// has sent.
// REQUIRES: s.mu held.
func (s *RedisStore) after(ctx context.Context) error {
	if s.seen[0] != "" && (s.seen[0] != s.view.epoch || s.seen[1] != s.view.version) {
		if err := s.refreshView(ctx); err != nil {
			return err
		}
	}
	now := time.Now()
	switch {
	case len(s.view.gaps) > 0:
		if s.gapSince.IsZero() {
			s.gapSince = now
		}
		if !s.gapLogged && now.Sub(s.gapSince) >= s.settle {
			s.gapLogged = true
			gaps := gapsOf(s.view.gaps)
			var spans, who []string
			for _, g := range gaps {
				spans = append(spans, g.From+".."+g.To)
				kind := "memory only"
				if g.Durable {
					kind = "state.dir: writes them back when it runs again"
				}
				who = append(who, g.Label+" ("+kind+")")
			}
			s.log.Warn("usage: records the shared store lost are missing and no running replica has written them back; the export marks these days as possibly incomplete",
				"days", strings.Join(mergeSpans(spans), ", "), "writers", strings.Join(who, ", "))
		}
	case s.gapLogged:
		s.log.Info("usage: every record the shared store lost has been written back; the export is whole again")
		s.gapLogged, s.gapSince = false, time.Time{}
	default:
		s.gapSince = time.Time{}
	}
	if s.resentAt.IsZero() {
		s.resentAt = now
	} else if now.Sub(s.resentAt) >= resendEvery && s.restore == nil {
		s.resentAt = now
		s.resendRecent()
	}
	if s.durable && s.restore == nil && len(s.dirty) == 0 && len(s.unsent) > 0 && now.Sub(s.unsentAt) >= 30*time.Second {
		clear(s.unsent)
		s.unsentAt = now
		return s.save()
	}
	return nil
}

// resendRecent marks every row of the ledger's last two days dirty, so
// the next flush writes their totals again (resendEvery).
// REQUIRES: s.mu held.
func (s *RedisStore) resendRecent() {
	if s.own.last == "" {
		return
	}
	t, err := time.Parse(time.DateOnly, s.own.last)
	if err != nil {
		return
	}
	for _, day := range []string{Day(t.AddDate(0, 0, -1)), s.own.last} {
		rows, ok := s.own.days[day]
		if !ok {
			continue
		}
		d := s.dirty[day]
		if d == nil {
			d = map[Row]bool{}
			s.dirty[day] = d
		}
		for r := range rows {
			d[r] = true
		}
	}
}

// refreshView reads the registry and the marks, in the epoch this
// writer knows (read with the epoch, so a loss between is never taken
// for the fleet's records).
// REQUIRES: s.mu held.
func (s *RedisStore) refreshView(ctx context.Context) error {
	keys := []string{fleetstore.EpochKey(s.prefix), s.registryKey(), s.gapsKey()}
	res, err := viewScript.Run(ctx, s.c, keys, s.known).Slice()
	if err != nil {
		return err
	}
	if len(res) != 3 {
		return nil // the epoch moved: the next write finds the loss
	}
	v := view{epoch: s.known, writers: pairs(res[1]), gaps: pairs(res[2])}
	v.version = v.writers["~v"]
	if v.version == "" {
		v.version = "0"
	}
	delete(v.writers, "~v")
	s.view = v
	s.incomplete.Store(int64(daysCovered(gapsOf(v.gaps), Day(time.Now().AddDate(0, 0, -s.retention)), Day(time.Now()))))
	return s.save()
}

func pairs(v any) map[string]string {
	out := map[string]string{}
	kv, _ := v.([]any)
	for i := 0; i+1 < len(kv); i += 2 {
		k, _ := kv[i].(string)
		val, _ := kv[i+1].(string)
		out[k] = val
	}
	return out
}
