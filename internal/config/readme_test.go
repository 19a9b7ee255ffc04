package config

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The docs are checked as code: what README.md and docs/*.md show a
// reader to paste or run must still work. None of these tests writes a
// file; each names the command that would fix what it finds.

// root is the repository's top, seen from this package's directory.
const root = "../.."

// docFiles are the Markdown files a reader is sent to: the README and
// every guide under docs/.
func docFiles(t *testing.T) map[string]string {
	t.Helper()
	names := []string{"README.md"}
	guides, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range guides {
		names = append(names, filepath.ToSlash(strings.TrimPrefix(g, root+string(filepath.Separator))))
	}
	docs := make(map[string]string, len(names))
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(root, n))
		if err != nil {
			t.Fatal(err)
		}
		docs[n] = string(data)
	}
	return docs
}

// Every configuration the docs show as a whole file (a yaml block that
// opens with "# sluice.yaml") is one sluice serve --check accepts.
func TestReadmeConfigs(t *testing.T) {
	blocks := 0
	for name, text := range docFiles(t) {
		n := 0
		for _, part := range strings.Split(text, "```yaml\n")[1:] {
			block, _, ok := strings.Cut(part, "```")
			if !ok || !strings.HasPrefix(block, "# sluice.yaml") {
				continue
			}
			n++
			c, err := Parse([]byte(block), name)
			if err == nil {
				err = c.Validate()
			}
			if err != nil {
				t.Errorf("%s: config %d does not validate: %v\n%s", name, n, err, block)
			}
		}
		blocks += n
	}
	if blocks == 0 {
		t.Fatal(`no "# sluice.yaml" config blocks found in README.md or docs/*.md`)
	}
}

var (
	// subcommandCase finds the names cli.Main dispatches on.
	subcommandCase = regexp.MustCompile(`case ((?:"[a-z-]+",? ?)+):`)
	quoted         = regexp.MustCompile(`"([a-z-]+)"`)
	// sluiceCommand is a command line that runs sluice: "sluice WORD",
	// "./sluice WORD", "go run ./cmd/sluice WORD", after an optional
	// prompt, or after && or & in a chain.
	sluiceCommand = regexp.MustCompile(`(?m)(?:^|&&?)\s*(?:\$\s+)?(?:go run \./cmd/sluice|\S*/sluice|sluice)\s+([a-z][a-z-]*)`)
	// goCommand is a go subcommand that takes package paths.
	goCommand = regexp.MustCompile(`\bgo\s+(?:test|run|build|vet|doc|list)\b([^\n;&|]*)`)
	// scriptPath and scenarioPath are files a command names.
	scriptPath   = regexp.MustCompile(`\bscripts/[A-Za-z0-9_.-]+\.sh\b`)
	scenarioPath = regexp.MustCompile(`\bscenarios/[A-Za-z0-9_./-]+\.yaml\b`)
	inlineCode   = regexp.MustCompile("`([^`]+)`")
)

// subcommands reads the names cli.Main dispatches on from its source
// (package cli imports this one, so it cannot be imported here).
func subcommands(t *testing.T) map[string]bool {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(root, "internal", "cli", "cli.go"))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, m := range subcommandCase.FindAllStringSubmatch(string(src), -1) {
		for _, q := range quoted.FindAllStringSubmatch(m[1], -1) {
			names[q[1]] = true
		}
	}
	if !names["serve"] || !names["sim"] {
		t.Fatalf("found no subcommands in internal/cli/cli.go (got %v); has Main's switch changed shape?", names)
	}
	return names
}

// codeOf returns the text of a Markdown file's code: its fenced blocks
// and inline spans (whose line breaks become spaces), leaving out the
// blocks another program generates (between bench:results markers, the
// figures cmd/sluice-bench writes).
func codeOf(text string) []string {
	if i := strings.Index(text, "<!-- bench:results:begin"); i >= 0 {
		if j := strings.Index(text[i:], "<!-- bench:results:end -->"); j >= 0 {
			text = text[:i] + text[i+j:]
		}
	}
	var code []string
	var prose strings.Builder
	in := false
	for _, line := range strings.SplitAfter(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			in = !in
			continue
		}
		if in {
			code = append(code, line)
		} else {
			prose.WriteString(line)
		}
	}
	for _, m := range inlineCode.FindAllStringSubmatch(prose.String(), -1) {
		code = append(code, strings.Join(strings.Fields(m[1]), " "))
	}
	return code
}

// Every command the docs quote names something that exists: a sluice
// subcommand, a package directory for go test/run/build/vet/doc/list,
// a script under scripts/, a scenario file.
func TestDocCommands(t *testing.T) {
	subs := subcommands(t)
	checked := 0
	for name, text := range docFiles(t) {
		seen := map[string]bool{}
		report := func(format string, args ...any) {
			msg := name + ": " + strings.TrimSpace(fmt.Sprintf(format, args...))
			if !seen[msg] {
				seen[msg] = true
				t.Error(msg)
			}
		}
		for _, c := range codeOf(text) {
			for _, m := range sluiceCommand.FindAllStringSubmatch(c, -1) {
				checked++
				if !subs[m[1]] {
					report("%q: sluice has no subcommand %q (internal/cli/cli.go)", strings.TrimSpace(m[0]), m[1])
				}
			}
			for _, m := range goCommand.FindAllStringSubmatch(c, -1) {
				for _, arg := range strings.Fields(m[1]) {
					if !strings.HasPrefix(arg, "./") {
						continue
					}
					dir := strings.TrimRight(strings.TrimSuffix(strings.TrimRight(arg, ")`'\","), "/..."), "/")
					if dir == "." || strings.ToLower(dir) != dir {
						continue // ./... or a placeholder such as ./PKG
					}
					checked++
					if !isPackageDir(filepath.Join(root, dir)) {
						report("%q names %s, which is not a package directory", strings.TrimSpace(m[0]), dir)
					}
				}
			}
			for _, re := range []*regexp.Regexp{scriptPath, scenarioPath} {
				for _, p := range re.FindAllString(c, -1) {
					checked++
					if _, err := os.Stat(filepath.Join(root, p)); err != nil {
						report("%s does not exist", p)
					}
				}
			}
		}
	}
	t.Logf("checked %d subcommands, package paths, scripts and scenario files", checked)
}

func isPackageDir(dir string) bool {
	gos, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	return len(gos) > 0
}

// markdownLink is a relative link to another Markdown file or a picture.
var markdownLink = regexp.MustCompile(`\]\(([A-Za-z0-9_./-]+\.(?:md|png|svg))(?:#[^)]*)?\)`)

// Every relative link between the docs leads to a file.
func TestDocLinks(t *testing.T) {
	for name, text := range docFiles(t) {
		for _, m := range markdownLink.FindAllStringSubmatch(text, -1) {
			target := filepath.Join(root, filepath.Dir(name), m[1])
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s: link to %s: no such file", name, m[1])
			}
		}
	}
}

// docs/ARCHITECTURE.md's drawing of the packages and their imports is
// what go list says now. The test only reads; scripts/archmap.sh
// --write redraws it.
func TestArchitectureDrawing(t *testing.T) {
	for _, tool := range []string{"bash", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not on PATH: cannot run scripts/archmap.sh", tool)
		}
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- archmap:begin -->\n", "<!-- archmap:end -->"
	_, rest, ok1 := strings.Cut(string(doc), begin)
	committed, _, ok2 := strings.Cut(rest, end)
	if !ok1 || !ok2 {
		t.Fatalf("docs/ARCHITECTURE.md has no %q ... %q markers", strings.TrimSpace(begin), end)
	}
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "archmap.sh"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	now, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/archmap.sh: %v\n%s", err, stderr.String())
	}
	if committed == string(now) {
		return
	}
	was, is := strings.Split(committed, "\n"), strings.Split(string(now), "\n")
	for i := 0; i < len(was) || i < len(is); i++ {
		var a, b string
		if i < len(was) {
			a = was[i]
		}
		if i < len(is) {
			b = is[i]
		}
		if a != b {
			t.Fatalf("docs/ARCHITECTURE.md's import drawing differs from what go list says now;\n"+
				"run scripts/archmap.sh --write (and review the paragraph after the drawing).\n"+
				"first difference, drawing line %d:\n  committed: %s\n  go list:   %s", i+1, a, b)
		}
	}
}
