package core_test

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// pureStd is every standard library package a core or model package may
// import. Each is a library of values: it does no I/O, keeps no process
// state and reads no clock, except time, whose clock-reading functions
// the AST pass bans, and math/rand/v2, whose global source it bans.
// Left out on purpose:
//
//   - context: cancellation is the shell's; the core takes deadlines as
//     values (lifecycle.Request.Deadline);
//   - sync, sync/atomic: the core is single-threaded, the host serialises;
//   - io, bufio, os, net/..., log, runtime, syscall: I/O and process state
//     (io too: the core takes values, not streams, so a reader is the
//     host's, as the scraper's is in internal/server/scrape);
//   - reflect, unsafe: the core works on its own types; reflective walks
//     (config's time scaling) belong to the hosts' side;
//   - encoding/...: bytes on the wire are internal/wire's;
//   - math/rand (v1) and hash/maphash: seeded from the process, so a run
//     could not be replayed from its seed.
var pureStd = set(
	"bytes", "cmp", "container/heap", "container/list", "container/ring",
	"errors", "fmt", "hash/fnv", "iter", "maps", "math", "math/bits",
	"math/rand/v2", "regexp", "slices", "sort", "strconv", "strings",
	"time", "unicode", "unicode/utf16", "unicode/utf8",
)

// clockReads are the time functions that read or wait on the clock.
var clockReads = set("Now", "Since", "Until", "After", "Sleep", "NewTimer", "NewTicker", "Tick", "AfterFunc")

// seededRand are math/rand/v2's names that touch no global source: its
// types and the constructors of seeded sources.
var seededRand = set("Rand", "Source", "PCG", "ChaCha8", "Zipf", "New", "NewPCG", "NewChaCha8", "NewZipf")

// printing are fmt's functions that do I/O.
func printing(name string) bool {
	for _, p := range []string{"Print", "Fprint", "Scan", "Sscan", "Fscan", "Sscanf", "Sscanln"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// TestCoreIsPure fails on any non-test file under internal/core or
// internal/model that imports beyond pureStd and the pure trees, reads
// the clock, starts a goroutine, uses a channel, takes a lock, draws
// from a global random source or prints. See the package doc.
func TestCoreIsPure(t *testing.T) {
	root, module := moduleRoot(t)
	var bad []string
	for _, tree := range []string{"internal/core", "internal/model"} {
		for _, f := range goFiles(t, root, tree) {
			bad = append(bad, checkPure(t, root, module, f)...)
		}
	}
	report(t, bad, "the pure core (internal/core, internal/model) must stay pure; see internal/core/doc.go")
}

// checkPure parses one file and lists what breaks purity in it, each as
// "file:line:col: what".
func checkPure(t *testing.T, root, module, path string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	rel, _ := filepath.Rel(root, path)
	inModel := strings.HasPrefix(filepath.ToSlash(rel), "internal/model/")
	var bad []string
	at := func(n ast.Node, format string, args ...any) {
		p := fset.Position(n.Pos())
		bad = append(bad, fmt.Sprintf("%s:%d:%d: %s", filepath.ToSlash(rel), p.Line, p.Column, fmt.Sprintf(format, args...)))
	}
	// local names of the imports whose uses are checked below
	names := map[string]string{}
	for _, is := range f.Imports {
		ip, _ := strconv.Unquote(is.Path.Value)
		local := ip[strings.LastIndex(ip, "/")+1:]
		if ip == "math/rand/v2" {
			local = "rand"
		}
		if is.Name != nil {
			local = is.Name.Name
		}
		names[local] = ip
		switch own := strings.TrimPrefix(ip, module+"/"); {
		case is.Name != nil && is.Name.Name == ".":
			at(is, "dot-imports %q: a pure file names what it uses", ip)
		case own != ip && strings.HasPrefix(own, "internal/model/"):
		case own != ip && strings.HasPrefix(own, "internal/core/") && !inModel:
		case own != ip:
			at(is, "imports %q: a core package imports only core and model packages, a model package only models", ip)
		case !pureStd[ip]:
			at(is, "imports %q: not in the pure standard library allow-list (pureStd in internal/core/purity_test.go)", ip)
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			at(n, "starts a goroutine: the host owns concurrency")
		case *ast.ChanType:
			at(n, "declares a channel type: the host owns concurrency")
		case *ast.SelectStmt:
			at(n, "selects on channels: the host owns concurrency")
		case *ast.SendStmt:
			at(n, "sends on a channel: the host owns concurrency")
		case *ast.UnaryExpr:
			if n.Op == token.ARROW {
				at(n, "receives from a channel: the host owns concurrency")
			}
		case *ast.SelectorExpr:
			x, ok := n.X.(*ast.Ident)
			if !ok {
				break
			}
			switch names[x.Name] {
			case "time":
				if clockReads[n.Sel.Name] {
					at(n, "reads the clock: time.%s (the host passes now in)", n.Sel.Name)
				}
			case "sync", "sync/atomic":
				at(n, "takes a lock: %s.%s (the host serialises calls)", x.Name, n.Sel.Name)
			case "math/rand/v2":
				if !seededRand[n.Sel.Name] {
					at(n, "draws from the global random source: rand.%s (take a seeded *rand.Rand)", n.Sel.Name)
				}
			case "fmt":
				if printing(n.Sel.Name) {
					at(n, "does I/O: fmt.%s (return what the core knows)", n.Sel.Name)
				}
			}
		}
		return true
	})
	return bad
}

// layer is a rule of the tree: no package under from imports one under
// to (each a path prefix inside the module, "" any package), unless the
// imported package is under one of but, or the importer under one of by.
type layer struct {
	from, to string
	but, by  []string
	why      string
}

var layers = []layer{
	{from: "internal/server/", to: "internal/sim/", why: "the real host does not run the simulator"},
	{from: "internal/sim/", to: "internal/server/", why: "the simulator drives the core, not the real host"},
	{from: "internal/sim/", to: "internal/harness/", why: "the simulator models the world (internal/model), it does not start fakes"},
	{from: "internal/policy/", to: "internal/", but: []string{"internal/core/", "internal/model/", "internal/config/", "internal/wire/"},
		why: "policy turns config into core values for every host, so it imports only core, model, config and wire"},
	{from: "internal/config/", to: "internal/", but: []string{"internal/config/", "internal/wire/", "internal/model/"},
		why: "config holds the files' schemas: it imports only wire (the JSON-schema checks of eval cases) and model (the upstream behaviour a script describes)"},
	{from: "internal/wire/", to: "internal/", but: []string{"internal/wire/"}, why: "the dialects' bytes import only each other"},
	{from: "", to: "internal/cli/", by: []string{"cmd/", "internal/cli/"}, why: "only cmd/ imports the command line"},
	{from: "internal/server/", to: "internal/harness/", why: "the real host never runs the test harness (fakes, grammar checks): its tests may"},
	{from: "client/", to: "internal/", why: "the public Go client is what applications import: it must not reach into the gateway's internals"},
}

// breaks reports whether from importing to runs against l.
func (l layer) breaks(from, to string) bool {
	if !strings.HasPrefix(from, l.from) || !strings.HasPrefix(to, l.to) {
		return false
	}
	for _, p := range l.but {
		if strings.HasPrefix(to, p) {
			return false
		}
	}
	for _, p := range l.by {
		if strings.HasPrefix(from, p) {
			return false
		}
	}
	return true
}

// exceptions are imports that break a layer today, each with what
// removes it. An exception no import needs any more fails the test, so
// the list only shrinks.
var exceptions = []struct{ from, to, why string }{
	{"client", "internal/model/workload", "the client's retry budget and backoff are the simulator's model of a client; moving them into client (and the model importing client's) removes it"},
	{"client", "internal/wait", "the client waits as the gateway's tests do; a few lines of its own remove it"},
}

// The layer rules catch what they are for: each planted import breaks
// the rule named, and a permitted one breaks none.
func TestLayersCatchPlants(t *testing.T) {
	plants := []struct{ from, to, why string }{
		{"internal/server/gateway/", "internal/harness/mock/", "the real host never runs the test harness"},
		{"client/", "internal/server/gateway/", "the public Go client"},
		{"internal/sim/", "internal/server/gateway/", "the simulator drives the core"},
		{"internal/wire/gemini/", "internal/core/admission/", "the dialects' bytes"},
		{"internal/policy/", "internal/server/metrics/", "policy turns config into core values"},
	}
	for _, p := range plants {
		var hit []string
		for _, l := range layers {
			if l.breaks(p.from, p.to) {
				hit = append(hit, l.why)
			}
		}
		if len(hit) != 1 || !strings.HasPrefix(hit[0], p.why) {
			t.Errorf("%s importing %s breaks %q, want the rule %q", p.from, p.to, hit, p.why)
		}
	}
	for _, ok := range [][2]string{
		{"internal/server/gateway/", "internal/wire/protocol/"},
		{"cmd/sluice/", "internal/cli/"},
		{"internal/harness/mock/", "internal/wire/sseenc/"},
	} {
		for _, l := range layers {
			if l.breaks(ok[0], ok[1]) {
				t.Errorf("%s importing %s is allowed, but breaks %q", ok[0], ok[1], l.why)
			}
		}
	}
}

// TestLayers fails on an import, in any non-test file of the module,
// that runs against the tree's layers (see the package doc).
func TestLayers(t *testing.T) {
	root, module := moduleRoot(t)
	used := make([]bool, len(exceptions))
	var bad []string
	for _, path := range goFiles(t, root, ".") {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		from := filepath.ToSlash(filepath.Dir(rel)) + "/"
	imports:
		for _, is := range f.Imports {
			ip, _ := strconv.Unquote(is.Path.Value)
			to, ok := strings.CutPrefix(ip, module+"/")
			if !ok {
				continue
			}
			to += "/"
			for i, e := range exceptions {
				if from == e.from+"/" && to == e.to+"/" {
					used[i] = true
					continue imports
				}
			}
			for _, l := range layers {
				if l.breaks(from, to) {
					p := fset.Position(is.Pos())
					bad = append(bad, fmt.Sprintf("%s:%d: %s imports %s: %s", rel, p.Line, strings.TrimSuffix(from, "/"), ip, l.why))
				}
			}
		}
	}
	for i, e := range exceptions {
		if !used[i] {
			bad = append(bad, fmt.Sprintf("internal/core/purity_test.go: the exception %s -> %s is no longer needed: delete it", e.from, e.to))
		}
	}
	report(t, bad, "an import runs against the layers; see internal/core/doc.go")
}

// report fails t with every finding, one a line, sorted.
func report(t *testing.T, bad []string, summary string) {
	t.Helper()
	if len(bad) == 0 {
		return
	}
	sort.Strings(bad)
	t.Errorf("%s:\n\t%s", summary, strings.Join(bad, "\n\t"))
}

// goFiles lists the non-test Go files under dir (relative to root),
// skipping testdata and hidden directories, whatever their build tags.
func goFiles(t *testing.T, root, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != filepath.Join(root, dir) && (name == "testdata" || name == "vendor" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") && !strings.HasPrefix(name, ".") && !strings.HasPrefix(name, "_") {
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// moduleRoot finds go.mod above the test's directory and reads the
// module path from it.
func moduleRoot(t *testing.T) (root, module string) {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		f, err := os.Open(filepath.Join(dir, "go.mod"))
		if err == nil {
			defer f.Close()
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if m, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
					return dir, strings.TrimSpace(m)
				}
			}
			t.Fatalf("%s/go.mod names no module", dir)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test")
		}
		dir = parent
	}
}

func set(xs ...string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}
