package core_test

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
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

// clockNames are time's names that reach the wall clock's machinery
// rather than carry a value: timers and tickers, the zone database, and
// the process's own zone (time.Local), which differs between hosts.
var clockNames = set("Timer", "Ticker", "LoadLocation", "LoadLocationFromTZData", "Local")

// networkIO are the names of net and net/http that open connections or
// serve them, or stand for a client or server that does; net/http's
// headers, requests, responses and status codes are values, and fine.
var networkIO = set(
	"net.Dial", "net.DialTimeout", "net.DialTCP", "net.DialUDP", "net.DialIP", "net.DialUnix", "net.Dialer",
	"net.Listen", "net.ListenPacket", "net.ListenTCP", "net.ListenUDP", "net.ListenUnix",
	"net/http.Get", "net/http.Head", "net/http.Post", "net/http.PostForm", "net/http.DefaultClient", "net/http.DefaultTransport",
	"net/http.Client", "net/http.Transport", "net/http.Server", "net/http.ListenAndServe", "net/http.ListenAndServeTLS",
	"net/http.Serve", "net/http.ServeTLS",
)

// localZoned are time's constructors that return a time in the
// process's own zone (time.Local), which differs between hosts.
var localZoned = set("Unix", "UnixMilli", "UnixMicro")

// clockMethods are the methods that reach the same machinery from a
// value: a time put in the process's zone, and a timer or ticker reset
// or stopped.
var clockMethods = set("(time.Time).Local", "(*time.Timer).Reset", "(*time.Timer).Stop", "(*time.Ticker).Reset", "(*time.Ticker).Stop")

// onceOnly are sync's names a wire package may use: each builds a value
// once and hands every caller the same one, as a table initialised at
// its declaration does, so no caller sees another's doing.
var onceOnly = set("Once", "OnceFunc", "OnceValue", "OnceValues")

// regime is which rules a package is held to.
type regime int

const (
	// coreRule holds internal/core and internal/model to every rule.
	coreRule regime = iota
	// wireRule holds internal/wire to the rules that keep a codec a
	// function of its bytes: no clock, no locks, no goroutines. The
	// dialects may import what they need to read their formats.
	wireRule
)

// impure are findings in the real tree today, each with what removes
// it. A finding matches an entry when it is in file and its message
// holds what. An entry no finding matches fails the test, so the list
// only shrinks.
var impure = []struct{ file, what, why string }{
	{"internal/wire/contract/budget.go", "starts a goroutine", "the schema check runs on its own goroutine so that a costly schema is abandoned at MaxCheckTime; bounding the checker's own work (a step budget in the compiled schema) and returning ErrCostly from inside it removes the goroutine"},
	{"internal/wire/contract/budget.go", "time.NewTimer", "the timer behind MaxCheckTime goes with the goroutine: a step budget counts work, not wall time"},
	{"internal/wire/contract/cache.go", "sync.Mutex", "the compiled-schema cache is process state; the gateway holding the cache and passing it in (or a compiled schema) removes it"},
	{"internal/wire/vendors/vendors.go", "sync.RWMutex", "Register lets a test add a vendor of its own at run time; tests passing their own list where one is needed, and kinds becoming a table fixed at its declaration, removes the lock"},
	{"internal/wire/tokens/counter.go", "sync.Mutex", "one Counter, with its count cache, serves concurrent requests; the host serialising its use, or each request holding a cache of its own, removes the lock"},
	{"internal/wire/tokens/counter.go", "sync.Pool", "the memos are pooled scratch space; the caller passing its scratch in removes the pool"},
	{"internal/wire/protocol/streamcheck.go", "sync.Pool", "the event readers are pooled scratch space; the caller passing its reader in removes the pool"},
	{"internal/wire/native/transport.go", "http.DefaultTransport", "a native Transport calls through the RoundTripper the host gives it, and through http.DefaultTransport when given none; the gateway always gives one, so Base becoming required removes it"},
	{"internal/wire/protocol/firsttoken.go", "sync.Pool", "the stream checks are pooled scratch space; the caller passing its check in removes the pool"},
}

// TestCoreIsPure fails on any non-test file under internal/core,
// internal/model or client/brake that imports beyond pureStd and the
// pure trees, reads or takes in the clock, reaches timers or the
// process's zone, starts a goroutine, uses a channel, takes a lock,
// draws from a global random source, prints, keeps package-level state
// or lets a map's iteration order reach a result; on any file outside
// them that writes one of their package-level variables; and on any
// under internal/wire that reads the clock, takes a lock, starts a
// goroutine or reaches the network or the process, but for the
// findings impure lists. See the package doc.
func TestCoreIsPure(t *testing.T) {
	root, module := moduleRoot(t)
	c := newPureChecker(root, module)
	var found []string
	for _, tree := range []struct {
		dir string
		r   regime
	}{{"internal/core", coreRule}, {"internal/model", coreRule}, {"client/brake", coreRule}, {"internal/wire", wireRule}} {
		byDir := map[string][]srcFile{}
		for _, f := range goFiles(t, root, tree.dir) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			byDir[filepath.Dir(f)] = append(byDir[filepath.Dir(f)], srcFile{f, src})
		}
		dirs := slices.Sorted(maps.Keys(byDir))
		for _, d := range dirs {
			found = append(found, c.checkPackage(t, byDir[d], tree.r)...)
		}
	}
	var hosts []srcFile
	for _, f := range goFiles(t, root, ".") {
		rel := filepath.ToSlash(strings.TrimPrefix(f, root+string(filepath.Separator)))
		if strings.HasPrefix(rel, "internal/core/") || strings.HasPrefix(rel, "internal/model/") || strings.HasPrefix(rel, "client/brake/") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		hosts = append(hosts, srcFile{f, src})
	}
	found = append(found, c.hostWrites(t, hosts)...)
	used := make([]bool, len(impure))
	var bad []string
findings:
	for _, f := range found {
		for i, e := range impure {
			if strings.HasPrefix(f, e.file+":") && strings.Contains(f, e.what) {
				used[i] = true
				continue findings
			}
		}
		bad = append(bad, f)
	}
	for i, e := range impure {
		if !used[i] {
			bad = append(bad, fmt.Sprintf("internal/core/purity_test.go: the exception %s (%s) is no longer needed: delete it", e.file, e.what))
		}
	}
	report(t, bad, "the pure core (internal/core, internal/model) and the wire codecs (internal/wire) must stay pure; see internal/core/doc.go")
}

// srcFile is one Go file: its path (absolute for the tree's files, as
// written for planted ones) and its bytes.
type srcFile struct {
	path string
	src  []byte
}

// pureChecker holds what checking many packages shares: the file set
// and an importer that type-checks, from source, what the core imports.
type pureChecker struct {
	root, module string
	fset         *token.FileSet
	imp          types.Importer
}

func newPureChecker(root, module string) *pureChecker {
	fset := token.NewFileSet()
	return &pureChecker{root: root, module: module, fset: fset, imp: importer.ForCompiler(fset, "source", nil)}
}

// checkPackage lists what breaks r's rules in the files of one package,
// each as "file:line:col: what", file relative to the module's root.
// The core's packages are type-checked too: the rules on package-level
// state, injected clocks and map order need to know what a name is.
func (c *pureChecker) checkPackage(t *testing.T, files []srcFile, r regime) []string {
	t.Helper()
	var parsed []*ast.File
	for _, sf := range files {
		f, err := parser.ParseFile(c.fset, sf.path, sf.src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, f)
	}
	var bad []string
	at := func(n ast.Node, format string, args ...any) {
		p := c.fset.Position(n.Pos())
		rel := strings.TrimPrefix(filepath.ToSlash(p.Filename), filepath.ToSlash(c.root)+"/")
		bad = append(bad, fmt.Sprintf("%s:%d:%d: %s", rel, p.Line, p.Column, fmt.Sprintf(format, args...)))
	}
	var info *types.Info
	if r == coreRule {
		info = &types.Info{
			Types:      map[ast.Expr]types.TypeAndValue{},
			Defs:       map[*ast.Ident]types.Object{},
			Uses:       map[*ast.Ident]types.Object{},
			Selections: map[*ast.SelectorExpr]*types.Selection{},
		}
		var errs []string
		conf := types.Config{Importer: c.imp, Error: func(err error) { errs = append(errs, err.Error()) }}
		conf.Check(parsed[0].Name.Name, c.fset, parsed, info)
		if len(errs) > 0 {
			// The rules below need every name resolved: a package that
			// does not type-check here would be checked only in part.
			t.Fatalf("type-checking %s for the purity rules:\n\t%s", c.fset.Position(parsed[0].Pos()).Filename, strings.Join(errs, "\n\t"))
		}
	}
	for _, f := range parsed {
		c.checkFile(f, r, at)
		if info != nil {
			checkTyped(f, info, at)
		}
	}
	return bad
}

// hostWrites lists, in files outside the core, each write to a core or
// model package's variable: an assignment to it or through an index or
// field of it, ++ or --, or its address taken. The core's package-level
// variables are tables fixed at their declaration; one a host could set
// (a hook, a clock, a default) would be state the simulator and the
// gateway do not share. The check is by syntax: a local name that
// shadows an import is read as the import.
func (c *pureChecker) hostWrites(t *testing.T, files []srcFile) []string {
	t.Helper()
	var bad []string
	for _, sf := range files {
		f, err := parser.ParseFile(c.fset, sf.path, sf.src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		core := map[string]string{} // local name → path in the module
		for _, is := range f.Imports {
			ip, _ := strconv.Unquote(is.Path.Value)
			own, ok := strings.CutPrefix(ip, c.module+"/")
			if !ok || !strings.HasPrefix(own, "internal/core/") && !strings.HasPrefix(own, "internal/model/") {
				continue
			}
			local := ip[strings.LastIndex(ip, "/")+1:]
			if is.Name != nil {
				local = is.Name.Name
			}
			core[local] = own
		}
		if len(core) == 0 {
			continue
		}
		check := func(n ast.Node, e ast.Expr, how string) {
			for {
				switch x := e.(type) {
				case *ast.ParenExpr:
					e = x.X
					continue
				case *ast.IndexExpr:
					e = x.X
					continue
				case *ast.StarExpr:
					e = x.X
					continue
				case *ast.SelectorExpr:
					if id, ok := x.X.(*ast.Ident); ok && core[id.Name] != "" {
						p := c.fset.Position(n.Pos())
						rel := strings.TrimPrefix(filepath.ToSlash(p.Filename), filepath.ToSlash(c.root)+"/")
						bad = append(bad, fmt.Sprintf("%s:%d:%d: %s %s's package-level var %s: the core's package-level variables are tables fixed at their declaration; a host keeps its state in its own values",
							rel, p.Line, p.Column, how, core[id.Name], x.Sel.Name))
						return
					}
					e = x.X
					continue
				}
				return
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				if n.Tok != token.DEFINE {
					for _, l := range n.Lhs {
						check(n, l, "writes")
					}
				}
			case *ast.IncDecStmt:
				check(n, n.X, "writes")
			case *ast.UnaryExpr:
				if n.Op == token.AND {
					if _, lit := n.X.(*ast.CompositeLit); !lit {
						check(n, n.X, "takes the address of")
					}
				}
			}
			return true
		})
	}
	return bad
}

// checkFile applies the rules that need only the file's syntax.
func (c *pureChecker) checkFile(f *ast.File, r regime, at func(ast.Node, string, ...any)) {
	rel := strings.TrimPrefix(filepath.ToSlash(c.fset.Position(f.Pos()).Filename), filepath.ToSlash(c.root)+"/")
	inModel := strings.HasPrefix(rel, "internal/model/")
	core := r == coreRule
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
		if !core {
			continue
		}
		switch own := strings.TrimPrefix(ip, c.module+"/"); {
		case is.Name != nil && is.Name.Name == ".":
			at(is, "dot-imports %q: a pure file names what it uses", ip)
		case own != ip && strings.HasPrefix(own, "internal/model/"):
		case own == "client/brake": // the client's own brakes, pure, which the models run
		case own != ip && strings.HasPrefix(own, "internal/core/") && !inModel:
		case own != ip:
			at(is, "imports %q: a core package imports only core and model packages, a model package only models", ip)
		case !pureStd[ip]:
			at(is, "imports %q: not in the pure standard library allow-list (pureStd in internal/core/purity_test.go)", ip)
		}
	}
	// time.Unix(...).UTC() and .In(loc): a time from a count, put in a
	// zone the code names.
	zoned := map[ast.Node]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok && (sel.Sel.Name == "UTC" || sel.Sel.Name == "In") {
			if call, ok := sel.X.(*ast.CallExpr); ok {
				zoned[call.Fun] = true
			}
		}
		return true
	})
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			at(n, "starts a goroutine: the host owns concurrency")
		case *ast.ChanType:
			if core {
				at(n, "declares a channel type: the host owns concurrency")
			}
		case *ast.SelectStmt:
			if core {
				at(n, "selects on channels: the host owns concurrency")
			}
		case *ast.SendStmt:
			if core {
				at(n, "sends on a channel: the host owns concurrency")
			}
		case *ast.UnaryExpr:
			if core && n.Op == token.ARROW {
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
				} else if core && clockNames[n.Sel.Name] {
					at(n, "reaches the clock's machinery: time.%s (the core takes times and deadlines as values, in UTC or the zone they came in)", n.Sel.Name)
				} else if core && localZoned[n.Sel.Name] && !zoned[n] {
					at(n, "puts a time in the process's zone: time.%s (write time.%s(...).UTC(), or .In the zone that is meant)", n.Sel.Name, n.Sel.Name)
				}
			case "net", "net/http", "os":
				if !core && networkIO[names[x.Name]+"."+n.Sel.Name] || !core && names[x.Name] == "os" {
					at(n, "reaches the network or the process: %s.%s (a codec is a function of its bytes; the host hands it a transport to call through)", x.Name, n.Sel.Name)
				}
			case "sync", "sync/atomic":
				if core || names[x.Name] == "sync/atomic" || !onceOnly[n.Sel.Name] {
					at(n, "takes a lock: %s.%s (the host serialises calls)", x.Name, n.Sel.Name)
				}
			case "math/rand/v2":
				if core && !seededRand[n.Sel.Name] {
					at(n, "draws from the global random source: rand.%s (take a seeded *rand.Rand)", n.Sel.Name)
				}
			case "fmt":
				if core && printing(n.Sel.Name) {
					at(n, "does I/O: fmt.%s (return what the core knows)", n.Sel.Name)
				}
			}
		}
		return true
	})
}

// checkTyped applies the rules that need to know what a name is: no
// package-level state written, no clock taken in as a function, no
// slice built in a map's iteration order.
func checkTyped(f *ast.File, info *types.Info, at func(ast.Node, string, ...any)) {
	// written reports a write through e to a package-level variable.
	written := func(n ast.Node, e ast.Expr, how string) {
		if v := globalVar(rootVar(info, e)); v != nil {
			at(n, "%s package-level var %s: the core keeps its state in values the host holds, not in the package", how, v.Name())
		}
	}
	// A package-level variable that holds a pointer, a function or a
	// channel is state by its type: what it points to changes without
	// any write to the variable, and a host can swap a function in.
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			continue
		}
		for _, spec := range g.Specs {
			for _, id := range spec.(*ast.ValueSpec).Names {
				v, ok := info.Defs[id].(*types.Var)
				if !ok || id.Name == "_" {
					continue
				}
				if kind := stateKind(v.Type()); kind != "" {
					at(id, "declares package-level var %s holding %s (%s): the core keeps its state in values the host holds, not in the package", id.Name, kind, types.TypeString(v.Type(), shortPkg))
				}
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			if n.Tok != token.DEFINE {
				for _, l := range n.Lhs {
					written(n, l, "writes")
				}
			}
		case *ast.IncDecStmt:
			written(n, n.X, "writes")
		case *ast.RangeStmt:
			if n.Tok == token.ASSIGN {
				for _, l := range []ast.Expr{n.Key, n.Value} {
					if l != nil {
						written(n, l, "writes")
					}
				}
			}
		case *ast.CallExpr:
			if clock := clockCall(info, n.Fun); clock != "" {
				at(n, "reads a clock handed in: %s (the core takes times as values, the host passes now in)", clock)
			}
			if b := builtin(info, n.Fun); b == "append" || b == "delete" || b == "clear" {
				if len(n.Args) > 0 {
					written(n, n.Args[0], map[string]string{"append": "appends into", "delete": "deletes from", "clear": "clears"}[b])
				}
			}
			// A method with a pointer receiver, called on a variable
			// (not a pointer), takes the variable's address to change it.
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
				if s := info.Selections[sel]; s != nil && s.Kind() == types.MethodVal {
					_, ptrRecv := s.Obj().Type().(*types.Signature).Recv().Type().(*types.Pointer)
					_, ptrX := info.TypeOf(sel.X).Underlying().(*types.Pointer)
					if ptrRecv && !ptrX {
						written(n, sel.X, "calls "+sel.Sel.Name+" on")
					}
				}
			}
		case *ast.Field:
			if isClockFunc(info.TypeOf(n.Type)) {
				at(n, "takes the clock as a %s: the core takes times as values (the host passes now in)", types.ExprString(n.Type))
			}
		case *ast.ValueSpec:
			for _, id := range n.Names {
				if v, ok := info.Defs[id].(*types.Var); ok && isClockFunc(v.Type()) {
					at(id, "takes the clock as a %s: the core takes times as values (the host passes now in)", types.TypeString(v.Type(), shortPkg))
				}
			}
		case *ast.UnaryExpr:
			if n.Op == token.AND {
				written(n, n.X, "takes the address of")
			}
		case *ast.SelectorExpr:
			if s := info.Selections[n]; s != nil {
				if fn, ok := s.Obj().(*types.Func); ok && clockMethods[fn.FullName()] {
					at(n, "reaches the clock's machinery: %s (the core takes times and deadlines as values)", fn.FullName())
				}
			}
		case *ast.FuncDecl:
			if n.Body != nil {
				checkMapOrder(n.Body, info, at)
			}
		}
		return true
	})
}

// checkMapOrder flags, in one function's body, a range over a map
// whose body appends to a slice declared outside the loop, unless the
// function sorts that slice after the loop: what such a slice holds
// first would be the runtime's choice, and a seed would not replay it.
func checkMapOrder(body *ast.BlockStmt, info *types.Info, at func(ast.Node, string, ...any)) {
	type sorted struct {
		pos   token.Pos
		slice string
	}
	var sorts []sorted
	ast.Inspect(body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		id, ok := sel.X.(*ast.Ident)
		if !ok {
			return true
		}
		pn, ok := info.Uses[id].(*types.PkgName)
		if !ok {
			return true
		}
		if p := pn.Imported().Path(); p == "sort" || p == "slices" && strings.HasPrefix(sel.Sel.Name, "Sort") {
			arg := call.Args[0]
			// sort.Sort(byName(s)) sorts s
			if conv, ok := arg.(*ast.CallExpr); ok && len(conv.Args) == 1 && info.Types[conv.Fun].IsType() {
				arg = conv.Args[0]
			}
			sorts = append(sorts, sorted{call.Pos(), types.ExprString(arg)})
		}
		return true
	})
	ast.Inspect(body, func(n ast.Node) bool {
		rs, ok := n.(*ast.RangeStmt)
		if !ok || !overMap(info, rs.X) {
			return true
		}
		seen := map[string]bool{}
		// inLoop: o is the range's key or value, or declared in its body.
		inLoop := func(o types.Object) bool { return o != nil && o.Pos() >= rs.Pos() && o.Pos() < rs.End() }
		usesLoop := func(e ast.Node) bool {
			found := false
			ast.Inspect(e, func(n ast.Node) bool {
				if id, ok := n.(*ast.Ident); ok && inLoop(info.Uses[id]) {
					found = true
				}
				return !found
			})
			return found
		}
		once := func(n ast.Node, key, format string, args ...any) {
			if !seen[key] {
				seen[key] = true
				at(n, format, args...)
			}
		}
		m := types.ExprString(rs.X)
		extremum := extrema(rs.Body)
		ast.Inspect(rs.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ReturnStmt:
				for _, r := range n.Results {
					if usesLoop(r) {
						once(n, "return", "returns what the iteration order of map %s picked: range over its sorted keys", m)
						break
					}
				}
			case *ast.AssignStmt:
				if n.Tok == token.DEFINE {
					break
				}
				for i, l := range n.Lhs {
					v := rootVar(info, l)
					if v == nil || inLoop(v) || writesMapKey(info, l) {
						continue
					}
					r := n.Rhs[0] // a, b = f()
					if len(n.Rhs) == len(n.Lhs) {
						r = n.Rhs[i]
					}
					if !usesLoop(r) || orderFree(info, n.Tok, l, r) || extremum[n] || appendsTo(info, l, r) {
						continue
					}
					name := types.ExprString(l)
					once(n, "set "+name, "sets %s in the iteration order of map %s: the last key, or the first to win a tie, is the runtime's choice; range over its sorted keys (integer sums, min and max are fine)", name, m)
				}
			}
			call, ok := n.(*ast.CallExpr)
			if !ok || builtin(info, call.Fun) != "append" || len(call.Args) == 0 {
				return true
			}
			if v := rootVar(info, call.Args[0]); v == nil || v.Pos() >= rs.Body.Pos() && v.Pos() < rs.Body.End() {
				return true // a slice of one iteration's own
			}
			slice := types.ExprString(call.Args[0])
			for _, s := range sorts {
				if s.pos > rs.End() && s.slice == slice {
					return true
				}
			}
			once(rs, "append "+slice, "appends to %s in the iteration order of map %s: range over its sorted keys, or sort %s after the loop", slice, m, slice)
			return true
		})
		return true
	})
}

// appendsTo reports whether r appends to l: "l = append(l, ...)", which
// the rule on appends judges.
func appendsTo(info *types.Info, l, r ast.Expr) bool {
	call, ok := ast.Unparen(r).(*ast.CallExpr)
	return ok && builtin(info, call.Fun) == "append" && len(call.Args) > 0 && types.ExprString(call.Args[0]) == types.ExprString(l)
}

// extrema finds, under body, the assignments "x = v" guarded by an if
// whose condition compares v with x (v < x, x > v, v.Before(x), ...,
// alone or as one of an && chain): x ends as the least or greatest v
// whatever the order, a value and not a pick among equals.
func extrema(body ast.Node) map[*ast.AssignStmt]bool {
	out := map[*ast.AssignStmt]bool{}
	ast.Inspect(body, func(n ast.Node) bool {
		is, ok := n.(*ast.IfStmt)
		if !ok {
			return true
		}
		pairs := map[[2]string]bool{}
		var conjuncts func(e ast.Expr)
		conjuncts = func(e ast.Expr) {
			switch x := ast.Unparen(e).(type) {
			case *ast.BinaryExpr:
				switch x.Op {
				case token.LAND:
					conjuncts(x.X)
					conjuncts(x.Y)
				case token.LSS, token.GTR, token.LEQ, token.GEQ:
					a, b := types.ExprString(x.X), types.ExprString(x.Y)
					pairs[[2]string{a, b}], pairs[[2]string{b, a}] = true, true
				}
			case *ast.CallExpr:
				if sel, ok := x.Fun.(*ast.SelectorExpr); ok && len(x.Args) == 1 && (sel.Sel.Name == "Before" || sel.Sel.Name == "After") {
					a, b := types.ExprString(sel.X), types.ExprString(x.Args[0])
					pairs[[2]string{a, b}], pairs[[2]string{b, a}] = true, true
				}
			}
		}
		conjuncts(is.Cond)
		for _, st := range is.Body.List {
			if as, ok := st.(*ast.AssignStmt); ok && as.Tok == token.ASSIGN && len(as.Lhs) == 1 && len(as.Rhs) == 1 &&
				pairs[[2]string{types.ExprString(as.Lhs[0]), types.ExprString(as.Rhs[0])}] {
				out[as] = true
			}
		}
		return true
	})
	return out
}

// writesMapKey reports whether l is an element of a map: a map written
// by key ends the same whatever order its keys were written in.
func writesMapKey(info *types.Info, l ast.Expr) bool {
	ix, ok := ast.Unparen(l).(*ast.IndexExpr)
	if !ok {
		return false
	}
	_, isMap := info.TypeOf(ix.X).Underlying().(*types.Map)
	return isMap
}

// orderFree reports whether "l tok r" ends the same whatever order a
// loop runs it in: an integer added, subtracted, multiplied or combined
// bitwise (not a float, whose rounding depends on the order, nor a
// string), or l = min(l, ...) or max(l, ...).
func orderFree(info *types.Info, tok token.Token, l, r ast.Expr) bool {
	switch tok {
	case token.ADD_ASSIGN, token.SUB_ASSIGN, token.MUL_ASSIGN, token.OR_ASSIGN, token.AND_ASSIGN, token.XOR_ASSIGN:
		b, ok := info.TypeOf(l).Underlying().(*types.Basic)
		return ok && b.Info()&types.IsInteger != 0
	case token.ASSIGN:
		call, ok := ast.Unparen(r).(*ast.CallExpr)
		if !ok {
			return false
		}
		if b := builtin(info, call.Fun); b != "min" && b != "max" {
			return false
		}
		for _, a := range call.Args {
			if types.ExprString(a) == types.ExprString(l) {
				return true
			}
		}
	}
	return false
}

// overMap reports whether a range over e visits a map in its order: a
// map, or maps.Keys, Values or All of one.
func overMap(info *types.Info, e ast.Expr) bool {
	if t := info.TypeOf(e); t != nil {
		if _, ok := t.Underlying().(*types.Map); ok {
			return true
		}
	}
	if call, ok := e.(*ast.CallExpr); ok {
		if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
			if fn, ok := info.Uses[sel.Sel].(*types.Func); ok && fn.Pkg() != nil && fn.Pkg().Path() == "maps" {
				return fn.Name() == "Keys" || fn.Name() == "Values" || fn.Name() == "All"
			}
		}
	}
	return false
}

// builtin names the built-in function fun is, "" if none.
func builtin(info *types.Info, fun ast.Expr) string {
	if id, ok := ast.Unparen(fun).(*ast.Ident); ok {
		if b, ok := info.Uses[id].(*types.Builtin); ok {
			return b.Name()
		}
	}
	return ""
}

// rootVar is the variable an expression writes through: e's root,
// through indexes, slices, fields, dereferences and parentheses.
func rootVar(info *types.Info, e ast.Expr) *types.Var {
	for {
		switch x := e.(type) {
		case *ast.ParenExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.SliceExpr:
			e = x.X
		case *ast.StarExpr:
			e = x.X
		case *ast.SelectorExpr:
			if s := info.Selections[x]; s != nil {
				if s.Kind() != types.FieldVal {
					return nil
				}
				e = x.X
				continue
			}
			v, _ := info.Uses[x.Sel].(*types.Var) // a qualified name
			return v
		case *ast.Ident:
			v, _ := info.Uses[x].(*types.Var)
			return v
		default:
			return nil
		}
	}
}

// globalVar is v if it is declared at a package's top level, else nil.
func globalVar(v *types.Var) *types.Var {
	if v != nil && !v.IsField() && v.Pkg() != nil && v.Parent() == v.Pkg().Scope() {
		return v
	}
	return nil
}

// shortPkg writes a type's package by its name alone.
func shortPkg(p *types.Package) string { return p.Name() }

// stateKind names what makes a package-level variable of type t state
// by its type alone, "" if nothing does: a pointer (but to a compiled
// regexp, which never changes once built), a function or a channel.
func stateKind(t types.Type) string {
	switch u := t.Underlying().(type) {
	case *types.Pointer:
		if n, ok := u.Elem().(*types.Named); ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "regexp" && n.Obj().Name() == "Regexp" {
			return ""
		}
		return "a pointer"
	case *types.Signature:
		return "a function"
	case *types.Chan:
		return "a channel"
	}
	return ""
}

// clockCall names the clock a call reads, "" if it reads none: a
// variable, field or parameter of type func() time.Time called, or a
// method Now() time.Time (any name, no arguments) called through an
// interface. A declared function or a concrete type's method returning
// a time is a value, not a clock.
func clockCall(info *types.Info, fun ast.Expr) string {
	fun = ast.Unparen(fun)
	var obj types.Object
	switch x := fun.(type) {
	case *ast.Ident:
		obj = info.Uses[x]
	case *ast.SelectorExpr:
		if s := info.Selections[x]; s != nil {
			if s.Kind() == types.MethodVal && types.IsInterface(s.Recv()) && isClockFunc(s.Type()) {
				return types.ExprString(fun)
			}
			obj = s.Obj()
		} else {
			obj = info.Uses[x.Sel]
		}
	default:
		if isClockFunc(info.TypeOf(fun)) {
			return types.ExprString(fun)
		}
		return ""
	}
	if v, ok := obj.(*types.Var); ok && isClockFunc(v.Type()) {
		return types.ExprString(fun)
	}
	return ""
}

// isClockFunc reports whether t is a func() time.Time: a clock handed in.
func isClockFunc(t types.Type) bool {
	if t == nil {
		return false
	}
	sig, ok := t.Underlying().(*types.Signature)
	if !ok || sig.Params().Len() != 0 || sig.Results().Len() != 1 {
		return false
	}
	n, ok := sig.Results().At(0).Type().(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "time" && n.Obj().Name() == "Time"
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
