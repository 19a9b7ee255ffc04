package chaos

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/harness/procs"
)

// TestSmoke is the short run CI does: every fault for 2 s against real
// processes, and every row must hold. It builds the sluice binary, and
// needs redis-server for the redis-killed row. About a minute; skipped
// with -short and under the race detector (CI runs it without:
// go test ./chaos -run Smoke).
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("the chaos smoke run takes about a minute")
	}
	if raceEnabled {
		t.Skip("the chaos smoke run drives processes built without the race detector; run it without -race")
	}
	b := procs.Build{Out: filepath.Join(t.TempDir(), "sluice")}
	bin, err := b.Path(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	rep, err := Run(Options{Bin: bin, Span: 2 * time.Second, Short: true, Connections: 500, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	rep.write(&table)
	t.Logf("%s\n%s", progress.String(), table.String())
	for _, r := range rep.Rows {
		if !r.Holds() {
			t.Errorf("%s does not hold: %s", r.Fault, strings.Join(r.Fails, "; "))
		}
	}
	if len(rep.Rows) != len(faults) {
		t.Errorf("%d rows for %d faults", len(rep.Rows), len(faults))
	}
}
