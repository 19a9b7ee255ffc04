package gemini

import (
	"bytes"
	"encoding/json"

	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// gmParts is a content's parts, read in time and memory proportional to
// their bytes: a part that is only text (and perhaps its thought flag),
// the common one, is read by a scan, its text a piece of one copy of
// the array; any other part goes through encoding/json. Decoded by
// encoding/json alone, an answer of 250,000 one-character parts cost
// 28 times its size in allocations.
type gmParts []gmPart

func (ps *gmParts) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '[' {
		// null, or not an array: encoding/json's own answer.
		var plain []gmPart
		err := json.Unmarshal(data, &plain)
		*ps = plain
		return err
	}
	n := 0
	for i := protocol.SkipSpace(data, 1); i < len(data) && data[i] != ']'; n++ {
		if i = protocol.SkipSpace(data, protocol.SkipValue(data, i)); i < len(data) && data[i] == ',' {
			i = protocol.SkipSpace(data, i+1)
		}
	}
	out := make(gmParts, n)
	texts := make([]string, n)
	whole := string(data) // data is encoding/json's: the texts point into a copy
	k := 0
	for i := protocol.SkipSpace(data, 1); i < len(data) && data[i] != ']'; k++ {
		end := protocol.SkipValue(data, i)
		if !textPart(data, whole, i, end, &out[k], &texts[k]) {
			if err := json.Unmarshal(data[i:end], &out[k]); err != nil {
				return err
			}
		}
		if i = protocol.SkipSpace(data, end); i < len(data) && data[i] == ',' {
			i = protocol.SkipSpace(data, i+1)
		}
	}
	*ps = out
	return nil
}

// textPart reads the part data[i:end] into p when it holds nothing but
// "text", a string without escapes, and "thought", true or false: keys
// spelled exactly so (encoding/json also matches other cases), each
// once. Otherwise it reports false and leaves p alone.
func textPart(data []byte, whole string, i, end int, p *gmPart, text *string) bool {
	if data[i] != '{' {
		return false
	}
	var part gmPart
	seen := 0
	for j := protocol.SkipSpace(data, i+1); j < end && data[j] != '}'; {
		if data[j] != '"' {
			return false
		}
		kend := protocol.StringEnd(data, j)
		key := data[j+1 : kend]
		j = protocol.SkipSpace(data, protocol.SkipSpace(data, kend+1)+1) // past the colon
		vend := protocol.SkipValue(data, j)
		v := data[j:vend]
		switch {
		case string(key) == "text" && seen&1 == 0 && len(v) >= 2 && v[0] == '"' && protocol.PlainString(v[1:len(v)-1]):
			*text = whole[j+1 : vend-1]
			part.Text = text
			seen |= 1
		case string(key) == "thought" && seen&2 == 0 && (string(v) == "true" || string(v) == "false"):
			part.Thought = string(v) == "true"
			seen |= 2
		default:
			return false
		}
		if j = protocol.SkipSpace(data, vend); j < end && data[j] == ',' {
			j = protocol.SkipSpace(data, j+1)
		}
	}
	*p = part
	return true
}
