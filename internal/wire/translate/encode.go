package translate

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// encode writes an Anthropic request as marshal would (the same fields
// in the same order, the same omissions, raw values compacted), by hand
// into one buffer sized from the source body. RequestToAnthropic writes
// the same bytes in three steps, its messages as it reads them
// (encodeHead, messagesToAnthropic, encodeTail); encode, from a request
// whose turns are values, is their reference in tests
// (TestEncodeMatchesMarshal, FuzzMessagesMatchReference).
func (r *anRequest) encode(sizeHint int) ([]byte, error) {
	var b bytes.Buffer
	b.Grow(sizeHint + 256)
	r.encodeHead(&b)
	if len(r.System) > 0 {
		b.WriteString(`,"system":`)
		if err := json.Compact(&b, r.System); err != nil {
			return nil, err
		}
	}
	b.WriteString(`,"messages":[`)
	for i := range r.Messages {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := r.Messages[i].encode(&b); err != nil {
			return nil, err
		}
	}
	b.WriteByte(']')
	if err := r.encodeTail(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// encodeHead writes the request's start, up to its model; the system
// prompt and the messages come next.
func (r *anRequest) encodeHead(b *bytes.Buffer) {
	b.WriteString(`{"model":`)
	writeString(b, r.Model)
}

// encodeTail writes the fields after the messages, and the request's end.
func (r *anRequest) encodeTail(b *bytes.Buffer) error {
	b.WriteString(`,"max_tokens":`)
	b.WriteString(strconv.FormatInt(r.MaxTokens, 10))
	if len(r.StopSequences) > 0 {
		if err := writeMarshalled(b, `,"stop_sequences":`, r.StopSequences); err != nil {
			return err
		}
	}
	for _, f := range [2]struct {
		name string
		v    json.RawMessage
	}{{`,"temperature":`, r.Temperature}, {`,"top_p":`, r.TopP}} {
		if len(f.v) > 0 {
			b.WriteString(f.name)
			if err := json.Compact(b, f.v); err != nil {
				return err
			}
		}
	}
	if r.Stream {
		b.WriteString(`,"stream":true`)
	}
	if len(r.Tools) > 0 {
		b.WriteString(`,"tools":[`)
		for i := range r.Tools {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := r.Tools[i].encode(b); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	}
	if r.ToolChoice != nil {
		if err := writeMarshalled(b, `,"tool_choice":`, r.ToolChoice); err != nil {
			return err
		}
	}
	if r.Metadata != nil {
		if err := writeMarshalled(b, `,"metadata":`, r.Metadata); err != nil {
			return err
		}
	}
	if r.Thinking != nil {
		if err := writeMarshalled(b, `,"thinking":`, r.Thinking); err != nil {
			return err
		}
	}
	if r.OutputConfig != nil {
		if err := writeMarshalled(b, `,"output_config":`, r.OutputConfig); err != nil {
			return err
		}
	}
	b.WriteByte('}')
	return nil
}

// encode writes one turn as its MarshalJSON does.
func (m *anMessage) encode(b *bytes.Buffer) error {
	b.WriteString(`{"role":`)
	writeString(b, m.Role)
	b.WriteString(`,"content":`)
	switch {
	case m.IsStr:
		writeString(b, m.Text)
	case m.FromStr && len(m.Blocks) == 1 && m.Blocks[0].Type == "text" && m.Blocks[0].Text != nil:
		writeString(b, *m.Blocks[0].Text)
	default:
		b.WriteByte('[')
		for i := range m.Blocks {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := m.Blocks[i].encode(b); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	}
	b.WriteByte('}')
	return nil
}

// encode writes one block as encoding/json does, omitempty included.
func (k *anBlock) encode(b *bytes.Buffer) error {
	b.WriteString(`{"type":`)
	writeString(b, k.Type)
	if k.Text != nil {
		b.WriteString(`,"text":`)
		writeString(b, *k.Text)
	}
	if k.Source != nil {
		if err := writeMarshalled(b, `,"source":`, k.Source); err != nil {
			return err
		}
	}
	for _, f := range [2]struct{ name, v string }{{`,"id":`, k.ID}, {`,"name":`, k.Name}} {
		if f.v != "" {
			b.WriteString(f.name)
			writeString(b, f.v)
		}
	}
	if len(k.Input) > 0 {
		b.WriteString(`,"input":`)
		if err := json.Compact(b, k.Input); err != nil {
			return err
		}
	}
	if k.ToolUseID != "" {
		b.WriteString(`,"tool_use_id":`)
		writeString(b, k.ToolUseID)
	}
	if len(k.Content) > 0 {
		b.WriteString(`,"content":`)
		if err := json.Compact(b, k.Content); err != nil {
			return err
		}
	}
	b.WriteByte('}')
	return nil
}

// encode writes one tool as encoding/json does, omitempty included.
func (t *anTool) encode(b *bytes.Buffer) error {
	b.WriteString(`{"name":`)
	writeString(b, t.Name)
	if t.Description != "" {
		b.WriteString(`,"description":`)
		writeString(b, t.Description)
	}
	b.WriteString(`,"input_schema":`)
	if len(t.InputSchema) == 0 {
		b.WriteString("null")
	} else if err := json.Compact(b, t.InputSchema); err != nil {
		return err
	}
	if t.Strict {
		b.WriteString(`,"strict":true`)
	}
	b.WriteByte('}')
	return nil
}

// writeString writes s as a JSON string: as it stands when nothing in
// it needs escaping, else as marshal writes it.
func writeString(b *bytes.Buffer, s string) {
	if plainText(s) {
		b.WriteByte('"')
		b.WriteString(s)
		b.WriteByte('"')
		return
	}
	q, _ := marshal(s) // a string always marshals
	b.Write(q)
}

// plainText reports whether s needs no escape in JSON, and marshal
// would write it unchanged: no quote, backslash or control character,
// valid UTF-8, and neither U+2028 nor U+2029 (which encoding/json
// escapes).
func plainText(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == '"' || c == '\\' {
			return false
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
				return false
			}
			i += size - 1
		}
	}
	return true
}

// writeMarshalled writes name, then v as marshal writes it.
func writeMarshalled(b *bytes.Buffer, name string, v any) error {
	q, err := marshal(v)
	if err != nil {
		return err
	}
	b.WriteString(name)
	b.Write(q)
	return nil
}
