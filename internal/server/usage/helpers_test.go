package usage

import (
	"context"
	"sort"
	"testing"

	"github.com/sluice-gw/sluice/internal/server/redistest"
)

// readDay is day's records in s, sorted.
func readDay(t testing.TB, s Store, day string) []Record {
	t.Helper()
	var out []Record
	if err := s.Read(context.Background(), day, func(r Record) error { out = append(out, r); return nil }); err != nil {
		t.Fatalf("read %s: %v", day, err)
	}
	sort.Slice(out, func(i, j int) bool { return less(out[i], out[j]) })
	return out
}

// stores are the three stores, each fresh, for tests every store must
// pass.
func stores(t *testing.T) map[string]func(t *testing.T) Store {
	return map[string]func(t *testing.T) Store{
		"memory": func(t *testing.T) Store { return NewMemoryStore() },
		"file": func(t *testing.T) Store {
			s, err := NewFileStore(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		"redis": func(t *testing.T) Store {
			c := redistest.Conn(t)
			return NewRedisStore(c, redistest.Prefix(t, c), 400)
		},
	}
}
