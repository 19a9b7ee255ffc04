package config

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode"
)

// Error is one problem in a config file. It carries enough to put an
// editor's cursor on the spot and to tell the operator what to write
// instead, because a gateway that refuses to start is only as helpful as
// its error message.
//
// Parse and Validate return a single *Error, or several joined with
// errors.Join (one per line); use errors.As to get at the first.
type Error struct {
	File string // as given to Load or Parse; empty if unknown
	Line int    // 1-based; 0 means unknown
	// Field is the YAML path, e.g. providers[1].timeout. For an unknown key
	// it is the valid field the key most likely misspells, or the enclosing
	// mapping when nothing is close. Empty for whole-file problems.
	Field string
	Msg   string // what is wrong, then how to fix it
}

// Error formats as "file:line: field: msg", leaving out the parts that are
// unknown.
func (e *Error) Error() string {
	var b strings.Builder
	switch {
	case e.File != "" && e.Line > 0:
		fmt.Fprintf(&b, "%s:%d: ", e.File, e.Line)
	case e.File != "":
		b.WriteString(e.File + ": ")
	case e.Line > 0:
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// maxErrors caps how many errors are reported: past that, the file is
// probably not a Sluice config at all and more lines would only bury the
// first ones.
const maxErrors = 50

// joinErrors puts errs in file order and joins them. Errors without a line
// (missing top-level sections) go last, since they are about the file as a
// whole.
func joinErrors(file string, errs []*Error) error {
	if len(errs) == 0 {
		return nil
	}
	key := func(e *Error) int {
		if e.Line <= 0 {
			return math.MaxInt
		}
		return e.Line
	}
	sort.SliceStable(errs, func(i, j int) bool { return key(errs[i]) < key(errs[j]) })
	if len(errs) == 1 {
		return errs[0]
	}
	var list []error
	for i, e := range errs {
		if i == maxErrors {
			more := "1 more error"
			if n := len(errs) - maxErrors; n > 1 {
				more = fmt.Sprintf("%d more errors", n)
			}
			list = append(list, &Error{File: file, Msg: more + " not shown; fix the ones above and run again"})
			break
		}
		list = append(list, e)
	}
	return errors.Join(list...)
}

// source remembers, for one parsed file, the line of every value that was
// present. Validation runs on the decoded structs and needs it to point at
// lines; applyDefaults needs it because an explicit zero (max_depth: 0 for
// "no queue") must not be replaced by the default.
type source struct {
	file  string
	lines map[string]int  // field path -> line, for each non-null value
	bad   map[string]bool // field paths that failed to decode
}

func newSource(file string) *source {
	return &source{file: file, lines: map[string]int{}, bad: map[string]bool{}}
}

func (s *source) fileName() string {
	if s == nil {
		return ""
	}
	return s.file
}

// has reports whether the file gave path a (non-null) value.
func (s *source) has(path string) bool {
	if s == nil {
		return false
	}
	_, ok := s.lines[path]
	return ok
}

// line finds the line of path, or of its nearest ancestor present in the
// file, so that "base_url is missing" points at the provider that lacks it.
func (s *source) line(path string) int {
	if s == nil {
		return 0
	}
	for {
		if l, ok := s.lines[path]; ok {
			return l
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			return 0
		}
		path = path[:i]
	}
}

// suppressed reports whether path or an ancestor already failed to decode:
// its zero value would otherwise draw a second, misleading error.
func (s *source) suppressed(path string) bool {
	if s == nil || len(s.bad) == 0 {
		return false
	}
	for {
		if s.bad[path] {
			return true
		}
		if path == "" {
			return false
		}
		path = path[:max(strings.LastIndexAny(path, ".["), 0)]
	}
}

// fieldPath appends a key to a YAML path.
func fieldPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// short quotes s for a message, cut down so that a stray paragraph in a
// field does not swamp the output.
func short(s string) string {
	const limit = 60
	if r := []rune(s); len(r) > limit {
		s = string(r[:limit]) + "..."
	}
	return fmt.Sprintf("%q", s)
}

// bare returns s unquoted when it is a short single token, which reads
// better for numbers ("15 has no unit"), and quoted otherwise, so that an
// explicitly tagged value can never inject a newline into an error.
func bare(s string) string {
	if s == "" || len(s) > 40 || strings.ContainsFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || !unicode.IsPrint(r)
	}) {
		return short(s)
	}
	return s
}
