package core_test

import (
	"slices"
	"sort"
	"strings"
	"testing"
)

// A plant is a file that breaks rules on purpose, at the path given,
// and the findings, each "file:line:col: what", that it must raise.
type plant struct {
	name, path string
	r          regime
	src        string
	want       []string
}

// The purity rules catch what they are for: each planted file breaks
// the rules named, at the lines named, and what a comment marks "fine"
// breaks none.
func TestPurityCatchesPlants(t *testing.T) {
	root, module := moduleRoot(t)
	c := newPureChecker(root, module)
	for _, p := range purityPlants {
		got := c.checkPackage(t, []srcFile{{p.path, []byte(p.src)}}, p.r)
		expect(t, p, got)
	}
	host := plant{name: "a host writing the core's variables", path: "internal/sim/plant.go", src: `package sim

import (
	"time"

	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	up "github.com/sluice-gw/sluice/internal/model/upstream"
)

func init() {
	lifecycle.HostNow = time.Now
	up.DefaultOutputTokens.Max = 8
	lifecycle.Counts[0]++
	p := &up.DefaultOutputTokens
	_ = p
	cfg := up.Config{} // the host's own value: fine
	cfg.Seed = 1
	_ = &up.TokenRange{Min: 1} // a new value: fine
}
`, want: []string{
		"internal/sim/plant.go:11:2: writes internal/core/lifecycle's package-level var HostNow: the core's package-level variables are tables fixed at their declaration; a host keeps its state in its own values",
		"internal/sim/plant.go:12:2: writes internal/model/upstream's package-level var DefaultOutputTokens: the core's package-level variables are tables fixed at their declaration; a host keeps its state in its own values",
		"internal/sim/plant.go:13:2: writes internal/core/lifecycle's package-level var Counts: the core's package-level variables are tables fixed at their declaration; a host keeps its state in its own values",
		"internal/sim/plant.go:14:7: takes the address of internal/model/upstream's package-level var DefaultOutputTokens: the core's package-level variables are tables fixed at their declaration; a host keeps its state in its own values",
	}}
	expect(t, host, c.hostWrites(t, []srcFile{{host.path, []byte(host.src)}}))
}

func expect(t *testing.T, p plant, got []string) {
	t.Helper()
	sort.Strings(got)
	sort.Strings(p.want)
	if !slices.Equal(got, p.want) {
		t.Errorf("%s: found\n\t%s\nwant\n\t%s", p.name, strings.Join(got, "\n\t"), strings.Join(p.want, "\n\t"))
	}
}

var purityPlants = []plant{
	{name: "imports, concurrency, randomness and printing", path: "internal/core/plant/plant.go", r: coreRule, src: `package plant

import (
	"fmt"
	"math/rand/v2"
	"os"
	. "strings"
	"sync"
	"time"

	"github.com/sluice-gw/sluice/internal/wait"
)

var _ = wait.Sleep

func Run(r *rand.Rand, since time.Time) int {
	var mu sync.Mutex
	mu.Lock()
	ch := make(chan int, 1)
	ch <- 1
	select {
	case v := <-ch:
		_ = v
	default:
	}
	go func() {}()
	fmt.Println(os.Args, ToUpper("x"), fmt.Sprint(1)) // Sprint returns: fine
	_ = time.Since(since)
	return rand.IntN(3) + r.IntN(3) // a seeded source: fine
}
`, want: []string{
		"internal/core/plant/plant.go:11:2: imports \"github.com/sluice-gw/sluice/internal/wait\": a core package imports only core and model packages, a model package only models",
		"internal/core/plant/plant.go:17:9: takes a lock: sync.Mutex (the host serialises calls)",
		"internal/core/plant/plant.go:19:13: declares a channel type: the host owns concurrency",
		"internal/core/plant/plant.go:20:2: sends on a channel: the host owns concurrency",
		"internal/core/plant/plant.go:21:2: selects on channels: the host owns concurrency",
		"internal/core/plant/plant.go:22:12: receives from a channel: the host owns concurrency",
		"internal/core/plant/plant.go:26:2: starts a goroutine: the host owns concurrency",
		"internal/core/plant/plant.go:27:2: does I/O: fmt.Println (return what the core knows)",
		"internal/core/plant/plant.go:28:6: reads the clock: time.Since (the host passes now in)",
		"internal/core/plant/plant.go:29:9: draws from the global random source: rand.IntN (take a seeded *rand.Rand)",
		"internal/core/plant/plant.go:6:2: imports \"os\": not in the pure standard library allow-list (pureStd in internal/core/purity_test.go)",
		"internal/core/plant/plant.go:7:2: dot-imports \"strings\": a pure file names what it uses",
		"internal/core/plant/plant.go:8:2: imports \"sync\": not in the pure standard library allow-list (pureStd in internal/core/purity_test.go)",
	}},
	{name: "a model importing the core", path: "internal/model/plant/plant.go", r: coreRule, src: `package plant

import "github.com/sluice-gw/sluice/internal/core/quota"

var _ quota.Limits
`, want: []string{
		"internal/model/plant/plant.go:3:8: imports \"github.com/sluice-gw/sluice/internal/core/quota\": a core package imports only core and model packages, a model package only models",
	}},
	{name: "package-level state", path: "internal/core/plant/plant.go", r: coreRule, src: `package plant

import "regexp"

var (
	seen  = map[string]int{}
	order []string
	last  *int
	stats struct{ n int }
	table = map[string]int{"a": 1} // read only: fine
	count int
	plantedCalls int
	hits  = &counter{}
	hook  func(string)
	word  = regexp.MustCompile("[a-z]+") // compiled once, never changed: fine
)

type counter struct{ n int }

func (c *counter) inc() { c.n++ }

type box struct{ v []int }

func (b *box) add(x int) { b.v = append(b.v, x) }

var boxed box

func note(k string, x int) int {
	seen[k]++
	order = append(order, k)
	last = &x
	stats.n = x
	delete(seen, "old")
	count += table[k]
	boxed.add(x)
	plantedCalls++
	p := &count
	*p = 2
	hits.inc()
	local := map[string]int{}
	local[k] = x
	_ = word.MatchString(k)
	return local[k]
}
`, want: []string{
		"internal/core/plant/plant.go:13:2: declares package-level var hits holding a pointer (*plant.counter): the core keeps its state in values the host holds, not in the package",
		"internal/core/plant/plant.go:14:2: declares package-level var hook holding a function (func(string)): the core keeps its state in values the host holds, not in the package",
		"internal/core/plant/plant.go:29:2: writes package-level var seen: the core keeps its state in values the host holds, not in the package",
		"internal/core/plant/plant.go:30:10: appends into package-level var order: the core keeps its state in values the host holds, not in the package",
		"internal/core/plant/plant.go:30:2: writes package-level var order: the core keeps its state in values the host holds, not in the package",
		"internal/core/plant/plant.go:31:2: writes package-level var last: the core keeps its state in values the host holds, not in the package",
		"internal/core/plant/plant.go:32:2: writes package-level var stats: the core keeps its state in values the host holds, not in the package",
		"internal/core/plant/plant.go:33:2: deletes from package-level var seen: the core keeps its state in values the host holds, not in the package",
		"internal/core/plant/plant.go:34:2: writes package-level var count: the core keeps its state in values the host holds, not in the package",
		"internal/core/plant/plant.go:35:2: calls add on package-level var boxed: the core keeps its state in values the host holds, not in the package",
		"internal/core/plant/plant.go:36:2: writes package-level var plantedCalls: the core keeps its state in values the host holds, not in the package",
		"internal/core/plant/plant.go:37:7: takes the address of package-level var count: the core keeps its state in values the host holds, not in the package",
		"internal/core/plant/plant.go:8:2: declares package-level var last holding a pointer (*int): the core keeps its state in values the host holds, not in the package",
	}},
	{name: "an injected clock, timers and zones", path: "internal/core/plant/plant.go", r: coreRule, src: `package plant

import "time"

type Clock func() time.Time

type Wall interface{ Now() time.Time }

type Engine struct {
	now   func() time.Time
	clock Clock
	at    time.Time // a time as a value: fine
	t     *time.Timer
}

var hostNow func() time.Time

func (e *Engine) At() time.Time { return e.at } // a value's getter: fine

func Run(e *Engine, w Wall, tk *time.Ticker, now func() time.Time, at time.Time) time.Time {
	_ = hostNow().Add(e.now().Sub(w.Now()))
	_ = e.clock()
	_ = e.At()
	e.t.Reset(time.Second)
	e.t.Stop()
	tk.Reset(time.Second)
	_ = at.In(time.Local)
	_ = time.Unix(0, 0).Sub(time.UnixMilli(1).UTC()) // .UTC(): fine
	loc, _ := time.LoadLocation("Europe/Paris")
	return at.In(loc).Local()
}
`, want: []string{
		"internal/core/plant/plant.go:10:2: takes the clock as a func() time.Time: the core takes times as values (the host passes now in)",
		"internal/core/plant/plant.go:11:2: takes the clock as a Clock: the core takes times as values (the host passes now in)",
		"internal/core/plant/plant.go:13:9: reaches the clock's machinery: time.Timer (the core takes times and deadlines as values, in UTC or the zone they came in)",
		"internal/core/plant/plant.go:16:5: declares package-level var hostNow holding a function (func() time.Time): the core keeps its state in values the host holds, not in the package",
		"internal/core/plant/plant.go:16:5: takes the clock as a func() time.Time: the core takes times as values (the host passes now in)",
		"internal/core/plant/plant.go:20:33: reaches the clock's machinery: time.Ticker (the core takes times and deadlines as values, in UTC or the zone they came in)",
		"internal/core/plant/plant.go:20:46: takes the clock as a func() time.Time: the core takes times as values (the host passes now in)",
		"internal/core/plant/plant.go:21:20: reads a clock handed in: e.now (the core takes times as values, the host passes now in)",
		"internal/core/plant/plant.go:21:32: reads a clock handed in: w.Now (the core takes times as values, the host passes now in)",
		"internal/core/plant/plant.go:21:6: reads a clock handed in: hostNow (the core takes times as values, the host passes now in)",
		"internal/core/plant/plant.go:22:6: reads a clock handed in: e.clock (the core takes times as values, the host passes now in)",
		"internal/core/plant/plant.go:24:2: reaches the clock's machinery: (*time.Timer).Reset (the core takes times and deadlines as values)",
		"internal/core/plant/plant.go:25:2: reaches the clock's machinery: (*time.Timer).Stop (the core takes times and deadlines as values)",
		"internal/core/plant/plant.go:26:2: reaches the clock's machinery: (*time.Ticker).Reset (the core takes times and deadlines as values)",
		"internal/core/plant/plant.go:27:12: reaches the clock's machinery: time.Local (the core takes times and deadlines as values, in UTC or the zone they came in)",
		"internal/core/plant/plant.go:29:12: reaches the clock's machinery: time.LoadLocation (the core takes times and deadlines as values, in UTC or the zone they came in)",
		"internal/core/plant/plant.go:28:6: puts a time in the process's zone: time.Unix (write time.Unix(...).UTC(), or .In the zone that is meant)",
		"internal/core/plant/plant.go:30:9: reaches the clock's machinery: (time.Time).Local (the core takes times and deadlines as values)",
		"internal/core/plant/plant.go:7:22: takes the clock as a func() time.Time: the core takes times as values (the host passes now in)",
	}},
	{name: "map order", path: "internal/core/plant/plant.go", r: coreRule, src: `package plant

import (
	"errors"
	"maps"
	"slices"
	"sort"
)

type set struct{ m map[string]int }

func (s *set) names() []string {
	var out []string
	for k := range s.m {
		out = append(out, k)
	}
	return out
}

func sorted(m map[string]int) (keys, vals []string) {
	for k := range m {
		keys = append(keys, k) // sorted below: fine
	}
	sort.Strings(keys)
	for k := range maps.Keys(m) {
		vals = append(vals, k)
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		vals = append(vals, k) // in the keys' order: fine
	}
	for k, v := range m {
		var own []int
		own = append(own, v) // one iteration's own: fine
		_, _ = k, own
	}
	return keys, vals
}

func first(m map[string]int) string {
	for k := range m {
		return k
	}
	return ""
}

func pick(m map[string]int) (string, float64, error) {
	best, bestK, least, total := 0, "", 0, 0
	var sum float64
	name := ""
	inverse := map[int]string{}
	for k, v := range m {
		if v > best {
			best = v // the greatest value: fine
			bestK = k
		}
		least = min(least, v) // fine
		total += v            // fine
		sum += float64(v)
		name += k
		inverse[v] = k // a map written by key: fine
		if v < 0 {
			return "", 0, errors.New("negative " + k)
		}
	}
	_, _, _ = least, total, inverse
	return bestK + name, sum, nil
}
`, want: []string{
		"internal/core/plant/plant.go:14:2: appends to out in the iteration order of map s.m: range over its sorted keys, or sort out after the loop",
		"internal/core/plant/plant.go:25:2: appends to vals in the iteration order of map maps.Keys(m): range over its sorted keys, or sort vals after the loop",
		"internal/core/plant/plant.go:41:3: returns what the iteration order of map m picked: range over its sorted keys",
		"internal/core/plant/plant.go:54:4: sets bestK in the iteration order of map m: the last key, or the first to win a tie, is the runtime's choice; range over its sorted keys (integer sums, min and max are fine)",
		"internal/core/plant/plant.go:58:3: sets sum in the iteration order of map m: the last key, or the first to win a tie, is the runtime's choice; range over its sorted keys (integer sums, min and max are fine)",
		"internal/core/plant/plant.go:59:3: sets name in the iteration order of map m: the last key, or the first to win a tie, is the runtime's choice; range over its sorted keys (integer sums, min and max are fine)",
		"internal/core/plant/plant.go:62:4: returns what the iteration order of map m picked: range over its sorted keys",
	}},
	{name: "a wire codec", path: "internal/wire/gemini/plant.go", r: wireRule, src: `package gemini

import (
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

var (
	mu     sync.Mutex
	hits   atomic.Int64
	tables = sync.OnceValue(func() []int { return []int{1} }) // built once: fine
)

func Encode(b []byte) []byte {
	mu.Lock()
	defer mu.Unlock()
	go func() { _ = time.Now() }()
	ch := make(chan int) // channels alone are the codec's business
	_ = ch
	_ = tables()
	h := http.Header{} // a value: fine
	h.Set("Content-Type", http.StatusText(http.StatusOK))
	_, _ = net.Dial("tcp", os.Getenv("UPSTREAM"))
	_, _ = http.DefaultClient.Get("http://127.0.0.1")
	return b
}
`, want: []string{
		"internal/wire/gemini/plant.go:13:9: takes a lock: sync.Mutex (the host serialises calls)",
		"internal/wire/gemini/plant.go:14:9: takes a lock: atomic.Int64 (the host serialises calls)",
		"internal/wire/gemini/plant.go:21:18: reads the clock: time.Now (the host passes now in)",
		"internal/wire/gemini/plant.go:21:2: starts a goroutine: the host owns concurrency",
		"internal/wire/gemini/plant.go:27:25: reaches the network or the process: os.Getenv (a codec is a function of its bytes; the host hands it a transport to call through)",
		"internal/wire/gemini/plant.go:27:9: reaches the network or the process: net.Dial (a codec is a function of its bytes; the host hands it a transport to call through)",
		"internal/wire/gemini/plant.go:28:9: reaches the network or the process: http.DefaultClient (a codec is a function of its bytes; the host hands it a transport to call through)",
	}},
}

// The layer rules catch what they are for: each planted import breaks
// the rule named, at the file and line named, a chain of imports breaks
// a linked rule as a direct import does, an exception nothing needs is
// reported, and what a comment marks "fine" breaks nothing.
func TestLayersCatchPlants(t *testing.T) {
	root, module := moduleRoot(t)
	files := map[string]string{
		"internal/server/gateway/plant.go": `package gateway

import (
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/wire/protocol" // fine
	"github.com/sluice-gw/sluice/internal/wait"
)
`,
		"internal/wait/plant.go": `package wait

import "github.com/sluice-gw/sluice/internal/harness/loadgen"
`,
		"internal/harness/loadgen/plant.go": `package loadgen

import "github.com/sluice-gw/sluice/internal/wire/sseenc" // fine
`,
		"client/plant.go": `package client

import (
	"net/http" // fine

	"github.com/sluice-gw/sluice/internal/server/gateway"
)
`,
		"client/brake/plant.go": `package brake

import "github.com/sluice-gw/sluice/internal/core/quota"
`,
		"internal/sim/plant.go": `package sim

import "github.com/sluice-gw/sluice/internal/server/runner"
`,
		"internal/wire/gemini/plant.go": `package gemini

import "github.com/sluice-gw/sluice/internal/core/admission"
`,
		"internal/policy/plant.go": `package policy

import (
	"github.com/sluice-gw/sluice/internal/config" // fine
	"github.com/sluice-gw/sluice/internal/server/metrics"
)
`,
		"internal/server/admin/plant.go": `package admin

import "github.com/sluice-gw/sluice/internal/cli"
`,
		"cmd/sluice/plant.go": `package main

import "github.com/sluice-gw/sluice/internal/cli" // fine
`,
	}
	var srcs []srcFile
	for _, path := range sortedKeys(files) {
		srcs = append(srcs, srcFile{path, []byte(files[path])})
	}
	got := checkImports(t, root, module, srcs, []exception{{"client", "internal/wait", "stale"}})
	expect(t, plant{name: "layers", want: []string{
		"client/brake/plant.go:3: client/brake imports github.com/sluice-gw/sluice/internal/core/quota: the public Go client is what applications import: it must not reach into the gateway's internals",
		"client/plant.go:6: client imports github.com/sluice-gw/sluice/internal/server/gateway: the public Go client is what applications import: it must not reach into the gateway's internals",
		"internal/core/layers_test.go: the exception client -> internal/wait is no longer needed: delete it",
		"internal/policy/plant.go:5: internal/policy imports github.com/sluice-gw/sluice/internal/server/metrics: policy turns config into core values for every host, so it imports only core, model, config and wire",
		"internal/server/admin/plant.go:3: internal/server/admin imports github.com/sluice-gw/sluice/internal/cli: only cmd/ imports the command line",
		"internal/server/gateway/plant.go:4: internal/server/gateway imports github.com/sluice-gw/sluice/internal/harness/mock: the real host never links the test harness (fakes, grammar checks): its tests may",
		"internal/server/gateway/plant.go:6: internal/server/gateway imports github.com/sluice-gw/sluice/internal/wait, which links internal/harness/loadgen (internal/wait → internal/harness/loadgen): the real host never links the test harness (fakes, grammar checks): its tests may",
		"internal/sim/plant.go:3: internal/sim imports github.com/sluice-gw/sluice/internal/server/runner: the simulator drives the core, not the real host",
		"internal/wire/gemini/plant.go:3: internal/wire/gemini imports github.com/sluice-gw/sluice/internal/core/admission: the dialects' bytes import only each other",
	}}, got)
}
