package config

import (
	"bytes"
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
	"slices"
	"sort"
	"strings"
	"testing"
)

// docs/ARCHITECTURE.md's list of where the request's deadline goes is
// what the code does now. The test type-checks the real host (every
// package under internal/server and what it imports from the module)
// and follows the deadline from lifecycle.Request.Deadline:
//
//   - the field: a function that reads or writes Request.Deadline;
//   - the context: a function that sets a context's deadline from it
//     (context.WithDeadline), reads one back (Context.Deadline), tells
//     its end by the runner's cause (runner.ErrDeadline), or calls a
//     function that returns whether it did (the gateway's timedOut);
//   - handed on: a time.Time taken from either, as a variable, a
//     parameter, a result or another struct's field, followed through
//     assignments, calls, returns and struct literals.
//
// When the list drifts (a function renamed, a stage moved to a file or
// package of its own), the test prints the block to paste between the
// markers and writes it to a file in the temporary directory; it never
// writes the tracked file.
func TestDeadlinePath(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not on PATH: cannot list the packages to follow the deadline through")
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- deadline:begin -->\n", "<!-- deadline:end -->"
	_, rest, ok1 := strings.Cut(string(doc), begin)
	committed, _, ok2 := strings.Cut(rest, end)
	if !ok1 || !ok2 {
		t.Fatalf("docs/ARCHITECTURE.md has no %q ... %q markers", strings.TrimSpace(begin), end)
	}
	now := deadlineBlock(t)
	if committed == now {
		return
	}
	f, err := os.CreateTemp("", "sluice-deadline-*.md")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(now)
	_ = f.Close()
	t.Errorf("docs/ARCHITECTURE.md's deadline path differs from what the code does now.\n"+
		"Replace the lines between %q and %q with these (also in %s), and review the prose above them:\n\n%s",
		strings.TrimSpace(begin), end, f.Name(), now)
}

// deadlineBlock derives the Markdown between the markers.
func deadlineBlock(t *testing.T) string {
	t.Helper()
	mod, pkgs := typeCheckHost(t)
	find := func(pkg, name string) types.Object {
		for _, p := range pkgs {
			if p.types.Path() == mod+"/"+pkg {
				return p.types.Scope().Lookup(name)
			}
		}
		return nil
	}
	req, _ := find("internal/core/lifecycle", "Request").(*types.TypeName)
	errDeadline, _ := find("internal/server/runner", "ErrDeadline").(*types.Var)
	if req == nil || errDeadline == nil {
		t.Fatal("lifecycle.Request or runner.ErrDeadline is gone: say where the request's deadline starts in TestDeadlinePath")
	}
	var field types.Object
	if st, ok := req.Type().Underlying().(*types.Struct); ok {
		for f := range st.Fields() {
			if f.Name() == "Deadline" {
				field = f
			}
		}
	}
	if field == nil {
		t.Fatal("lifecycle.Request has no Deadline field: say where the request's deadline starts in TestDeadlinePath")
	}
	fl := &deadlineFlow{carries: map[types.Object]bool{field: true}, field: field, cause: errDeadline, tests: map[types.Object]bool{}}
	for _, p := range pkgs {
		for _, f := range p.files {
			fl.findTests(p.info, f)
		}
	}
	for changed := true; changed; {
		changed = false
		for _, p := range pkgs {
			for _, f := range p.files {
				changed = fl.spread(p.info, f) || changed
			}
		}
	}
	// Which functions touch it, and how, by package and file.
	type key struct{ pkg, file string }
	touched := map[key]map[string]map[string]bool{} // file → function → values
	for _, p := range pkgs {
		for _, f := range p.files {
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Body == nil {
					continue
				}
				how := fl.touches(p.info, fd)
				if len(how) == 0 {
					continue
				}
				k := key{strings.TrimPrefix(p.types.Path(), mod+"/"), filepath.Base(p.fset.Position(f.Pos()).Filename)}
				if touched[k] == nil {
					touched[k] = map[string]map[string]bool{}
				}
				touched[k][funcName(fd)] = how
			}
		}
	}
	keys := make([]key, 0, len(touched))
	for k := range touched {
		keys = append(keys, k)
	}
	// The order a request meets them: the core that sets the deadline,
	// the host's runner, then the host's other packages; files by name.
	rank := func(pkg string) int {
		switch {
		case strings.HasPrefix(pkg, "internal/core/"):
			return 0
		case pkg == "internal/server/runner":
			return 1
		}
		return 2
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if ra, rb := rank(a.pkg), rank(b.pkg); ra != rb {
			return ra < rb
		}
		if a.pkg != b.pkg {
			return a.pkg < b.pkg
		}
		return a.file < b.file
	})
	var pkgNames []string
	values := map[string]bool{}
	var b bytes.Buffer
	last := ""
	for _, k := range keys {
		if k.pkg != last {
			last = k.pkg
			pkgNames = append(pkgNames, k.pkg)
			fmt.Fprintf(&b, "- `%s`\n", k.pkg)
		}
		var fns []string
		for _, fn := range slices.Sorted(mapKeys(touched[k])) {
			how := slices.Sorted(mapKeys(touched[k][fn]))
			for _, h := range how {
				values[h] = true
			}
			fns = append(fns, fmt.Sprintf("`%s` (%s)", fn, strings.Join(how, ", ")))
		}
		fmt.Fprintf(&b, "  - `%s`: %s\n", k.file, strings.Join(fns, ", "))
	}
	head := fmt.Sprintf("The deadline passes through %d files in %d packages, as %d values: "+
		"the field `Request.Deadline` (*field*), the call's context deadline (*context*), "+
		"and a `time.Time` taken from either and handed on as a variable, parameter, result or "+
		"another struct's field (*handed on*). `TestDeadlinePath` (`internal/config`) derives this "+
		"list from the code and fails, printing the new list, when it drifts:\n\n",
		len(keys), len(pkgNames), len(values))
	return head + b.String()
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// funcName is "Recv.Method" or "Func".
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
			continue
		case *ast.IndexExpr:
			t = x.X
			continue
		case *ast.IndexListExpr:
			t = x.X
			continue
		case *ast.Ident:
			return x.Name + "." + fd.Name.Name
		}
		return fd.Name.Name
	}
}

// deadlineFlow is what carries the deadline: the objects (fields,
// variables, parameters, functions whose result it is) found so far.
type deadlineFlow struct {
	carries map[types.Object]bool
	field   types.Object // lifecycle.Request.Deadline
	cause   types.Object // runner.ErrDeadline
	// tests are the functions that tell whether the deadline ended a
	// call: they return a bool and read the cause.
	tests map[types.Object]bool
}

// findTests adds f's deadline tests to fl.tests.
func (fl *deadlineFlow) findTests(info *types.Info, f *ast.File) {
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		res := info.Defs[fd.Name].Type().(*types.Signature).Results()
		if res.Len() != 1 || !types.Identical(res.At(0).Type(), types.Typ[types.Bool]) {
			continue
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && info.Uses[id] == fl.cause {
				fl.tests[info.Defs[fd.Name]] = true
			}
			return true
		})
	}
}

// isTime reports whether t is time.Time.
func isTime(t types.Type) bool {
	n, ok := t.(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "time" && n.Obj().Name() == "Time"
}

// objOf is the object e names: a variable, a field, a function.
func objOf(info *types.Info, e ast.Expr) types.Object {
	switch x := ast.Unparen(e).(type) {
	case *ast.Ident:
		if o := info.Defs[x]; o != nil {
			return o
		}
		return info.Uses[x]
	case *ast.SelectorExpr:
		if s := info.Selections[x]; s != nil {
			return s.Obj()
		}
		return info.Uses[x.Sel]
	}
	return nil
}

// isContextDeadline reports whether call reads a context's deadline.
func isContextDeadline(info *types.Info, call *ast.CallExpr) bool {
	f, ok := objOf(info, call.Fun).(*types.Func)
	return ok && f.FullName() == "(context.Context).Deadline"
}

// carried reports whether e's value comes from the deadline.
func (fl *deadlineFlow) carried(info *types.Info, e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.CallExpr:
			if isContextDeadline(info, x) {
				found = true
			}
		case *ast.Ident:
			if fl.carries[info.Uses[x]] {
				found = true
			}
		case *ast.SelectorExpr:
			if s := info.Selections[x]; s != nil && fl.carries[s.Obj()] {
				found = true
			}
		}
		return !found
	})
	return found
}

// spread follows the deadline one step through f, and reports whether
// it reached anything new.
func (fl *deadlineFlow) spread(info *types.Info, f *ast.File) bool {
	changed := false
	mark := func(o types.Object) {
		if o != nil && !fl.carries[o] && isTime(o.Type()) {
			fl.carries[o] = true
			changed = true
		}
	}
	assign := func(lhs, rhs []ast.Expr) {
		for i, l := range lhs {
			r := rhs[0]
			if len(rhs) == len(lhs) {
				r = rhs[i]
			}
			if fl.carried(info, r) {
				mark(objOf(info, l))
			}
		}
	}
	var fn []*types.Func // the functions being walked, innermost last
	var visit func(n ast.Node) bool
	visit = func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.FuncDecl:
			if x.Body == nil {
				return false
			}
			fn = append(fn, info.Defs[x.Name].(*types.Func))
			ast.Inspect(x.Body, visit)
			fn = fn[:len(fn)-1]
			return false
		case *ast.FuncLit:
			fn = append(fn, nil) // a literal's results are not followed
			ast.Inspect(x.Body, visit)
			fn = fn[:len(fn)-1]
			return false
		case *ast.AssignStmt:
			assign(x.Lhs, x.Rhs)
		case *ast.ValueSpec:
			if len(x.Values) > 0 {
				lhs := make([]ast.Expr, len(x.Names))
				for i, id := range x.Names {
					lhs[i] = id
				}
				assign(lhs, x.Values)
			}
		case *ast.CompositeLit:
			for _, el := range x.Elts {
				if kv, ok := el.(*ast.KeyValueExpr); ok && fl.carried(info, kv.Value) {
					if id, ok := kv.Key.(*ast.Ident); ok {
						mark(info.Uses[id])
					}
				}
			}
		case *ast.CallExpr:
			callee, ok := objOf(info, x.Fun).(*types.Func)
			if !ok {
				break
			}
			sig := callee.Type().(*types.Signature)
			for i, a := range x.Args {
				if i < sig.Params().Len() && fl.carried(info, a) {
					mark(sig.Params().At(i))
				}
			}
		case *ast.ReturnStmt:
			if len(fn) == 0 || fn[len(fn)-1] == nil {
				break
			}
			f := fn[len(fn)-1]
			res := f.Type().(*types.Signature).Results()
			for i, r := range x.Results {
				if i < res.Len() && isTime(res.At(i).Type()) && fl.carried(info, r) && !fl.carries[f] {
					fl.carries[f] = true
					changed = true
				}
			}
		}
		return true
	}
	ast.Inspect(f, visit)
	return changed
}

// touches names the values of the deadline fd's body handles.
func (fl *deadlineFlow) touches(info *types.Info, fd *ast.FuncDecl) map[string]bool {
	how := map[string]bool{}
	if fl.carries[info.Defs[fd.Name]] {
		how["handed on"] = true
	}
	for _, l := range []*ast.FieldList{fd.Recv, fd.Type.Params} {
		if l == nil {
			continue
		}
		for _, p := range l.List {
			for _, id := range p.Names {
				if fl.carries[info.Defs[id]] {
					how["handed on"] = true
				}
			}
		}
	}
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.CallExpr:
			if isContextDeadline(info, x) || fl.tests[objOf(info, x.Fun)] {
				how["context"] = true
			}
			if f, ok := objOf(info, x.Fun).(*types.Func); ok && f.Pkg() != nil && f.Pkg().Path() == "context" &&
				strings.HasPrefix(f.Name(), "WithDeadline") && len(x.Args) > 1 && fl.carried(info, x.Args[1]) {
				how["context"] = true
			}
		case *ast.Ident, *ast.SelectorExpr:
			o := objOf(info, x.(ast.Expr))
			switch {
			case o == nil:
			case o == fl.field:
				how["field"] = true
			case o == fl.cause:
				how["context"] = true
			case fl.carries[o]:
				how["handed on"] = true
			}
		}
		return true
	})
	return how
}

// hostPackage is one of the module's packages, type-checked from source.
type hostPackage struct {
	fset  *token.FileSet
	files []*ast.File
	info  *types.Info
	types *types.Package
}

// typeCheckHost type-checks, from source, every package under
// internal/server and the module's packages they import, in the order
// go list gives (each after what it imports); everything else comes
// from the build cache's export data.
func typeCheckHost(t *testing.T) (module string, pkgs []hostPackage) {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-export", "-f",
		"{{.ImportPath}}\t{{.Export}}\t{{.Dir}}\t{{join .GoFiles \",\"}}\t{{if .Module}}{{.Module.Path}}{{if .Module.Main}}\tmain{{end}}{{end}}",
		"./internal/server/...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	fset := token.NewFileSet()
	export := map[string]string{}
	src := map[string]*types.Package{}
	gc := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		if e := export[path]; e != "" {
			return os.Open(e)
		}
		return nil, fmt.Errorf("no export data for %s", path)
	})
	imp := importerFunc(func(path string) (*types.Package, error) {
		if p := src[path]; p != nil {
			return p, nil
		}
		return gc.Import(path)
	})
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) < 6 || f[5] != "main" {
			export[f[0]] = f[1]
			continue
		}
		module = f[4]
		var files []*ast.File
		for name := range strings.SplitSeq(f[3], ",") {
			af, err := parser.ParseFile(fset, filepath.Join(f[2], name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, af)
		}
		info := &types.Info{
			Types:      map[ast.Expr]types.TypeAndValue{},
			Defs:       map[*ast.Ident]types.Object{},
			Uses:       map[*ast.Ident]types.Object{},
			Selections: map[*ast.SelectorExpr]*types.Selection{},
		}
		conf := types.Config{Importer: imp}
		p, err := conf.Check(f[0], fset, files, info)
		if err != nil {
			t.Fatalf("type-checking %s: %v", f[0], err)
		}
		src[f[0]] = p
		pkgs = append(pkgs, hostPackage{fset, files, info, p})
	}
	return module, pkgs
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }
