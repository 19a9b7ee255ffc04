package gateway

import (
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
)

// requestSide are the files of the request side: the stage table, the
// pass it runs on, the record it fills, the provider seam, and the
// stages' own files. Among them the arrows (a file uses a name another
// defines) run one way only, down: no file uses a name from a file that
// uses one of its own, however indirectly. The answer side (calls.go,
// attempt.go, forward.go, relay*.go) and the handler (inference.go)
// stand above them.
var requestSide = []string{
	"stages.go", "hop.go", "exchange.go", "adapter.go", "registry.go",
	"budgets.go", "degrade.go", "spend.go", "fleet.go", "validation.go",
	"translate.go", "native.go", "contextroute.go", "refuse.go",
}

// TestRequestSideRunsDown holds the request side's files to a drawing
// with no arrow running back up, and every stage's code to those files.
func TestRequestSideRunsDown(t *testing.T) {
	for _, s := range requestStages {
		for _, f := range []any{s.run, s.end} {
			if reflect.ValueOf(f).IsNil() {
				continue
			}
			fn := runtime.FuncForPC(reflect.ValueOf(f).Pointer())
			file, _ := fn.FileLine(fn.Entry())
			if !slices.Contains(requestSide, filepath.Base(file)) {
				t.Errorf("stage %s's %s is in %s, which is not one of the request side's files (requestSide)", s.name, fn.Name(), filepath.Base(file))
			}
		}
	}
	if loops := requestSideLoops(t, nil); len(loops) > 0 {
		t.Fatalf("arrows run back up among the request side's files:\n%s", strings.Join(loops, "\n"))
	}
}

// TestRequestSideCatchesPlant: a use of the stage table from the
// exchange's file, which the table's file uses, is caught with where.
func TestRequestSideCatchesPlant(t *testing.T) {
	loops := requestSideLoops(t, map[string]string{"exchange.go": "\nfunc plantedBackArrow() { _ = requestStages }\n"})
	got := strings.Join(loops, "\n")
	if !strings.Contains(got, "exchange.go") || !strings.Contains(got, "stages.go") || !strings.Contains(got, "exchange.go:") {
		t.Fatalf("the plant was not caught with its place; got:\n%s", got)
	}
}

// requestSideLoops type-checks the package (with extra appended to the
// named files) and returns each loop among the request side's files, as
// the arrows that make it, each with one place that draws it.
func requestSideLoops(t *testing.T, extra map[string]string) []string {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		af, err := parser.ParseFile(fset, name, string(src)+extra[name], parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, af)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: exportImporter(t, fset)}
	pkg, err := conf.Check("github.com/sluice-gw/sluice/internal/server/gateway", fset, files, info)
	if err != nil {
		t.Fatalf("type-checking the package: %v", err)
	}
	side := map[string]bool{}
	for _, f := range requestSide {
		side[f] = true
	}
	// arrows[a][b] is one place in a that uses a name b defines.
	arrows := map[string]map[string]string{}
	for id, obj := range info.Uses {
		if obj.Pkg() != pkg || !obj.Pos().IsValid() {
			continue
		}
		if v, ok := obj.(*types.Var); ok && (v.IsField() || v.Parent() != pkg.Scope()) {
			continue // fields go with their type; locals stay home
		}
		if _, ok := obj.(*types.Func); !ok && obj.Parent() != pkg.Scope() {
			continue
		}
		at := fset.Position(id.Pos())
		a, b := filepath.Base(at.Filename), filepath.Base(fset.Position(obj.Pos()).Filename)
		if a == b || !side[a] || !side[b] {
			continue
		}
		if arrows[a] == nil {
			arrows[a] = map[string]string{}
		}
		if old, ok := arrows[a][b]; !ok || at.String() < old {
			arrows[a][b] = fmt.Sprintf("%s:%d (%s)", a, at.Line, id.Name)
		}
	}
	var loops []string
	for _, c := range stronglyConnected(requestSide, arrows) {
		var in []string
		for _, a := range c {
			for _, b := range c {
				if where, ok := arrows[a][b]; ok {
					in = append(in, fmt.Sprintf("  %s -> %s at %s", a, b, where))
				}
			}
		}
		sort.Strings(in)
		loops = append(loops, fmt.Sprintf("%s use each other:\n%s", strings.Join(c, ", "), strings.Join(in, "\n")))
	}
	return loops
}

// stronglyConnected is the groups of two or more nodes that reach each
// other along arrows (Tarjan's algorithm), each sorted.
func stronglyConnected(nodes []string, arrows map[string]map[string]string) [][]string {
	index, low, on := map[string]int{}, map[string]int{}, map[string]bool{}
	var stack []string
	var out [][]string
	next := 0
	var visit func(v string)
	visit = func(v string) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		on[v] = true
		var to []string
		for w := range arrows[v] {
			to = append(to, w)
		}
		sort.Strings(to)
		for _, w := range to {
			if _, seen := index[w]; !seen {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if on[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] != index[v] {
			return
		}
		var c []string
		for {
			w := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			on[w] = false
			c = append(c, w)
			if w == v {
				break
			}
		}
		if len(c) > 1 {
			sort.Strings(c)
			out = append(out, c)
		}
	}
	for _, v := range nodes {
		if _, seen := index[v]; !seen {
			visit(v)
		}
	}
	return out
}

// exportImporter imports the package's dependencies from the build
// cache's export data, as go list -export gives it.
func exportImporter(t *testing.T, fset *token.FileSet) types.Importer {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-export", "-f", "{{.ImportPath}}\t{{.Export}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	export := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		if path, file, ok := strings.Cut(line, "\t"); ok {
			export[path] = file
		}
	}
	return importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		if f := export[path]; f != "" {
			return os.Open(f)
		}
		return nil, fmt.Errorf("no export data for %s", path)
	})
}
