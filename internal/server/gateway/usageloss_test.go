package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/server/redistest"
	"github.com/sluice-gw/sluice/internal/server/usage"
)

// usageExport is the fleet's usage export as replica r serves it, for
// yesterday and today (UTC): the requests it counts, its incomplete
// header and its body.
func usageExport(t *testing.T, r *lossHost) (int64, string, string) {
	t.Helper()
	from := usage.Day(time.Now().AddDate(0, 0, -1))
	req, _ := http.NewRequest("GET", r.admin+"/admin/usage?group=day&from="+from, nil)
	req.Header.Set("Authorization", "Bearer test-admin-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return -1, "", string(b) // a store that cannot be read yet: 503
	}
	var v struct{ Rows []struct{ Requests int64 } }
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("the usage export is not JSON: %v\n%s", err, b)
	}
	var n int64
	for _, row := range v.Rows {
		n += row.Requests
	}
	return n, resp.Header.Get(usage.IncompleteHeader), string(b)
}

// waitExport waits until r's export counts want requests, and fails at
// once if it counts more (a count too high never comes back down).
func waitExport(t *testing.T, r *lossHost, want int64, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, _, body := usageExport(t, r)
		if n == want {
			return
		}
		if n > want {
			t.Fatalf("%s: the export counts %d requests, more than the %d served:\n%s", what, n, want, body)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the export counts %d requests after 10 s, want %d:\n%s", what, n, want, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// traffic sends chat requests, one at a time, to a fleet's replicas in
// turn, until told to end, for at most max requests or d.
type traffic struct {
	mu     sync.Mutex
	served []int64 // 200s, per replica
	failed int
	end    chan struct{}
	done   chan struct{}
	once   sync.Once
}

func startTraffic(fleet []*lossHost, max int, d time.Duration) *traffic {
	tr := &traffic{served: make([]int64, len(fleet)), end: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(tr.done)
		until := time.Now().Add(d)
		for i := 0; i < max && time.Now().Before(until); i++ {
			select {
			case <-tr.end:
				return
			default:
			}
			r := i % len(fleet)
			resp, err := http.Post(fleet[r].url+"/v1/chat/completions", "application/json", strings.NewReader(chatBody))
			ok := false
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				ok = resp.StatusCode == 200
			}
			tr.mu.Lock()
			if ok {
				tr.served[r]++
			} else {
				tr.failed++
			}
			tr.mu.Unlock()
		}
	}()
	return tr
}

func (tr *traffic) total() int64 {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var n int64
	for _, s := range tr.served {
		n += s
	}
	return n
}

func (tr *traffic) stop() { tr.once.Do(func() { close(tr.end) }); <-tr.done }

// Usage records outlive the store: three replicas serve traffic, Redis
// restarts empty in the middle of it (no persistence), and each replica
// finds the loss, writes back the records it wrote and counts it
// (sluice_fleet_store_losses_total{seen_by="usage"}); the export then
// counts exactly the requests served, with nothing marked incomplete.
// Before, the export silently lost what Redis held (21 to 75 % of the
// requests in a real-process run).
func TestFleetUsageSurvivesAnEmptyRestart(t *testing.T) {
	own := redistest.Own(t)
	fleet := lossFleet(t, own.Addr(), 3, nil)
	tr := startTraffic(fleet, 5000, 30*time.Second)
	defer tr.stop()
	waitWithin(t, 10*time.Second, 5*time.Millisecond, "60 requests served", func() bool { return tr.total() >= 60 })
	waitWithin(t, 10*time.Second, 20*time.Millisecond, "requests in Redis before it restarts", func() bool {
		n, _, _ := usageExport(t, fleet[0])
		return n >= 30
	})
	own.Kill()
	own.Start()
	at := tr.total()
	waitWithin(t, 10*time.Second, 5*time.Millisecond, "60 requests served after the restart", func() bool { return tr.total() >= at+60 })
	tr.stop()
	served := tr.total()
	for i, r := range fleet {
		waitExport(t, r, served, fmt.Sprintf("replica %d", i))
	}
	n, incomplete, body := usageExport(t, fleet[1])
	if incomplete != "" || !strings.Contains(body, `"incomplete":[]`) {
		t.Errorf("the export marks days incomplete though every replica wrote back: %s %q\n%s", usage.IncompleteHeader, incomplete, body)
	}
	for i, r := range fleet {
		if v := r.metric(t, `sluice_fleet_store_losses_total{seen_by="usage"}`); v != 1 {
			t.Errorf("replica %d: sluice_fleet_store_losses_total{seen_by=usage} = %v, want 1", i, v)
		}
		// Each replica reads the marks again at its next flush after they
		// change (the last writer to write back clears its own).
		waitWithin(t, 5*time.Second, 20*time.Millisecond, fmt.Sprintf("replica %d to count no incomplete day", i), func() bool {
			return r.metric(t, "sluice_usage_incomplete_days") == 0
		})
		if log := r.logText(); !strings.Contains(log, "usage: the shared store lost its data") || !strings.Contains(log, "wrote back this replica's usage records") {
			t.Errorf("replica %d's log does not tell the loss and the write-back:\n%s", i, log)
		}
	}
	t.Logf("Redis restarted empty after %d of %d requests (%d failed): the export counts %d", at, served, tr.failed, n)
}

// What no running replica can write back is marked, never silently
// missing: two of three replicas stop (one keeps its ledger in memory,
// one in a state.dir), Redis restarts empty, and the export from the
// one left counts its own requests and marks today incomplete (header,
// JSON field, sluice_usage_incomplete_days, a log line naming both).
// The state.dir replica, started again, finds the loss it missed and
// writes back its records; the one whose ledger died with it stays
// marked.
func TestFleetUsageLostWithAReplicaIsMarked(t *testing.T) {
	own := redistest.Own(t)
	dir := t.TempDir()
	withDir := func(c *config.Config) {
		if c.Fleet.ID == "replica-2" {
			c.State.Dir = dir
		}
	}
	fleet := lossFleet(t, own.Addr(), 3, withDir)
	tr := startTraffic(fleet, 30, 20*time.Second)
	<-tr.done
	served := tr.served
	if served[0] == 0 || served[1] == 0 || served[2] == 0 {
		t.Fatalf("served %v: every replica must have served some", served)
	}
	waitExport(t, fleet[0], tr.total(), "before the loss")

	fleet[1].stop()
	fleet[2].stop()
	own.Kill()
	own.Start()
	today := usage.Day(time.Now())
	waitExport(t, fleet[0], served[0], "replica 0's own records written back")
	waitWithin(t, 10*time.Second, 20*time.Millisecond, "the export to mark today incomplete", func() bool {
		_, incomplete, body := usageExport(t, fleet[0])
		return strings.Contains(incomplete, today) && strings.Contains(body, `"incomplete":[{"from":"`+today+`","to":"`+today+`"}]`)
	})
	waitWithin(t, 10*time.Second, 50*time.Millisecond, "replica 0 to count and log the incomplete day", func() bool {
		log := fleet[0].logText()
		return fleet[0].metric(t, "sluice_usage_incomplete_days") >= 1 &&
			strings.Contains(log, "are missing and no running replica has written them back") &&
			strings.Contains(log, "replica-1 (memory only)") && strings.Contains(log, "replica-2 (state.dir")
	})

	again := lossReplicaAt(t, fleet[0].mockURL, own.Addr(), 2, withDir)
	waitExport(t, fleet[0], served[0]+served[2], "replica 2 started again on its state.dir")
	store := fleet[0].h.Gateway().Usage().Store().(*usage.RedisStore)
	waitWithin(t, 10*time.Second, 20*time.Millisecond, "only replica-1 marked", func() bool {
		gaps, err := store.Gaps(context.Background())
		return err == nil && len(gaps) == 1 && gaps[0].Label == "replica-1" && !gaps[0].Durable
	})
	if _, incomplete, _ := usageExport(t, again); !strings.Contains(incomplete, today) {
		t.Errorf("replica-1's records are gone and the export does not say so: %s %q", usage.IncompleteHeader, incomplete)
	}
	if log := again.logText(); !strings.Contains(log, "usage: the shared store lost its data") {
		t.Errorf("replica 2, started again, does not log the loss it missed:\n%s", log)
	}
	t.Logf("served %v; after the loss the export counts replicas 0 and 2 (%d) and marks %s for replica-1", served, served[0]+served[2], today)
}
