package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Load reads and parses the config file at path. See Parse.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return Parse(data, path)
}

// Parse decodes a YAML config strictly, applies defaults and validates it.
// filename only labels errors. On failure it returns every problem it found,
// each an *Error, rather than stopping at the first: fixing a config one
// restart at a time is miserable.
//
// Values may name environment variables as ${NAME} (see env.go).
func Parse(data []byte, filename string) (*Config, error) {
	return parse(data, filename, osLookup)
}

func parse(data []byte, filename string, lookup func(string) (string, bool)) (*Config, error) {
	root, err := parseYAML(data, filename)
	if err != nil {
		return nil, err
	}
	c := &Config{src: newSource(filename)}
	d := &decoder{src: c.src}
	var used []expansion
	if root != nil {
		d.errs = append(d.errs, expandEnv(root, filename, lookup, &used)...)
		d.decode(root, reflect.ValueOf(c).Elem(), "")
	}
	if d.nodes > maxNodes {
		return nil, &Error{File: filename, Msg: errTooComplex}
	}
	c.applyDefaults()
	errs := d.errs
	if !d.spent() {
		// After a cut-short walk, later entries are zero values and
		// validating them would only bury the real errors.
		errs = append(errs, c.validate()...)
	}
	scrub(errs, used)
	if err := joinErrors(filename, errs); err != nil {
		return nil, err
	}
	return c, nil
}

// parseYAML turns data into a node tree without interpreting it, so that
// the decoder sees lines, tags and duplicate keys.
func parseYAML(data []byte, file string) (root *yaml.Node, err error) {
	// The yaml package turns its own failures into errors but re-panics
	// anything unexpected; a config typo must never crash the gateway.
	defer func() {
		if r := recover(); r != nil {
			root, err = nil, &Error{File: file, Msg: fmt.Sprintf("cannot parse YAML (%v); check the file's syntax", r)}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil // empty file: validation will say what is missing
		}
		return nil, syntaxError(file, err)
	}
	for {
		var extra yaml.Node
		err := dec.Decode(&extra)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, syntaxError(file, err)
		}
		// A trailing "---" yields an empty document; harmless.
		if len(extra.Content) > 0 && !isNull(extra.Content[0]) {
			return nil, &Error{File: file, Line: extra.Content[0].Line,
				Msg: `a second YAML document starts here; a config file holds one, so remove the extra "---" or split the file`}
		}
	}
	if len(doc.Content) == 0 || isNull(doc.Content[0]) {
		return nil, nil
	}
	return doc.Content[0], nil
}

var yamlLine = regexp.MustCompile(`^yaml: line ([0-9]+): (.*)$`)

func syntaxError(file string, err error) *Error {
	msg := err.Error()
	line := 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	return &Error{File: file, Line: line,
		Msg: "invalid YAML: " + msg + "; check indentation (spaces, not tabs) and quoting on or near this line"}
}

// maxNodes bounds the decoder's work. Aliases let a small file name a large
// subtree many times over; the schema is shallow, so a real config is far
// below this.
const maxNodes = 1 << 18

// decoder walks the node tree against the Go types by reflection, driven by
// the yaml struct tags, so the schema in types.go is the only list of field
// names. Doing the walk here, rather than via yaml.Decoder.KnownFields,
// gives errors with a field path and a fix, and keeps going after the
// first one.
type decoder struct {
	src     *source
	errs    []*Error
	nodes   int
	merging map[*yaml.Node]bool // mappings being merged, to stop <<: cycles
}

// fail reports a value at path that could not be decoded; validation then
// stays quiet about path and below.
func (d *decoder) fail(n *yaml.Node, path, format string, args ...any) {
	d.src.bad[path] = true
	d.report(n, path, format, args...)
}

// report records an error without marking path as undecoded.
func (d *decoder) report(n *yaml.Node, path, format string, args ...any) {
	d.errs = append(d.errs, &Error{File: d.src.file, Line: n.Line, Field: path, Msg: fmt.Sprintf(format, args...)})
}

// spent stops the walk once more errors could not be read anyway, or the
// input is an alias bomb.
func (d *decoder) spent() bool {
	return d.nodes > maxNodes || len(d.errs) > maxErrors
}

const errTooComplex = "the document expands to too many values (anchors and aliases repeat subtrees); write the config out plainly"

var unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()

// switchable is a section that is on by default and may be written as a
// bare "off" (breaker: off) instead of a mapping of its fields.
type switchable interface {
	switchOff(value string) bool
}

// decode stores n into v, which must be addressable.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) {
	if d.spent() {
		return
	}
	d.nodes++
	n = resolveAlias(n)
	if isNull(n) {
		return // an empty value means "not set", as if the key were absent
	}
	d.src.lines[path] = n.Line
	if reflect.PointerTo(v.Type()).Implements(unmarshalerType) {
		err := v.Addr().Interface().(yaml.Unmarshaler).UnmarshalYAML(n)
		if err != nil {
			var e *Error
			if errors.As(err, &e) {
				d.fail(n, path, "%s", e.Msg)
			} else {
				d.fail(n, path, "%v", err)
			}
		}
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		d.mapping(n, v, path)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.fail(n, path, `want a list, got %s; start each entry on its own line with "- "`, describe(n))
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, item := range n.Content {
			d.decode(item, s.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
		v.Set(s)
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			d.fail(n, path, "want a single value, got %s; check the indentation", describe(n))
			return
		}
		// Any plain scalar is text here: the source spelling is kept (model
		// 1.10 stays "1.10"), and validation judges the content, which
		// gives a better fix for listen: 8080 than "quote it" would.
		switch n.ShortTag() {
		case "!!str", "!!int", "!!float", "!!bool", "!!timestamp":
			v.SetString(n.Value)
		default:
			d.fail(n, path, "want a string, got %s; remove the tag or quote the value", describe(n))
		}
	case reflect.Int, reflect.Int64:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
			if _, err := parseInt(n.Value); err == nil && n.Kind == yaml.ScalarNode {
				d.fail(n, path, "%s is quoted; write %s without quotes", short(n.Value), bare(n.Value))
			} else {
				d.fail(n, path, "want a whole number, got %s; write digits only", describe(n))
			}
			return
		}
		i, err := parseInt(n.Value)
		if err != nil || v.OverflowInt(i) {
			d.fail(n, path, "%s is not a usable whole number; write a smaller one", short(n.Value))
			return
		}
		v.SetInt(i)
	case reflect.Map:
		// Free-form string keys (provider headers); each value decodes as
		// the map's element type.
		if n.Kind != yaml.MappingNode || v.Type().Key().Kind() != reflect.String {
			d.fail(n, path, "want a mapping of names to values, got %s; write one name: value per line", describe(n))
			return
		}
		m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			d.nodes++
			k := resolveAlias(n.Content[i])
			if k.Kind != yaml.ScalarNode {
				d.report(k, path, "keys must be plain names, got %s", describe(k))
				continue
			}
			at := fieldPath(path, k.Value)
			if m.MapIndex(reflect.ValueOf(k.Value)).IsValid() {
				d.fail(k, at, "set twice; remove one of them")
				continue
			}
			e := reflect.New(v.Type().Elem()).Elem()
			d.decode(n.Content[i+1], e, at)
			m.SetMapIndex(reflect.ValueOf(k.Value), e)
		}
		v.Set(m)
	case reflect.Pointer:
		// A present key allocates its section even when every field is
		// left to its default ("breaker: {}").
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		if s, ok := v.Interface().(switchable); ok && n.Kind == yaml.ScalarNode {
			if !s.switchOff(n.Value) {
				d.fail(n, path, "want a mapping of fields, or off, got %s; valid fields are %s", describe(n), fieldNames(fieldsOf(v.Type().Elem())))
			}
			return
		}
		d.decode(n, v.Elem(), path)
	case reflect.Float64:
		if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!float" && n.ShortTag() != "!!int") {
			d.fail(n, path, "want a number, got %s; write e.g. 0.9", describe(n))
			return
		}
		f, err := strconv.ParseFloat(n.Value, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			d.fail(n, path, "%s is not a usable number; write e.g. 0.9", short(n.Value))
			return
		}
		v.SetFloat(f)
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
			d.fail(n, path, "want true or false, got %s", describe(n))
			return
		}
		v.SetBool(n.Value == "true" || n.Value == "True" || n.Value == "TRUE")
	default:
		// Only reachable if types.go gains a field of a new kind.
		d.fail(n, path, "internal error: cannot decode into %s; report this as a bug", v.Type())
	}
}

type field struct {
	name  string
	index int
}

// fieldsOf lists a struct's YAML keys in declaration order, which is also
// the order the docs and examples use.
func fieldsOf(t reflect.Type) []field {
	var fs []field
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || name == "" || name == "-" {
			continue
		}
		fs = append(fs, field{name, i})
	}
	return fs
}

func fieldNames(fs []field) string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.name
	}
	return strings.Join(names, ", ")
}

func (d *decoder) mapping(n *yaml.Node, v reflect.Value, path string) {
	fs := fieldsOf(v.Type())
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "want a mapping of fields, got %s; valid fields are %s", describe(n), fieldNames(fs))
		return
	}
	for _, p := range d.pairs(n, path, fs) {
		if d.spent() {
			return
		}
		i := findField(fs, p.name)
		if i < 0 {
			at := path
			if near := closest(p.name, fs); near != "" {
				at = fieldPath(path, near)
			}
			d.report(p.key, at, "unknown field %s; valid fields are %s", short(p.name), fieldNames(fs))
			continue
		}
		d.decode(p.val, v.Field(fs[i].index), fieldPath(path, p.name))
	}
}

func findField(fs []field, name string) int {
	for i, f := range fs {
		if f.name == name {
			return i
		}
	}
	return -1
}

type pair struct {
	name     string
	key, val *yaml.Node
}

// pairs lists a mapping's entries with YAML merge keys (<<: *base) expanded:
// keys written in the mapping win over merged ones, and earlier merge
// sources win over later ones, as the merge-key spec says.
func (d *decoder) pairs(n *yaml.Node, path string, fs []field) []pair {
	var own, merged []pair
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		d.nodes++
		k, val := resolveAlias(n.Content[i]), n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			merged = append(merged, d.mergeSource(val, path, fs)...)
			continue
		}
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			d.report(k, path, "keys must be plain field names, got %s; valid fields are %s", describe(k), fieldNames(fs))
			continue
		}
		if first, dup := seen[k.Value]; dup {
			d.fail(k, fieldPath(path, k.Value), "set twice (first on line %d); remove one of them", first)
			continue
		}
		seen[k.Value] = k.Line
		own = append(own, pair{k.Value, k, val})
	}
	for _, p := range merged {
		if _, ok := seen[p.name]; !ok {
			seen[p.name] = p.key.Line
			own = append(own, p)
		}
	}
	return own
}

func (d *decoder) mergeSource(val *yaml.Node, path string, fs []field) []pair {
	val = resolveAlias(val)
	var srcs []*yaml.Node
	switch val.Kind {
	case yaml.MappingNode:
		srcs = []*yaml.Node{val}
	case yaml.SequenceNode:
		for _, item := range val.Content {
			srcs = append(srcs, resolveAlias(item))
		}
	}
	var out []pair
	for _, m := range srcs {
		if m.Kind != yaml.MappingNode {
			d.fail(val, path, "<< must merge a mapping or a list of mappings, got %s; write e.g. <<: *defaults", describe(m))
			return nil
		}
		if d.merging == nil {
			d.merging = map[*yaml.Node]bool{}
		}
		if d.merging[m] {
			d.fail(m, path, "<< merges a mapping into itself; merge a different anchor")
			return nil
		}
		d.merging[m] = true
		out = append(out, d.pairs(m, path, fs)...)
		delete(d.merging, m)
	}
	return out
}

// closest returns the valid field name that key most likely misspells, or
// "" when none is near enough to be a confident guess.
func closest(key string, fs []field) string {
	best, bestDist := "", 3
	for _, f := range fs {
		dist := editDistance(strings.ToLower(key), f.name)
		if dist < bestDist && dist < len(f.name)/2+1 {
			best, bestDist = f.name, dist
		}
	}
	return best
}

// editDistance is the Levenshtein distance, with a cap so a pasted
// paragraph as a key costs little.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// DecodeKey reads one key's definition (YAML, or JSON, which YAML
// reads) as a config file's keys are read: strictly, so that a field
// the key has not, or a count that is not a whole number (rpm: 0.9), is
// an error naming the field and what to write, never a silent zero. It
// is for keys made at run time (package keystore); it applies no
// defaults and no validation beyond the decoding.
func DecodeKey(data []byte) (Key, error) {
	var k Key
	root, err := parseYAML(data, "")
	if err != nil || root == nil {
		return k, err
	}
	d := &decoder{src: newSource("")}
	d.decode(root, reflect.ValueOf(&k).Elem(), "")
	if len(d.errs) > 0 {
		e := *d.errs[0]
		e.Line = 0 // the line of a document the caller did not write
		return k, &e
	}
	return k, nil
}
