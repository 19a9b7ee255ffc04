package config

import (
	"bytes"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode"
)

// Every pointer into a section of the docs leads to a heading that
// exists: a Markdown link to another file's section or to one of its
// own, and a plain path-and-anchor written anywhere else (a code
// comment, an error message, a YAML comment, the dashboard's script),
// resolved from the file's directory or the repository's top; anchors
// follow GitHub's rule for a heading's id. A section of the README named
// in words, `README, "Heading"`, must be a README heading too. The test
// reads the repository's tracked files (git ls-files; a walk of the tree
// without git) and writes nothing.
func TestDocAnchors(t *testing.T) {
	files, how := trackedFiles(t)
	headings := map[string]map[string]bool{} // by clean path from root
	anchorsOf := func(rel string) (map[string]bool, error) {
		if h, ok := headings[rel]; ok {
			return h, nil
		}
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return nil, err
		}
		h := markdownAnchors(string(data))
		headings[rel] = h
		return h, nil
	}
	// resolve finds the Markdown file a reference in file names.
	resolve := func(file, target string) (string, bool) {
		var tries []string
		if strings.HasPrefix(target, "/") {
			tries = []string{strings.TrimPrefix(target, "/")}
		} else {
			tries = []string{filepath.ToSlash(filepath.Join(filepath.Dir(file), target)), target, "docs/" + target}
		}
		for _, c := range tries {
			c = filepath.ToSlash(filepath.Clean(c))
			if st, err := os.Stat(filepath.Join(root, c)); err == nil && !st.IsDir() {
				return c, true
			}
		}
		return "", false
	}
	var problems []string
	checked := 0
	for _, file := range files {
		if skipForAnchors(file) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
		if err != nil || len(data) > 4<<20 || bytes.IndexByte(data, 0) >= 0 {
			continue // gone from the tree, large, or binary
		}
		text := string(data)
		isMarkdown := strings.HasSuffix(file, ".md")
		if isMarkdown {
			text = withoutFences(text)
		}
		for i, line := range strings.Split(text, "\n") {
			where := fmt.Sprintf("%s:%d", file, i+1)
			refs := anchorRefs(line)
			if isMarkdown {
				for _, m := range ownAnchorLink.FindAllStringSubmatch(line, -1) {
					refs = append(refs, anchorRef{path: filepath.Base(file), anchor: m[1], own: true})
				}
			}
			for _, r := range refs {
				checked++
				target := file
				if !r.own {
					var ok bool
					if target, ok = resolve(file, r.path); !ok {
						problems = append(problems, fmt.Sprintf("%s: %s#%s: no such file", where, r.path, r.anchor))
						continue
					}
				}
				anchor, err := url.PathUnescape(r.anchor)
				if err != nil {
					anchor = r.anchor
				}
				h, err := anchorsOf(target)
				if err != nil {
					problems = append(problems, fmt.Sprintf("%s: %s: %v", where, target, err))
					continue
				}
				if !h[strings.ToLower(anchor)] {
					problems = append(problems, fmt.Sprintf("%s: %s#%s: %s has no heading with that anchor%s", where, r.path, r.anchor, target, nearest(h, anchor)))
				}
			}
		}
		// A section named in words may run over a line break, inside a
		// comment: read the text as one line, comment markers dropped.
		joined, starts := joinComments(text, isMarkdown)
		for _, m := range readmeSection.FindAllStringSubmatchIndex(joined, -1) {
			checked++
			var name string
			if m[2] >= 0 {
				name = joined[m[2]:m[3]]
			} else {
				name = joined[m[4]:m[5]]
			}
			h, err := anchorsOf("README.md")
			if err != nil {
				t.Fatal(err)
			}
			if !h[githubSlug(name)] {
				line := sort.SearchInts(starts, m[0]+1)
				problems = append(problems, fmt.Sprintf("%s:%d: README section %q: README.md has no such heading; point to the page that has it now, as a path and its #anchor (e.g. docs/FLEET.md#running-a-fleet)", file, line, name))
			}
		}
	}
	if checked == 0 {
		t.Fatalf("no section references found in %d files (%s): the test reads nothing", len(files), how)
	}
	sort.Strings(problems)
	for _, p := range problems {
		t.Error(p)
	}
	t.Logf("checked %d section references in %d files (%s)", checked, len(files), how)
}

type anchorRef struct {
	path, anchor string
	own          bool // a Markdown file's link to its own section
}

var (
	// mdRefToken is a word that contains a Markdown file name and an
	// anchor: a link's target, a path in a comment or a message.
	mdRefToken = regexp.MustCompile("[^\\s\"'`(<\\[]*\\.md#[^\\s)\\]\"'`,;<>|*]+")
	// ownAnchorLink is a Markdown link to a section of the same file.
	ownAnchorLink = regexp.MustCompile(`\]\(#([^)\s]+)\)`)
	// readmeSection is a README section named in words, as
	// README, "Heading", README.md, "Heading" or "Heading" in the README.
	readmeSection = regexp.MustCompile(`\bREADME(?:\.md)?,? \\?"([^"\\]{2,80})\\?"|\\?"([^"\\]{2,80})\\?" in the README\b`)
)

// anchorRefs finds the file#anchor references in a line, leaving out
// web addresses (another site's pages).
func anchorRefs(line string) []anchorRef {
	var out []anchorRef
	for _, tok := range mdRefToken.FindAllString(line, -1) {
		if strings.Contains(tok, "://") || strings.HasPrefix(tok, "www.") || strings.Contains(tok, "${") {
			continue
		}
		// Markdown link text runs up to "](": keep the target.
		if i := strings.LastIndex(tok, "]("); i >= 0 {
			tok = tok[i+2:]
		}
		path, anchor, _ := strings.Cut(tok, "#")
		anchor = strings.TrimRight(anchor, ".:!?")
		if path == "" || anchor == "" || !strings.HasSuffix(path, ".md") {
			continue
		}
		out = append(out, anchorRef{path: path, anchor: anchor})
	}
	return out
}

// skipForAnchors leaves out third-party text (the vendored chart
// library) and this test's own source, whose patterns describe
// references without being any.
func skipForAnchors(file string) bool {
	return strings.Contains(file, "/vendor/") || strings.HasPrefix(file, "vendor/") ||
		strings.Contains(file, "node_modules/") || file == "internal/config/anchors_test.go"
}

// trackedFiles lists the repository's tracked files, relative to root
// with forward slashes, and says how it found them.
func trackedFiles(t *testing.T) ([]string, string) {
	t.Helper()
	if out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output(); err == nil && len(out) > 0 {
		var files []string
		for _, f := range strings.Split(string(out), "\x00") {
			if f != "" {
				files = append(files, f)
			}
		}
		return files, "git ls-files"
	}
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && p != root && (strings.HasPrefix(name, ".") || name == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files, "a walk of the tree: git ls-files did not answer"
}

// joinComments joins text's lines with single spaces, each line's
// indentation and comment marker (#, //, *) dropped unless the text is
// Markdown, and returns where each line starts in the result.
func joinComments(text string, markdown bool) (string, []int) {
	var b strings.Builder
	var starts []int
	for _, l := range strings.Split(text, "\n") {
		starts = append(starts, b.Len())
		l = strings.TrimSpace(l)
		if !markdown {
			for _, mark := range []string{"//", "#", "*"} {
				if rest, ok := strings.CutPrefix(l, mark); ok {
					l = strings.TrimSpace(rest)
					break
				}
			}
		}
		b.WriteString(l)
		b.WriteByte(' ')
	}
	return b.String(), starts
}

// withoutFences blanks fenced code blocks, keeping the line count:
// a heading-like line in a shell block is no heading, and a path in a
// block quoting a program's output is not a pointer the docs make.
func withoutFences(text string) string {
	lines := strings.Split(text, "\n")
	fence := ""
	for i, l := range lines {
		trimmed := strings.TrimLeft(l, " ")
		switch {
		case fence == "" && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")):
			fence = trimmed[:3]
			lines[i] = ""
		case fence != "":
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			lines[i] = ""
		}
	}
	return strings.Join(lines, "\n")
}

var (
	atxHeading = regexp.MustCompile(`^ {0,3}#{1,6}[ \t]+(.*?)[ \t]*#*[ \t]*$`)
	htmlAnchor = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
	mdLinkText = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	htmlTag    = regexp.MustCompile(`<[^>]+>`)
)

// markdownAnchors is the set of anchors a Markdown text's headings get
// on GitHub, and those its HTML anchors name.
func markdownAnchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, line := range strings.Split(withoutFences(text), "\n") {
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			out[strings.ToLower(m[1])] = true
		}
		m := atxHeading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		slug := githubSlug(m[1])
		if n := seen[slug]; n > 0 {
			out[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

// githubSlug is the anchor GitHub gives a heading: its text as shown
// (link targets and HTML tags dropped), lower-cased, every character
// but letters, digits, marks, connector punctuation (_), spaces and
// hyphens removed, and each space made a hyphen.
func githubSlug(heading string) string {
	text := mdLinkText.ReplaceAllString(heading, "$1")
	text = htmlTag.ReplaceAllString(text, "")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) || unicode.In(r, unicode.Pc):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// nearest suggests the heading anchors that share the wanted one's
// first word, for the message.
func nearest(anchors map[string]bool, want string) string {
	first, _, _ := strings.Cut(strings.ToLower(want), "-")
	var near []string
	for a := range anchors {
		if strings.HasPrefix(a, first) {
			near = append(near, a)
		}
	}
	if len(near) == 0 || len(near) > 8 {
		return ""
	}
	sort.Strings(near)
	return "; did you mean " + strings.Join(near, ", ") + "?"
}

// TestGitHubSlug pins the anchor rule on headings of the kinds the docs
// have.
func TestGitHubSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"Running a fleet": "running-a-fleet",
		"Load testing: `sluice load` and the fake provider":              "load-testing-sluice-load-and-the-fake-provider",
		"Bodies of many small pieces, whatever their shape (2026-12-07)": "bodies-of-many-small-pieces-whatever-their-shape-2026-12-07",
		"Choosing fleet.timeout":                                         "choosing-fleettimeout",
		"`admission.max_in_flight`":                                      "admissionmax_in_flight",
		"Agent frameworks: the AI SDK and LangChain":                     "agent-frameworks-the-ai-sdk-and-langchain",
		"See [the docs](docs/X.md) now":                                  "see-the-docs-now",
		"Seed 000 → 002":                                                 "seed-000--002",
	} {
		if got := githubSlug(heading); got != want {
			t.Errorf("githubSlug(%q) = %q, want %q", heading, got, want)
		}
	}
	got := markdownAnchors("# A\n## A\n```\n# not a heading\n```\n## A\n")
	for _, want := range []string{"a", "a-1", "a-2"} {
		if !got[want] {
			t.Errorf("repeated headings: anchors %v lack %q", got, want)
		}
	}
	if got["not-a-heading"] {
		t.Errorf("a line in a code block was taken for a heading")
	}
}
