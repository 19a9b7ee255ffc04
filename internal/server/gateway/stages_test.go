package gateway

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// TestStageTable prints the request side's stages and holds
// docs/ARCHITECTURE.md's table of them to the code: the order, what
// each reads and writes, and what its end releases.
func TestStageTable(t *testing.T) {
	want := stageTable()
	t.Logf("the request stages:\n%s", want)
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- request stages: begin -->\n", "<!-- request stages: end -->"
	i, j := strings.Index(string(doc), begin), strings.Index(string(doc), end)
	if i < 0 || j < i {
		t.Fatalf("docs/ARCHITECTURE.md has no %q ... %q markers", strings.TrimSpace(begin), end)
	}
	if got := string(doc[i+len(begin) : j]); got != want {
		t.Fatalf("docs/ARCHITECTURE.md's table of request stages differs from requestStages (stages.go); put this between its markers:\n%s", want)
	}
}

// stageTable is requestStages as a Markdown table.
func stageTable() string {
	var b strings.Builder
	b.WriteString("| # | stage | method | reads | writes | its end releases |\n|---|---|---|---|---|---|\n")
	for i, s := range requestStages {
		end := "-"
		if s.end != nil {
			end = funcName(s.end)
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s |\n", i+1, s.name, funcName(s.run), s.reads, s.writes, end)
	}
	return b.String()
}

// funcName is a method expression's method name and file, in Markdown.
func funcName(f any) string {
	fn := runtime.FuncForPC(reflect.ValueOf(f).Pointer())
	name := fn.Name()
	name = strings.TrimSuffix(name[strings.LastIndex(name, ".")+1:], "-fm")
	file, _ := fn.FileLine(fn.Entry())
	return fmt.Sprintf("`%s` (`%s`)", name, filepath.Base(file))
}

// TestStagesEndOnEveryPath: the stages that ran release what they took,
// the last first, when a later stage stops the chain and when one
// panics; a stage that did not run is not ended.
func TestStagesEndOnEveryPath(t *testing.T) {
	var log []string
	mk := func(name string, then func() bool) stage {
		return stage{name: name,
			run: func(*hop) bool { log = append(log, "run "+name); return then() },
			end: func(*hop) { log = append(log, "end "+name) }}
	}
	goOn := func() bool { return true }
	stop := func() bool { return false }
	boom := func() bool { panic("boom") }
	cases := []struct {
		name   string
		stages []stage
		want   string
		panics bool
	}{
		{"all run", []stage{mk("a", goOn), mk("b", goOn)}, "run a,run b,end b,end a", false},
		{"one refuses", []stage{mk("a", goOn), mk("b", stop), mk("c", goOn)}, "run a,run b,end b,end a", false},
		{"one panics", []stage{mk("a", goOn), mk("b", boom), mk("c", goOn)}, "run a,run b,end b,end a", true},
		{"an end of nothing", []stage{{name: "x", run: func(*hop) bool { log = append(log, "run x"); return true }}, mk("a", stop)}, "run x,run a,end a", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			log = nil
			func() {
				defer func() {
					if v := recover(); (v != nil) != c.panics {
						t.Errorf("panic %v, want a panic: %v", v, c.panics)
					}
				}()
				runStages(&hop{}, c.stages)
			}()
			if got := strings.Join(log, ","); got != c.want {
				t.Errorf("got %s, want %s", got, c.want)
			}
		})
	}
}

// TestStageTableShape: every stage runs something, names are unique,
// and the chain ends by forwarding.
func TestStageTableShape(t *testing.T) {
	names := map[string]bool{}
	for i, s := range requestStages {
		if s.run == nil || s.name == "" || s.reads == "" || s.writes == "" {
			t.Errorf("stage %d (%q) lacks a run, a name, or what it reads and writes", i, s.name)
		}
		if names[s.name] {
			t.Errorf("two stages are named %s", s.name)
		}
		names[s.name] = true
	}
	if last := requestStages[len(requestStages)-1].name; last != "forward" {
		t.Errorf("the last stage is %s, want forward", last)
	}
}
