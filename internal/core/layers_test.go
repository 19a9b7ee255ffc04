package core_test

import (
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// layer is a rule of the tree: no package under from imports one under
// to (each a path prefix inside the module, "" any package), unless the
// imported package is under one of but, or the importer under one of by.
// A linked rule holds for what the importer links, not only for what it
// names: no chain of imports may lead from one to the other either.
type layer struct {
	from, to string
	but, by  []string
	linked   bool
	why      string
}

var layers = []layer{
	{from: "internal/server/", to: "internal/sim/", linked: true, why: "the real host does not run the simulator"},
	{from: "internal/sim/", to: "internal/server/", linked: true, why: "the simulator drives the core, not the real host"},
	{from: "internal/sim/", to: "internal/harness/", linked: true, why: "the simulator models the world (internal/model), it does not start fakes"},
	{from: "internal/policy/", to: "internal/", but: []string{"internal/core/", "internal/model/", "internal/config/", "internal/wire/"},
		why: "policy turns config into core values for every host, so it imports only core, model, config and wire"},
	{from: "internal/config/", to: "internal/", but: []string{"internal/config/", "internal/wire/", "internal/model/"},
		why: "config holds the files' schemas: it imports only wire (the JSON-schema checks of eval cases) and model (the upstream behaviour a script describes)"},
	{from: "internal/wire/", to: "internal/", but: []string{"internal/wire/"}, why: "the dialects' bytes import only each other"},
	{from: "", to: "internal/cli/", by: []string{"cmd/", "internal/cli/"}, why: "only cmd/ imports the command line"},
	{from: "internal/server/", to: "internal/harness/", linked: true, why: "the real host never links the test harness (fakes, grammar checks): its tests may"},
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

// exception is an import that breaks a layer today, with what removes it.
type exception struct{ from, to, why string }

// exceptions are the tree's imports against a layer. An exception no
// import needs any more fails the test, so the list only shrinks.
var exceptions = []exception{
	// None. The public client imports nothing under internal: what it
	// shares with the models, its retry budget and throttle, lives in
	// its own pure package, client/brake, which the models import.
}

// checkImports lists every import in files that runs against layers,
// as "file:line: what", file relative to the module's root: each import
// that breaks a rule, each import that links, through other packages,
// what a linked rule forbids, and each exception no import needs.
func checkImports(t *testing.T, root, module string, files []srcFile, exceptions []exception) []string {
	t.Helper()
	graph := map[string][]importEdge{} // importer → its imports, in file order
	used := make([]bool, len(exceptions))
	var bad []string
	for _, sf := range files {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, sf.path, sf.src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		rel := filepath.ToSlash(strings.TrimPrefix(sf.path, root+string(filepath.Separator)))
		from := filepath.ToSlash(filepath.Dir(rel)) + "/"
	imports:
		for _, is := range f.Imports {
			ip, _ := strconv.Unquote(is.Path.Value)
			to, ok := strings.CutPrefix(ip, module+"/")
			if !ok {
				continue
			}
			to += "/"
			pos := fmt.Sprintf("%s:%d", rel, fset.Position(is.Pos()).Line)
			if !slices.ContainsFunc(graph[from], func(e importEdge) bool { return e.to == to }) {
				graph[from] = append(graph[from], importEdge{to, ip, pos})
			}
			for i, e := range exceptions {
				if from == e.from+"/" && to == e.to+"/" {
					used[i] = true
					continue imports
				}
			}
			for _, l := range layers {
				if l.breaks(from, to) {
					bad = append(bad, fmt.Sprintf("%s: %s imports %s: %s", pos, strings.TrimSuffix(from, "/"), ip, l.why))
				}
			}
		}
	}
	// A linked rule: follow each import of a package under from that the
	// rule lets through, and report the first chain that reaches to.
	for _, l := range layers {
		if !l.linked {
			continue
		}
		for _, from := range sortedKeys(graph) {
			if !strings.HasPrefix(from, l.from) {
				continue
			}
			for _, first := range graph[from] {
				if l.breaks(from, first.to) {
					continue // reported above
				}
				if chain := reach(graph, from, first.to, l); chain != nil {
					bad = append(bad, fmt.Sprintf("%s: %s imports %s, which links %s (%s): %s",
						first.pos, strings.TrimSuffix(from, "/"), first.ip, strings.TrimSuffix(chain[len(chain)-1], "/"), arrows(chain), l.why))
				}
			}
		}
	}
	for i, e := range exceptions {
		if !used[i] {
			bad = append(bad, fmt.Sprintf("internal/core/layers_test.go: the exception %s -> %s is no longer needed: delete it", e.from, e.to))
		}
	}
	return bad
}

// importEdge is one package's import of another, both in the module.
type importEdge struct {
	to  string // its path in the module, "internal/wire/" form
	ip  string // as written
	pos string // file:line of the first file that imports it
}

// reach is the shortest chain of imports from start to a package that
// l forbids from to import, start first, or nil if there is none.
func reach(graph map[string][]importEdge, from, start string, l layer) []string {
	parent := map[string]string{start: ""}
	for queue := []string{start}; len(queue) > 0; queue = queue[1:] {
		p := queue[0]
		if l.breaks(from, p) {
			var chain []string
			for ; p != ""; p = parent[p] {
				chain = append(chain, p)
			}
			slices.Reverse(chain)
			return chain
		}
		for _, e := range graph[p] {
			if _, seen := parent[e.to]; !seen {
				parent[e.to] = p
				queue = append(queue, e.to)
			}
		}
	}
	return nil
}

// arrows writes a chain of packages as "a → b → c".
func arrows(chain []string) string {
	out := make([]string, len(chain))
	for i, p := range chain {
		out[i] = strings.TrimSuffix(p, "/")
	}
	return strings.Join(out, " → ")
}

// TestLayers fails on an import, in any non-test file of the module,
// that runs against the tree's layers (see the package doc).
func TestLayers(t *testing.T) {
	root, module := moduleRoot(t)
	var files []srcFile
	for _, path := range goFiles(t, root, ".") {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, srcFile{path, src})
	}
	report(t, checkImports(t, root, module, files, exceptions), "an import runs against the layers; see internal/core/doc.go")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
