package deploy_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// noticeFile is a dependency's NOTICE file name: NOTICE, NOTICE.txt or
// NOTICE.md, in any case.
var noticeFile = regexp.MustCompile(`(?i)^notice(\.txt|\.md)?$`)

// The NOTICE file carries the NOTICE text of every module compiled into
// the binaries that has one (the Apache License's section 4(d)), and no
// other: the modules are those go list -deps finds for ./cmd/..., read
// from the module cache without the network. On a difference the test
// prints the block NOTICE should end with; it never writes the file.
func TestNoticeCarriesDependencyNotices(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not on PATH: cannot list the modules compiled into the binaries")
	}
	cmd := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{if not .Main}}{{.Path}}\t{{.Dir}}{{end}}{{end}}", "./cmd/...")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=readonly")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		why := fmt.Sprintf("go list -deps ./cmd/... without the network: %v\n%s", err, stderr.String())
		if os.Getenv("CI") == "" {
			t.Skipf("the module cache lacks what the binaries need, so their NOTICE files cannot be read (go mod download fills it): %s", why)
		}
		t.Fatal(why)
	}
	type notice struct{ module, file, text string }
	var want []notice
	seen := map[string]bool{}
	var absent []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		module, dir, _ := strings.Cut(line, "\t")
		if module == "" || seen[module] {
			continue
		}
		seen[module] = true
		if dir == "" {
			absent = append(absent, module)
			continue
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatalf("%s: %v", module, err)
		}
		for _, e := range entries {
			if e.IsDir() || !noticeFile.MatchString(e.Name()) {
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, notice{module, e.Name(), normalizeNotice(string(b))})
		}
	}
	if len(absent) > 0 {
		msg := fmt.Sprintf("the module cache has no directory for %s (go mod download fills it)", strings.Join(absent, ", "))
		if os.Getenv("CI") == "" {
			t.Skipf("%s: their NOTICE files cannot be read", msg)
		}
		t.Fatal(msg)
	}
	sort.Slice(want, func(i, j int) bool {
		if want[i].module != want[j].module {
			return want[i].module < want[j].module
		}
		return want[i].file < want[j].file
	})
	var block strings.Builder
	for i, n := range want {
		if i > 0 {
			block.WriteString("\n\n")
		}
		fmt.Fprintf(&block, "== %s (%s) ==\n\n%s", n.module, n.file, n.text)
	}

	data, err := os.ReadFile(filepath.Join("..", "NOTICE"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	var have string
	if i := strings.Index(text, "\n== "); i >= 0 {
		have = normalizeNotice(text[i+1:])
	}
	if have != block.String() {
		var modules []string
		for _, n := range want {
			modules = append(modules, n.module)
		}
		t.Errorf("NOTICE does not carry the NOTICE texts of the modules compiled into the binaries (%s).\n"+
			"From its first \"== \" line to its end, NOTICE should read:\n\n%s\n", strings.Join(modules, ", "), block.String())
	}
	t.Logf("%d modules compiled in, %d NOTICE files carried", len(seen), len(want))
}

// normalizeNotice drops trailing spaces on each line and blank lines at
// both ends.
func normalizeNotice(s string) string {
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	return strings.Trim(strings.Join(lines, "\n"), "\n")
}

// Both images ship the licence and the notices: the final stage copies
// LICENSE and NOTICE from the build context (the repository's root for
// Dockerfile; for Dockerfile.prebuilt, the directory build-local.sh
// stages, which must copy them there), and .dockerignore keeps neither
// out.
func TestImagesShipLicenseAndNotice(t *testing.T) {
	const doc = "/usr/share/doc/sluice/"
	for _, file := range []string{"Dockerfile", "Dockerfile.prebuilt"} {
		_, stage := finalStage(t, file)
		shipped := map[string]bool{}
		for _, in := range stage {
			if in.op != "COPY" {
				continue
			}
			f := strings.Fields(in.args)
			if len(f) < 2 || strings.HasPrefix(f[0], "--from") {
				continue
			}
			dest := f[len(f)-1]
			for _, src := range f[:len(f)-1] {
				if strings.HasPrefix(src, "--") {
					continue
				}
				switch {
				case strings.HasSuffix(dest, "/"):
					shipped[dest+filepath.Base(src)] = true
				case len(f) == 2:
					shipped[dest] = true
				}
			}
		}
		for _, name := range []string{"LICENSE", "NOTICE"} {
			if !shipped[doc+name] {
				t.Errorf("%s: the final stage copies no %s to %s from the build context (want e.g. COPY LICENSE NOTICE %s)", file, name, doc+name, doc)
			}
		}
	}
	for _, name := range []string{"LICENSE", "NOTICE"} {
		if _, err := os.Stat(filepath.Join("..", name)); err != nil {
			t.Errorf("the repository has no %s for Dockerfile to copy: %v", name, err)
		}
	}
	script, err := os.ReadFile("build-local.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^cp LICENSE NOTICE "\$ctx/"$`).Match(script) {
		t.Errorf("build-local.sh does not stage LICENSE and NOTICE for Dockerfile.prebuilt (want a line: cp LICENSE NOTICE \"$ctx/\")")
	}
	ignore, err := os.ReadFile("Dockerfile.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(ignore), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "!") {
			continue
		}
		for _, name := range []string{"LICENSE", "NOTICE"} {
			if ok, _ := filepath.Match(l, name); ok {
				t.Errorf("Dockerfile.dockerignore's %q keeps %s out of the build context", l, name)
			}
		}
	}
}
