package protocol

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// jv is a JSON value as CutAnswer edits it: the bytes as written until
// it is opened (object or array, one level at a time), and written back
// as they came unless it was. It reads valid JSON (CutAnswer's
// precondition; other bytes read as garbage, never out of bounds) with
// the package's scanners, which take any legal spacing, escapes and key
// order, and copy nothing. Keys are
// matched as encoding/json matches them: without regard to case, the
// last of a repeated key the one read.
type jv struct {
	raw  []byte
	kind byte // 0: raw; '{' or '[': opened into obj or arr
	obj  []jm
	arr  []*jv
}

// jm is one member of an object, its key decoded.
type jm struct {
	key string
	val *jv
}

// rawValue is a value written as raw.
func rawValue(raw []byte) *jv { return &jv{raw: raw} }

// strValue is a string value.
func strValue(s string) *jv {
	b, err := jsontext.AppendQuote(nil, s)
	if err != nil { // invalid UTF-8: as encoding/json writes it
		b, _ = json.Marshal(s)
	}
	return rawValue(b)
}

// intValue is a number value.
func intValue(n int64) *jv { return rawValue(strconv.AppendInt(nil, n, 10)) }

// members calls f with each member of v, an object as written, its key
// raw (quoted) and its value's bytes; false when v is not an object.
func (v *jv) members(f func(key, val []byte)) bool {
	raw := v.raw
	i := SkipSpace(raw, 0)
	if i == len(raw) || raw[i] != '{' {
		return false
	}
	for i = SkipSpace(raw, i+1); i < len(raw) && raw[i] != '}'; {
		end := min(StringEnd(raw, i)+1, len(raw))
		key := raw[i:end]
		i = min(SkipSpace(raw, SkipSpace(raw, end)+1), len(raw)) // past the colon
		vend := SkipValue(raw, i)
		f(key, raw[i:vend])
		if i = SkipSpace(raw, vend); i < len(raw) && raw[i] == ',' {
			i = SkipSpace(raw, i+1)
		}
	}
	return true
}

// unquote decodes a string as written (quoted), as encoding/json does.
func unquote(q []byte) string {
	if len(q) >= 2 && PlainString(q[1:len(q)-1]) {
		return string(q[1 : len(q)-1])
	}
	var s string
	_ = json.Unmarshal(q, &s)
	return s
}

// object opens v as an object; false when it is not one.
func (v *jv) object() bool {
	if v == nil {
		return false
	}
	if v.kind != 0 {
		return v.kind == '{'
	}
	var obj []jm
	if !v.members(func(key, val []byte) { obj = append(obj, jm{key: unquote(key), val: rawValue(val)}) }) {
		return false
	}
	v.kind, v.obj = '{', obj
	return true
}

// array opens v as an array; false when it is not one.
func (v *jv) array() bool {
	if v == nil {
		return false
	}
	if v.kind != 0 {
		return v.kind == '['
	}
	raw := v.raw
	i := SkipSpace(raw, 0)
	if i == len(raw) || raw[i] != '[' {
		return false
	}
	var arr []*jv
	for i = SkipSpace(raw, i+1); i < len(raw) && raw[i] != ']'; {
		end := max(SkipValue(raw, i), i+1)
		arr = append(arr, rawValue(raw[i:end]))
		if i = SkipSpace(raw, end); i < len(raw) && raw[i] == ',' {
			i = SkipSpace(raw, i+1)
		}
	}
	v.kind, v.arr = '[', arr
	return true
}

// peek is the value of member name of v, an object, without opening v:
// for reading, never for a change. nil without one.
func (v *jv) peek(name string) *jv {
	if v == nil {
		return nil
	}
	if v.kind != 0 {
		return v.get(name)
	}
	var found []byte
	v.members(func(key, val []byte) {
		if strings.EqualFold(unquote(key), name) {
			found = val
		}
	})
	if found == nil {
		return nil
	}
	return rawValue(found)
}

// find is the index of the member a decoder reads for name, -1 if none.
func (v *jv) find(name string) int {
	if !v.object() {
		return -1
	}
	for i := len(v.obj) - 1; i >= 0; i-- {
		if strings.EqualFold(v.obj[i].key, name) {
			return i
		}
	}
	return -1
}

// get is the value of member name, nil without one.
func (v *jv) get(name string) *jv {
	if i := v.find(name); i >= 0 {
		return v.obj[i].val
	}
	return nil
}

// set makes val the value of member name, where the member the decoder
// reads stands, or last; the key's other members go.
func (v *jv) set(name string, val *jv) {
	i := v.find(name)
	if i < 0 {
		if v.object() {
			v.obj = append(v.obj, jm{key: name, val: val})
		}
		return
	}
	v.obj[i].val = val
	v.obj = dropOthers(v.obj, i, name)
}

// dropOthers removes the members matching name but the one at keep.
func dropOthers(obj []jm, keep int, name string) []jm {
	out := obj[:0]
	for j, m := range obj {
		if j == keep || !strings.EqualFold(m.key, name) {
			out = append(out, m)
		}
	}
	return out
}

// del removes every member name.
func (v *jv) del(name string) {
	if v.find(name) >= 0 {
		v.obj = dropOthers(v.obj, -1, name)
	}
}

// str decodes v as a string.
func (v *jv) str() (string, bool) {
	if v == nil || v.kind != 0 || len(v.raw) < 2 || v.raw[0] != '"' {
		return "", false
	}
	return unquote(v.raw), true
}

// num decodes v as a whole number.
func (v *jv) num() (int64, bool) {
	if v == nil || v.kind != 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(string(bytes.TrimSpace(v.raw)), 10, 64)
	return n, err == nil
}

// isNull reports whether v is absent or null.
func (v *jv) isNull() bool {
	return v == nil || v.kind == 0 && string(bytes.TrimSpace(v.raw)) == "null"
}

// editDecoding reads what encoding/json reads (repeated keys, invalid
// UTF-8 in strings), as the answer was checked.
var editDecoding = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}

// minimal is v's JSON in its shortest form, its keys in their order:
// no insignificant space, strings with no escape they do not need. It
// is the same however v was written.
func (v *jv) minimal() string {
	raw := v.append(nil)
	b, err := jsontext.AppendFormat(nil, raw, editDecoding...)
	if err != nil {
		return string(raw)
	}
	return string(b)
}

// append writes v: an opened value member by member, the rest as it
// was written.
func (v *jv) append(b []byte) []byte {
	switch v.kind {
	case '{':
		b = append(b, '{')
		for i, m := range v.obj {
			if i > 0 {
				b = append(b, ',')
			}
			q, err := jsontext.AppendQuote(b, m.key)
			if err != nil {
				q, _ = json.Marshal(m.key)
				q = append(b, q...)
			}
			b = append(q, ':')
			b = m.val.append(b)
		}
		return append(b, '}')
	case '[':
		b = append(b, '[')
		for i, e := range v.arr {
			if i > 0 {
				b = append(b, ',')
			}
			b = e.append(b)
		}
		return append(b, ']')
	}
	return append(b, v.raw...)
}
