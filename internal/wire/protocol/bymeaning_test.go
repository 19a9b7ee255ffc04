package protocol

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"

	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// Streams and answers are read by their meaning (Event, StreamCheck): no
// decision in the packages that read what providers and clients send
// matches a byte pattern of JSON, since a legal re-encoding (a space, a
// key order, an escape) or a model's own text defeats every such
// pattern. This test keeps it so: it fails on any bytes or strings
// search (Contains, Index, HasPrefix, Count, Equal, ...) whose needle is
// a JSON fragment (it holds a double quote), written in place or in a
// package-level variable or constant, in the non-test files of the
// packages below. A pre-check that only sends the unusual to a real
// parser, whose answer it never replaces, is the one kind of exception,
// listed with its reason; an exception no longer needed fails the test.
var byMeaningPackages = []string{"internal/server/gateway", "internal/wire/protocol", "internal/wire/translate"}

var byMeaningExceptions = []struct{ file, why string }{
	{"internal/wire/protocol/choices.go", "a pre-check: a body naming no n, best_of or escape cannot ask for more than one choice; any other goes to encoding/json (FuzzChoices)"},
}

var searchFuncs = map[string]bool{
	"Contains": true, "ContainsAny": true, "Index": true, "IndexAny": true, "LastIndex": true,
	"HasPrefix": true, "HasSuffix": true, "Count": true, "Equal": true, "EqualFold": true,
	"Cut": true, "CutPrefix": true, "CutSuffix": true, "Split": true, "SplitN": true, "Fields": true,
}

func TestNoStreamDecisionMatchesJSONBytes(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	var bad []string
	for _, pkg := range byMeaningPackages {
		files, err := filepath.Glob(filepath.Join(root, pkg, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		fset := token.NewFileSet()
		var parsed []*ast.File
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			af, err := parser.ParseFile(fset, f, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			parsed = append(parsed, af)
		}
		patterns := jsonPatternNames(parsed)
		var check func(n ast.Node, names map[string]string)
		check = func(n ast.Node, names map[string]string) {
			ast.Inspect(n, func(n ast.Node) bool {
				if r, ok := n.(*ast.RangeStmt); ok {
					// A loop over a list of patterns names each in turn.
					list, lok := r.X.(*ast.Ident)
					v, vok := r.Value.(*ast.Ident)
					if lok && vok && names[list.Name] != "" {
						inner := map[string]string{v.Name: names[list.Name]}
						for k, p := range names {
							inner[k] = p
						}
						check(r.Body, inner)
						return false
					}
				}
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || !searchFuncs[sel.Sel.Name] {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "bytes" && x.Name != "strings" {
					return true
				}
				for _, arg := range call.Args {
					if lit := jsonFragment(arg, names); lit != "" {
						pos := fset.Position(call.Pos())
						rel, _ := filepath.Rel(root, pos.Filename)
						rel = filepath.ToSlash(rel)
						if excepted(rel) {
							used[rel] = true
							continue
						}
						bad = append(bad, fmt.Sprintf("%s:%d: %s.%s matches the JSON bytes %s", rel, pos.Line, sel.X.(*ast.Ident).Name, sel.Sel.Name, lit))
					}
				}
				return true
			})
		}
		for _, af := range parsed {
			check(af, patterns)
		}
	}
	for _, e := range byMeaningExceptions {
		if !used[e.file] {
			bad = append(bad, fmt.Sprintf("the exception for %s is no longer needed: delete it", e.file))
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
	if len(bad) > 0 {
		t.Log("read the event's record (protocol.Event, StreamCheck.Facts) or parse the JSON instead")
	}
}

func excepted(file string) bool {
	for _, e := range byMeaningExceptions {
		if e.file == file {
			return true
		}
	}
	return false
}

// jsonPatternNames are the package-level variables and constants whose
// values hold a JSON fragment.
func jsonPatternNames(files []*ast.File) map[string]string {
	names := map[string]string{}
	for _, f := range files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR && g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, v := range vs.Values {
					if lit := jsonFragment(v, nil); lit != "" && i < len(vs.Names) {
						names[vs.Names[i].Name] = lit
					}
				}
			}
		}
	}
	return names
}

// jsonFragment is the first string literal in e holding a double quote
// (a JSON key or string written as bytes), or the value of a name that
// holds one.
func jsonFragment(e ast.Expr, names map[string]string) string {
	found := ""
	ast.Inspect(e, func(n ast.Node) bool {
		if found != "" {
			return false
		}
		switch n := n.(type) {
		case *ast.BasicLit:
			if n.Kind == token.STRING {
				if s, err := strconv.Unquote(n.Value); err == nil && strings.Contains(s, `"`) {
					found = n.Value
				}
			}
		case *ast.Ident:
			if lit, ok := names[n.Name]; ok {
				found = lit + " (" + n.Name + ")"
			}
		}
		return true
	})
	return found
}
