package usage

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

// A durable writer (RedisOptions.Dir set) keeps, beside its ledger's
// day files, writer.json: its name, the epoch it knew, the days Redis
// may not have taken, and the registry and marks as it last read them,
// so that after a restart it writes the same fields, finds a loss it
// missed while down, and marks from what it knew before.

// saved is what a durable writer keeps in writer.json.
type saved struct {
	Writer string `json:"writer"`
	// Epoch is the fleet's epoch the writer last knew.
	Epoch string `json:"epoch"`
	// Unsent are the days whose rows were appended to the ledger and
	// may not have reached Redis.
	Unsent []string `json:"unsent,omitempty"`
	// View is the registry and the marks as last read, in epoch
	// ViewEpoch: a loss found at the next start marks from it.
	ViewEpoch string            `json:"view_epoch,omitempty"`
	Writers   map[string]string `json:"writers,omitempty"`
	Gaps      map[string]string `json:"gaps,omitempty"`
	// Restore is a write-back's marks not known to have been written.
	Restore map[string]string `json:"restore_marks,omitempty"`
}

// open reads a durable writer's state, or starts it: a writer new to
// Redis (no epoch known) writes back every day its ledger holds (the
// records of a gateway that kept them in state.dir alone, before store:
// was set); one that knew an epoch writes the days that may not have
// reached Redis (a loss found at the first write writes them all).
// REQUIRES: s.durable.
func (s *RedisStore) open() error {
	var st saved
	data, err := os.ReadFile(s.ledgerPath())
	switch {
	case err == nil:
		if err := json.Unmarshal(data, &st); err != nil || st.Writer == "" {
			return fmt.Errorf("%s is not a usage writer's state (%v); move it away to start a new writer, whose records are new to the store", s.ledgerPath(), err)
		}
	case os.IsNotExist(err):
		st.Writer = newID()
	default:
		return err
	}
	s.writer, s.known = st.Writer, st.Epoch
	if st.ViewEpoch != "" {
		s.view = view{epoch: st.ViewEpoch, version: "", writers: st.Writers, gaps: st.Gaps}
	}
	days, err := s.own.list()
	if err != nil {
		return err
	}
	var todo []string
	for _, d := range days {
		// All of them when new to Redis, or when a write-back after a
		// loss had not ended.
		if s.known == "" || len(st.Restore) > 0 || contains(st.Unsent, d) {
			todo = append(todo, d)
		}
	}
	for _, d := range st.Unsent {
		s.unsent[d] = true
	}
	if len(todo) > 0 || len(st.Restore) > 0 {
		s.restore = &restore{marks: st.Restore, all: st.Restore, days: todo, since: time.Now(), loss: len(st.Restore) > 0}
	}
	return s.save()
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// noteUnsent notes, durably, the days of recs as possibly unsent before
// they are appended.
// REQUIRES: s.mu held; s.durable.
func (s *RedisStore) noteUnsent(recs []Record) error {
	added := false
	for _, r := range recs {
		if !s.unsent[r.Day] {
			s.unsent[r.Day] = true
			added = true
		}
	}
	if !added {
		return nil
	}
	s.unsentAt = time.Now()
	return s.save()
}

// save writes a durable writer's state (writer.json: written whole to a
// temporary file, fsynced, renamed over it); nothing without a ledger
// on disk.
// REQUIRES: s.mu held.
func (s *RedisStore) save() error {
	if !s.durable {
		return nil
	}
	st := saved{Writer: s.writer, Epoch: s.known, ViewEpoch: s.view.epoch, Writers: s.view.writers, Gaps: s.view.gaps}
	for d := range s.unsent {
		st.Unsent = append(st.Unsent, d)
	}
	sort.Strings(st.Unsent)
	if s.restore != nil && s.restore.loss {
		st.Restore = s.restore.all
	}
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if err := writeFileSynced(s.ledgerPath(), data); err != nil {
		s.log.Error("usage: this replica's ledger state cannot be written; a restart may write its records again from the start", "path", s.ledgerPath(), "err", err)
		return err
	}
	return nil
}

// writeFileSynced replaces path with data: a temporary file beside it,
// fsynced, renamed over it.
func writeFileSynced(path string, data []byte) error {
	tmp, err := os.CreateTemp(dirOf(path), ".writer-*.tmp")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

func dirOf(path string) string {
	if i := strings.LastIndexAny(path, `/\`); i >= 0 {
		return path[:i]
	}
	return "."
}
