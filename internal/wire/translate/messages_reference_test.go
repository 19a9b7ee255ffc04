package translate

// The reference translation of messages: every turn and block built as
// values, then encoded whole (anRequest.encode). The body translation
// writes turns as it reads them instead; FuzzMessagesMatchReference
// holds the two to the same bytes.

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// refRequestToAnthropic is RequestToAnthropic with the reference
// translation of messages.
func refRequestToAnthropic(body []byte, opts Options) (*Translated, error) {
	c := &conv{opts: opts, Bender: NewBender(opts)}
	o, model, err := parseRequest(body)
	if err != nil {
		return nil, err
	}
	out := anRequest{Model: model}

	if err := c.openAIDefaultsOnly(o); err != nil {
		return nil, err
	}
	if err := c.maxTokensToAnthropic(o, &out); err != nil {
		return nil, err
	}
	if err := c.samplingToAnthropic(o, &out); err != nil {
		return nil, err
	}
	res := &Translated{}
	if res.Stream, _, err = getBool(o, "stream"); err != nil {
		return nil, err
	}
	out.Stream = res.Stream
	if so := o.get("stream_options"); so != nil {
		sob, err := parseObject(so, "stream_options")
		if err != nil {
			return nil, err
		}
		if res.IncludeUsage, _, err = getBool(sob, "include_usage"); err != nil {
			return nil, err
		}
		if err := sob.refuseUnused(c, "Anthropic"); err != nil {
			return nil, err
		}
	}
	if user, ok, err := getString(o, "user"); err != nil {
		return nil, err
	} else if ok {
		out.Metadata = &anMetadata{UserID: user}
	}
	if err := c.toolsToAnthropic(o, &out); err != nil {
		return nil, err
	}
	if err := c.responseFormatToAnthropic(o, &out); err != nil {
		return nil, err
	}
	if err := c.reasoningToAnthropic(o, &out); err != nil {
		return nil, err
	}
	msgs, err := getArray(o, "messages")
	if err != nil {
		return nil, err
	}
	if msgs == nil {
		return nil, invalid("messages", "messages", "is required")
	}
	if err := c.refMessagesToAnthropic(msgs, &out); err != nil {
		return nil, err
	}
	if err := o.refuseUnused(c, "Anthropic"); err != nil {
		return nil, err
	}
	if res.Body, err = out.encode(len(body)); err != nil {
		return nil, err
	}
	res.Dropped = c.Dropped()
	return res, nil
}

// FuzzMessagesMatchReference: whatever the messages, the body written as
// it is read is the reference's, byte for byte, or both refuse it alike.
func FuzzMessagesMatchReference(f *testing.F) {
	seeds(f, "requests/openai-to-anthropic/*.in.json", func(b []byte) { f.Add(b, false) })
	for _, b := range messageShapes(rand.New(rand.NewPCG(1, 2)), 300) {
		f.Add(b, false)
		f.Add(b, true)
	}
	f.Fuzz(func(t *testing.T, body []byte, drop bool) {
		opts := Options{}
		if drop {
			opts.Drop = []string{"*"}
		}
		got, gotErr := RequestToAnthropic(body, opts)
		want, wantErr := refRequestToAnthropic(body, opts)
		if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
			t.Fatalf("error %v, reference %v\nbody %s", gotErr, wantErr, body)
		}
		if gotErr != nil {
			return
		}
		if string(got.Body) != string(want.Body) || !reflect.DeepEqual(got.Dropped, want.Dropped) {
			t.Fatalf("body\n%s\nreference\n%s\n(dropped %v, reference %v)\nfrom %s", got.Body, want.Body, got.Dropped, want.Dropped, body)
		}
	})
}

// messageShapes makes n chat bodies of random turns: every role, string
// and part contents (empty, text, images, unknown parts, extra keys),
// tool calls and results, leading and late system messages, runs of one
// role that merge.
func messageShapes(r *rand.Rand, n int) [][]byte {
	texts := []string{`""`, `"a"`, `"q\"uote"`, `null`, `5`}
	part := func() string {
		switch r.IntN(7) {
		case 0:
			return `{"type":"text","text":` + texts[r.IntN(len(texts))] + `}`
		case 1:
			return `{"type":"image_url","image_url":{"url":"https://x/y.png"}}`
		case 2:
			return `{"type":"input_audio","input_audio":{}}`
		case 3:
			return `{"type":"text","text":"b","cache_control":{"type":"ephemeral"}}`
		case 4:
			return `"notanobject"`
		}
		return `{"type":"text","text":"c"}`
	}
	content := func() string {
		switch r.IntN(6) {
		case 0:
			return ""
		case 1:
			return `,"content":null`
		case 2:
			var ps []string
			for range r.IntN(4) {
				ps = append(ps, part())
			}
			return `,"content":[` + strings.Join(ps, ",") + `]`
		case 3:
			return `,"content":7`
		}
		return `,"content":` + texts[r.IntN(len(texts)-2)]
	}
	call := func(k int) string {
		switch r.IntN(5) {
		case 0:
			return `{"id":"c` + fmt.Sprint(k) + `","type":"custom"}`
		case 1:
			return `{"id":"","type":"function","function":{"name":"f","arguments":"{}"}}`
		case 2:
			return `{"id":"c","type":"function","function":{"name":"f","arguments":"[1]"}}`
		}
		return `{"id":"c` + fmt.Sprint(k) + `","type":"function","function":{"name":"f","arguments":"{ \"a\" : 1 }"}}`
	}
	roles := []string{"system", "developer", "user", "user", "assistant", "assistant", "tool", "function", "wizard"}
	var out [][]byte
	for range n {
		var ms []string
		for range r.IntN(7) {
			role := roles[r.IntN(len(roles))]
			m := `{"role":"` + role + `"` + content()
			switch {
			case role == "assistant" && r.IntN(2) == 0:
				var cs []string
				for k := range r.IntN(3) {
					cs = append(cs, call(k))
				}
				m += `,"tool_calls":[` + strings.Join(cs, ",") + `]`
			case role == "tool" && r.IntN(5) > 0:
				m += `,"tool_call_id":"c0"`
			case r.IntN(6) == 0:
				m += `,"name":"n"`
			}
			ms = append(ms, m+`}`)
		}
		out = append(out, []byte(`{"model":"m","max_tokens":9,"messages":[`+strings.Join(ms, ",")+`]}`))
	}
	return out
}

// The shapes the reference is checked on translate often enough to
// test something: a generator that made only refusals would pass.
func TestMessageShapesTranslate(t *testing.T) {
	ok := 0
	for _, b := range messageShapes(rand.New(rand.NewPCG(1, 2)), 300) {
		if _, err := RequestToAnthropic(b, Options{Drop: []string{"*"}}); err == nil {
			ok++
		} else if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrUntranslatable) {
			t.Fatal(err)
		}
	}
	if ok < 60 {
		t.Errorf("%d of 300 shapes translate; want at least 60", ok)
	}
	t.Logf("%d of 300 shapes translate", ok)
}

// refMessagesToAnthropic moves leading system and developer messages to the
// top-level system, turns tool messages into user turns of tool_result
// blocks, and merges consecutive turns of one role, since Anthropic
// requires user and assistant to alternate.
func (c *conv) refMessagesToAnthropic(msgs []json.RawMessage, out *anRequest) error {
	var system []anBlock
	// One turn per message at most: the array is sized once.
	out.Messages = make([]anMessage, 0, len(msgs))
	systemStr := true // every system message so far was a plain string
	leading := true
	mo := &object{} // one for every message: nothing keeps it past its turn
	for i, raw := range msgs {
		p := index("messages", i)
		if err := mo.parse(raw, p); err != nil {
			return err
		}
		role, ok, err := getString(mo, "role")
		if err != nil {
			return err
		}
		if !ok {
			return invalid("messages.role", mo.at("role"), "is required")
		}
		switch role {
		case "system", "developer":
			if !leading {
				// Hoisting it would move an instruction the client placed
				// mid-conversation to before the conversation began.
				if err := c.refuse("messages.system", p, "Anthropic has one system prompt, before the conversation; a "+role+" message after the first user or assistant message has no place"); err != nil {
					return err
				}
				continue
			}
			blocks, fromStr, err := c.refTextOnly(mo, "content", "system")
			if err != nil {
				return err
			}
			systemStr = systemStr && fromStr
			system = append(system, blocks...)
		case "user", "assistant":
			leading = false
			if text, ok := plainTurn(mo, role); ok {
				refAppendText(out, role, text)
				break
			}
			if role == "assistant" {
				blocks, fromStr, err := c.refAssistantContent(mo)
				if err != nil {
					return err
				}
				refAppendTurn(out, "assistant", blocks, fromStr)
				break
			}
			blocks, fromStr, err := c.refUserContent(mo)
			if err != nil {
				return err
			}
			refAppendTurn(out, "user", blocks, fromStr)
		case "tool":
			leading = false
			block, err := c.refToolResult(mo)
			if err != nil {
				return err
			}
			refAppendTurn(out, "user", []anBlock{block}, false)
		case "function":
			if err := c.refuse("messages.role", mo.at("role"), "the deprecated function role has no Anthropic equivalent; use tool messages"); err != nil {
				return err
			}
			continue
		default:
			return invalid("messages.role", mo.at("role"), "unknown role "+quote(role))
		}
		if err := mo.refuseUnused(c, "Anthropic"); err != nil {
			return err
		}
	}
	if len(system) == 0 {
		return nil
	}
	if systemStr && len(system) == 1 {
		out.System, _ = marshal(*system[0].Text)
		return nil
	}
	var err error
	out.System, err = marshal(system)
	return err
}

// appendText adds a plain string as a turn of role, or to the last turn
// if it has the same role.
func refAppendText(out *anRequest, role, text string) {
	if n := len(out.Messages); n == 0 || out.Messages[n-1].Role != role {
		out.Messages = append(out.Messages, anMessage{Role: role, IsStr: true, Text: text})
		return
	}
	refAppendTurn(out, role, []anBlock{textBlock(text)}, true)
}

// appendTurn adds blocks as a turn of role, or to the last turn if it has
// the same role.
func refAppendTurn(out *anRequest, role string, blocks []anBlock, fromStr bool) {
	if n := len(out.Messages); n > 0 && out.Messages[n-1].Role == role {
		last := &out.Messages[n-1]
		last.materialize()
		last.Blocks = append(last.Blocks, blocks...)
		last.FromStr = false
		return
	}
	out.Messages = append(out.Messages, anMessage{Role: role, Blocks: blocks, FromStr: fromStr})
}

// textOnly reads a content that may hold text only: a string, or text
// parts. fromStr reports a plain string.
func (c *conv) refTextOnly(mo *object, key, what string) (blocks []anBlock, fromStr bool, err error) {
	v := mo.get(key)
	if v == nil {
		return nil, false, nil
	}
	if isString(v) {
		s, ok := decodeString(v)
		if !ok {
			return nil, false, invalid(ParamOf(mo.at(key)), mo.at(key), "must be a string or an array of parts")
		}
		return []anBlock{textBlock(s)}, true, nil
	}
	parts, err := asArray(v, mo.at(key))
	if err != nil {
		return nil, false, err
	}
	for j, raw := range parts {
		po, err := parseObject(raw, index(mo.at(key), j))
		if err != nil {
			return nil, false, err
		}
		typ, _, err := getString(po, "type")
		if err != nil {
			return nil, false, err
		}
		if typ != "text" {
			if err := c.refuse(ParamOf(po.loc())+"."+typ, po.loc(), "a "+what+" message can carry only text in Anthropic's API"); err != nil {
				return nil, false, err
			}
			continue
		}
		text, _, err := getString(po, "text")
		if err != nil {
			return nil, false, err
		}
		if err := po.refuseUnused(c, "Anthropic"); err != nil {
			return nil, false, err
		}
		blocks = append(blocks, textBlock(text))
	}
	return blocks, false, nil
}

func (c *conv) refUserContent(mo *object) ([]anBlock, bool, error) {
	v := mo.get("content")
	if v == nil || isString(v) {
		return c.refTextOnly(mo, "content", "user")
	}
	parts, err := asArray(v, mo.at("content"))
	if err != nil {
		return nil, false, err
	}
	var blocks []anBlock
	for j, raw := range parts {
		po, err := parseObject(raw, index(mo.at("content"), j))
		if err != nil {
			return nil, false, err
		}
		typ, _, err := getString(po, "type")
		if err != nil {
			return nil, false, err
		}
		var b anBlock
		switch typ {
		case "text":
			text, _, err := getString(po, "text")
			if err != nil {
				return nil, false, err
			}
			b = textBlock(text)
		case "image_url":
			img, ok, err := c.imageToAnthropic(po)
			if err != nil {
				return nil, false, err
			}
			if !ok {
				continue
			}
			b = img
		default:
			if err := c.refuse("messages.content."+typ, po.loc(), "content of type "+quote(typ)+" has no Anthropic equivalent here"); err != nil {
				return nil, false, err
			}
			continue
		}
		if err := po.refuseUnused(c, "Anthropic"); err != nil {
			return nil, false, err
		}
		blocks = append(blocks, b)
	}
	return blocks, false, nil
}

func (c *conv) refAssistantContent(mo *object) ([]anBlock, bool, error) {
	blocks, fromStr, err := c.refTextOnly(mo, "content", "assistant")
	if err != nil {
		return nil, false, err
	}
	// Anthropic refuses empty text blocks; an assistant turn that is all
	// tool calls often comes with content "".
	kept := blocks[:0]
	for _, b := range blocks {
		if *b.Text != "" {
			kept = append(kept, b)
		}
	}
	blocks = kept
	calls, err := getArray(mo, "tool_calls")
	if err != nil {
		return nil, false, err
	}
	for k, raw := range calls {
		co, err := parseObject(raw, index(mo.at("tool_calls"), k))
		if err != nil {
			return nil, false, err
		}
		typ, _, err := getString(co, "type")
		if err != nil {
			return nil, false, err
		}
		if typ != "function" {
			if err := c.refuse("messages.tool_calls.type", co.at("type"), "only function tool calls translate"); err != nil {
				return nil, false, err
			}
			continue
		}
		id, err := getRequired(co, "id", "messages.tool_calls.id")
		if err != nil {
			return nil, false, err
		}
		fo, err := parseObject(co.get("function"), co.at("function"))
		if err != nil {
			return nil, false, err
		}
		name, _, err := getString(fo, "name")
		if err != nil {
			return nil, false, err
		}
		args, _, err := getString(fo, "arguments")
		if err != nil {
			return nil, false, err
		}
		input, err := argumentsToInput(args, fo.at("arguments"))
		if err != nil {
			return nil, false, err
		}
		if err := fo.refuseUnused(c, "Anthropic"); err != nil {
			return nil, false, err
		}
		if err := co.refuseUnused(c, "Anthropic"); err != nil {
			return nil, false, err
		}
		blocks = append(blocks, anBlock{Type: "tool_use", ID: id, Name: name, Input: input})
		fromStr = false
	}
	return blocks, fromStr, nil
}

func (c *conv) refToolResult(mo *object) (anBlock, error) {
	id, err := getRequired(mo, "tool_call_id", "messages.tool_call_id")
	if err != nil {
		return anBlock{}, err
	}
	blocks, fromStr, err := c.refTextOnly(mo, "content", "tool")
	if err != nil {
		return anBlock{}, err
	}
	b := anBlock{Type: "tool_result", ToolUseID: id}
	switch {
	case fromStr:
		b.Content, err = marshal(*blocks[0].Text)
	case len(blocks) > 0:
		b.Content, err = marshal(blocks)
	}
	return b, err
}
