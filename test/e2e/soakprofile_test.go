package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// soakMetrics are the series the soak samples from each replica's
// /metrics, summed over their labels.
var soakMetrics = []string{
	"go_goroutines",
	"go_memstats_heap_inuse_bytes",
	"go_memstats_heap_objects",
	"process_resident_memory_bytes",
	"sluice_in_flight_requests",
	"sluice_requests_total",
}

// scrape reads admin's /metrics once and sums each of soakMetrics.
func scrape(admin string) (map[string]float64, error) {
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	want := map[string]bool{}
	for _, m := range soakMetrics {
		want[m] = true
	}
	got := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		l := sc.Text()
		name, _, _ := strings.Cut(l, " ")
		name, _, _ = strings.Cut(name, "{")
		if !want[name] {
			continue
		}
		f := strings.Fields(l)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			got[name] += v
		}
	}
	return got, sc.Err()
}

// soakSampler appends a row per replica to a CSV file every interval,
// so an interrupted run still leaves its curve behind.
type soakSampler struct {
	t     *testing.T
	mu    sync.Mutex
	f     *os.File
	fleet []*replica
}

func newSoakSampler(t *testing.T, path string, fleet []*replica) *soakSampler {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	fmt.Fprintf(f, "elapsed_s,event,replica,%s\n", strings.Join(soakMetrics, ","))
	return &soakSampler{t: t, f: f, fleet: fleet}
}

// mark writes one row per replica now, labelled event.
func (s *soakSampler) mark(began time.Time, event string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	elapsed := time.Since(began).Seconds()
	for i, r := range s.fleet {
		m, err := scrape(r.admin)
		if err != nil {
			s.t.Logf("sample of replica %d: %v", i, err)
			continue
		}
		fmt.Fprintf(s.f, "%.0f,%s,%d", elapsed, event, i)
		for _, name := range soakMetrics {
			fmt.Fprintf(s.f, ",%.0f", m[name])
		}
		fmt.Fprintln(s.f)
	}
}

// every marks a "sample" row every interval until the returned stop is
// called.
func (s *soakSampler) every(interval time.Duration, began time.Time) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	s.mark(began, "sample")
	go func() {
		defer close(finished)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				s.mark(began, "sample")
			}
		}
	}()
	return func() { close(done); <-finished }
}

// soakFigures are one replica's figures at a profile: idle, right after
// the heap profile's collection.
type soakFigures struct {
	goroutines, heapInuse, heapObjects, rss, requests float64
}

// upstreamIdle is how long an idle replica keeps its connections to the
// providers: the gateway transport's IdleConnTimeout (90 s,
// gateway/gateway.go), and a margin. Each one holds two goroutines and
// its buffers, and how many there are follows the last minute's
// concurrency (a brownout's slow calls open dozens), not a leak; waiting
// them out before each profile leaves neither end any.
const upstreamIdle = 95 * time.Second

// profileFleet lets the fleet go idle (the driver's connections closed,
// nothing in flight, the upstream connections closed, the goroutine
// count steady), then saves each replica's heap (after a GC) and
// goroutine profiles under out as r<N>-heap-<label>.pb.gz,
// r<N>-goroutine-<label>.pb.gz and, readable, r<N>-goroutine-<label>.txt,
// and returns its figures. Profiling idle replicas at both ends compares
// like with like: what is left over once the work is done.
func profileFleet(t *testing.T, traffic *soakTraffic, fleet []*replica, out, label string) []soakFigures {
	t.Helper()
	traffic.client.CloseIdleConnections()
	for i, r := range fleet {
		waitUntil(t, time.Minute, fmt.Sprintf("replica %d to have nothing in flight", i), func() bool {
			m, err := scrape(r.admin)
			return err == nil && m["sluice_in_flight_requests"] == 0
		})
	}
	t.Logf("%s profiles: nothing in flight; waiting %v for the replicas' idle upstream connections to close", label, upstreamIdle)
	time.Sleep(upstreamIdle) // a timer in another process, with nothing of it to observe
	figs := make([]soakFigures, len(fleet))
	for i, r := range fleet {
		waitSteadyGoroutines(t, r.admin)
		for _, p := range []struct{ path, file string }{
			{"/debug/pprof/heap?gc=1", "heap-" + label + ".pb.gz"},
			{"/debug/pprof/goroutine", "goroutine-" + label + ".pb.gz"},
			{"/debug/pprof/goroutine?debug=1", "goroutine-" + label + ".txt"},
		} {
			fetchTo(t, "http://"+r.admin+p.path, filepath.Join(out, fmt.Sprintf("r%d-%s", i, p.file)))
		}
		m, err := scrape(r.admin)
		if err != nil {
			t.Fatal(err)
		}
		figs[i] = soakFigures{goroutines: m["go_goroutines"], heapInuse: m["go_memstats_heap_inuse_bytes"],
			heapObjects: m["go_memstats_heap_objects"], rss: m["process_resident_memory_bytes"], requests: m["sluice_requests_total"]}
	}
	return figs
}

// waitSteadyGoroutines waits until admin's goroutine count has not
// changed for 3 s (closed connections' goroutines take a moment to end),
// or 30 s have passed, after which the count is what it is.
func waitSteadyGoroutines(t *testing.T, admin string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	last, since := -1.0, time.Now()
	for time.Now().Before(deadline) {
		m, err := scrape(admin)
		if err != nil {
			t.Fatal(err)
		}
		if g := m["go_goroutines"]; g != last {
			last, since = g, time.Now()
		} else if time.Since(since) >= 3*time.Second {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func fetchTo(t *testing.T, url, path string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := io.Copy(f, resp.Body); err != nil {
		t.Fatal(err)
	}
}

// pprofDiff is `go tool pprof -top` of end against start: where the
// growth (or shrinkage) between the two profiles is.
func pprofDiff(t *testing.T, start, end string, extra ...string) string {
	t.Helper()
	args := append([]string{"tool", "pprof", "-top", "-nodecount=25"}, extra...)
	out, err := exec.Command("go", append(args, "-diff_base", start, end)...).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("go tool pprof failed: %v\n%s", err, out)
	}
	return string(out)
}

// soakSummary writes the run's figures and each replica's profile
// diffs, and returns the summary text.
func soakSummary(t *testing.T, s soakSettings, traffic *soakTraffic, fleet []*replica, start, end []soakFigures, took time.Duration) string {
	t.Helper()
	var b strings.Builder
	lines, total := traffic.snapshot()
	fmt.Fprintf(&b, "soak: %v of traffic (warm-up %v) at %.0f req/s to 3 replicas, %v in all\n", s.duration, s.warmUp, s.rate, took.Round(time.Second))
	fmt.Fprintf(&b, "requests sent: %d\n\noutcomes (dialect, shape: status):\n", total)
	for _, l := range lines {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	fmt.Fprintf(&b, "\nper replica, idle, after a GC: start (after the warm-up) -> end\n")
	fmt.Fprintf(&b, "  %-3s %-17s %-25s %-25s %-21s %s\n", "", "goroutines", "heap in use", "heap objects", "RSS", "requests served")
	mib := func(v float64) string { return fmt.Sprintf("%.1f MiB", v/(1<<20)) }
	for i := range fleet {
		a, z := start[i], end[i]
		fmt.Fprintf(&b, "  r%-2d %-17s %-25s %-25s %-21s %.0f\n", i,
			fmt.Sprintf("%.0f -> %.0f", a.goroutines, z.goroutines),
			fmt.Sprintf("%s -> %s", mib(a.heapInuse), mib(z.heapInuse)),
			fmt.Sprintf("%.0f -> %.0f", a.heapObjects, z.heapObjects),
			fmt.Sprintf("%s -> %s", mib(a.rss), mib(z.rss)), z.requests)
		file := func(kind, label string) string {
			return filepath.Join(s.out, fmt.Sprintf("r%d-%s-%s.pb.gz", i, kind, label))
		}
		heap := pprofDiff(t, file("heap", "start"), file("heap", "end"), "-sample_index=inuse_space")
		gor := pprofDiff(t, file("goroutine", "start"), file("goroutine", "end"))
		diff := "heap in use, end against start:\n" + heap + "\ngoroutines, end against start:\n" + gor
		if err := os.WriteFile(filepath.Join(s.out, fmt.Sprintf("r%d-diff.txt", i)), []byte(diff), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// judgeSoak fails the run on a leak: an idle replica holding more
// goroutines at the end than after the warm-up (beyond a few that come
// and go, such as a probe or a fleet heartbeat caught mid-flight), or a
// heap in use grown by more than a quarter and 4 MiB (the dashboard's
// 15-minute window of samples fills during the first quarter hour, and
// is the largest legitimate growth). It also fails a run whose traffic
// did not flow: fewer than 80% of the requests the rate promises, or
// fewer than half answered.
func judgeSoak(t *testing.T, s soakSettings, traffic *soakTraffic, start, end []soakFigures) {
	t.Helper()
	lines, total := traffic.snapshot()
	answered := 0
	for _, l := range lines {
		f := strings.Fields(l)
		if strings.HasSuffix(strings.Join(f[:len(f)-1], " "), ": 200") {
			n, _ := strconv.Atoi(f[len(f)-1])
			answered += n
		}
	}
	if promised := s.rate * s.duration.Seconds(); float64(total) < 0.8*promised {
		t.Errorf("%d requests sent, the rate promises %.0f: the driver fell behind", total, promised)
	}
	if answered*2 < total {
		t.Errorf("%d of %d requests answered whole; the traffic did not flow", answered, total)
	}
	for i := range start {
		a, z := start[i], end[i]
		if z.goroutines > a.goroutines+10 {
			t.Errorf("replica %d: %.0f goroutines idle at the end against %.0f after the warm-up: a goroutine leak (see r%d-diff.txt)", i, z.goroutines, a.goroutines, i)
		}
		if z.heapInuse > 1.25*a.heapInuse+4<<20 {
			t.Errorf("replica %d: heap in use %.1f MiB idle at the end against %.1f MiB after the warm-up: a memory leak (see r%d-diff.txt)", i, z.heapInuse/(1<<20), a.heapInuse/(1<<20), i)
		}
		if z.requests == 0 {
			t.Errorf("replica %d served nothing", i)
		}
	}
}
