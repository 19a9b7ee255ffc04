package protocol

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// A whole answer is cut at its request's output limit by its meaning, as
// a stream is cut event by event: what the model generated is counted
// in the order it generated it, and what passes the limit is not
// relayed. The answer stays its API's own, as the vendor writes an
// answer that reached max_tokens:
//
//   - chat completions: each choice's reasoning, content and refusal
//     are cut, its finish_reason is "length", and its logprobs keep the
//     tokens of the text kept; usage.completion_tokens is what was
//     kept, and total_tokens with it;
//   - completions: each choice's text, its legacy logprobs and
//     finish_reason, and usage, the same way;
//   - Anthropic's Messages: the content blocks up to the cut, the text
//     block it falls in cut, stop_reason "max_tokens" (stop_sequence
//     null), usage.output_tokens;
//   - the Responses API: the output items up to the cut, the message
//     it falls in cut and incomplete, status "incomplete" with
//     incomplete_details.reason "max_output_tokens", usage.output_tokens
//     and total_tokens.
//
// A call (OpenAI's tool_calls and function_call, Anthropic's tool_use,
// the Responses API's *_call items) is relayed whole or not at all: cut
// arguments are not JSON, and a client that runs the calls of an answer
// would run one with arguments the model never finished. So is reasoning
// a vendor signs or encrypts (Anthropic's thinking, the Responses API's
// reasoning items), which its API refuses back altered. A text cut to
// nothing goes where an empty one is refused back (an Anthropic text
// block, a Responses output part); whatever came after the cut goes too.
//
// What counts is what a stream's count counts (StreamFacts.Relayed):
// text, reasoning, refusals and call arguments (Anthropic's tool input
// as its JSON, shortest form). Audio and images count nothing and are
// left as they are; redacted reasoning and a server tool's results
// count nothing and go only when they come after the cut.
//
// An answer of n choices has its limit for all of them: each choice is
// given an equal share, and what a short one leaves is shared by the
// longer ones. An answer within its limit is not touched: the body
// returned is the one given, byte for byte.

// TextCutter counts an answer's texts, in the order they were
// generated (tokens.Output): Prefix returns the longest prefix of text
// that counts at most most tokens, cut only where a token ends, and its
// count; text itself with its whole count when that fits.
type TextCutter interface {
	Prefix(text string, most int) (string, int)
}

// CutAnswer cuts body, a whole answer of endpoint ep in its own shape,
// to limit tokens of output for all its choices (limit > 0), counted by
// t. REQUIRES: body is well-formed JSON, as encoding/json.Valid says (a
// relay has checked it: AnswerUsage's valid); of other bytes the answer
// is cut as garbage, or not at all, and only a cut that is JSON is
// returned. It returns the answer as the client gets it, the output
// that answer holds, and whether it was cut; body itself, unchanged,
// when nothing passed the limit (output is then 0: not counted). The
// answer is read with the package's JSON scanners and its strings
// decoded as encoding/json decodes them, so any legal encoding of it
// (spacing, key order, escapes) cuts the same.
func CutAnswer(ep Endpoint, body []byte, limit int64, t TextCutter) (out []byte, output int64, cut bool) {
	// Every count is at most its text's bytes (a token is a byte at
	// least), and a string decodes to no more bytes than it is written
	// in unless invalid UTF-8 becomes U+FFFD: an answer no longer than
	// its limit is within it, unread.
	if limit <= 0 || ep.Name == "embeddings" || int64(len(body)) <= limit && utf8.Valid(body) {
		return body, 0, false
	}
	top := rawValue(body)
	if !top.object() {
		return body, 0, false
	}
	var c answerCut
	switch {
	case ep.IsResponses():
		c.responses(top)
	case ep.Dialect == Anthropic:
		c.messages(top)
	default:
		c.choices(top, ep.Name == "completions")
	}
	// So is one with no more bytes of output than its limit, uncounted.
	if c.bytes <= limit {
		return body, 0, false
	}
	if !c.count(t, limit) {
		return body, 0, false
	}
	c.apply(t, limit)
	if c.finish != nil {
		c.finish(c.kept)
	}
	out = top.append(make([]byte, 0, len(body)))
	if !json.Valid(out) {
		return body, 0, false // an edit that broke the answer: relayed as it came
	}
	return out, c.kept, true
}

// unit is one thing an answer generated, in order: a text that can be
// cut, a call or signed reasoning kept whole or dropped, or something
// generated that counts nothing here (a server tool's result, redacted
// reasoning), kept when it comes before the cut.
type unit struct {
	text        string
	whole, free bool
	n           int  // its count, as far as counted
	over        bool // its count passes what the answer may have
	// keep writes the unit cut to its prefix p (never called for a
	// whole one); drop removes it, or empties it.
	keep func(p string)
	drop func()
}

// oneAnswer is one choice (or the one answer of Anthropic's and the
// Responses API's), its units in order, and what marks it cut.
type oneAnswer struct {
	units []unit
	total int64 // its count, up to past the limit
	cut   func()
	// after runs once units are kept or dropped (rebuilding arrays).
	after []func()
}

// answerCut is CutAnswer's state: the answers, what their texts weigh
// in bytes, what was kept, and the fixes to the answer's top (usage,
// status) once that is known.
type answerCut struct {
	answers []*oneAnswer
	bytes   int64
	kept    int64
	finish  func(kept int64)
}

func (c *answerCut) add(a *oneAnswer, u unit) {
	a.units = append(a.units, u)
	c.bytes += int64(len(u.text))
}

// count counts each answer's units, up to one past the limit (an
// answer past it is cut, however far); false when all are within it.
func (c *answerCut) count(t TextCutter, limit int64) bool {
	var sum int64
	for _, a := range c.answers {
		for i := range a.units {
			u := &a.units[i]
			if u.free {
				continue
			}
			most := int(min(limit+1-a.total, 1<<40))
			p, n := t.Prefix(u.text, most)
			u.n = n
			a.total += int64(n)
			if len(p) < len(u.text) {
				u.over, a.total = true, limit+1
				break
			}
		}
		sum += a.total
	}
	return sum > limit
}

// apply shares the limit among the answers and cuts each to its share.
func (c *answerCut) apply(t TextCutter, limit int64) {
	share := shares(c.answers, limit)
	for i, a := range c.answers {
		left, cut := share[i], false
		for j := range a.units {
			u := &a.units[j]
			switch {
			case cut:
				u.drop()
			case u.free:
			case !u.over && int64(u.n) <= left:
				left -= int64(u.n)
				c.kept += int64(u.n)
			case u.whole:
				u.drop()
				cut = true
			default:
				p, n := t.Prefix(u.text, int(min(left, 1<<40)))
				if p == "" {
					u.drop()
				} else {
					u.keep(p)
				}
				c.kept += int64(n)
				left -= int64(n)
				cut = true
			}
		}
		for _, f := range a.after {
			f()
		}
		if cut && a.cut != nil {
			a.cut()
		}
	}
}

// shares splits limit among the answers by their counts: each has what
// it counts up to an equal share, and what a short one leaves goes to
// the others (a token more to the first ones when it does not divide).
func shares(as []*oneAnswer, limit int64) []int64 {
	out := make([]int64, len(as))
	settled := make([]bool, len(as))
	left, open := limit, int64(len(as))
	for open > 0 {
		each, more := left/open, false
		for i, a := range as {
			if !settled[i] && a.total <= each {
				out[i], settled[i] = a.total, true
				left, open, more = left-a.total, open-1, true
			}
		}
		if more {
			continue
		}
		extra := left % open
		for i := range as {
			if !settled[i] {
				out[i] = each
				if extra > 0 {
					out[i]++
					extra--
				}
			}
		}
		break
	}
	return out
}

// text adds a text unit at member name of v, when it is a non-empty
// string: cut, it is the prefix; dropped, it is empty. kept, when not
// nil, follows the bytes of it kept.
func (c *answerCut) text(a *oneAnswer, v *jv, name string, kept *int) {
	s, ok := v.get(name).str()
	if !ok || s == "" {
		return
	}
	if kept != nil {
		*kept = len(s)
	}
	c.add(a, unit{text: s,
		keep: func(p string) {
			v.set(name, strValue(p))
			if kept != nil {
				*kept = len(p)
			}
		},
		drop: func() {
			v.set(name, strValue(""))
			if kept != nil {
				*kept = 0
			}
		}})
}

// cutList is arr's elements, with a drop that removes one when the
// answer's units are done (after).
func cutList(a *oneAnswer, arr *jv) (els []*jv, drop func(i int) func()) {
	if !arr.array() {
		return nil, nil
	}
	dropped := make([]bool, len(arr.arr))
	els = arr.arr
	a.after = append(a.after, func() {
		out := arr.arr[:0:0]
		for i, e := range els {
			if !dropped[i] {
				out = append(out, e)
			}
		}
		arr.arr = out
	})
	return els, func(i int) func() { return func() { dropped[i] = true } }
}

// choices reads an OpenAI answer's choices: a chat completion's, or a
// completion's (text).
func (c *answerCut) choices(top *jv, completion bool) {
	chs := top.get("choices")
	if !chs.array() {
		return
	}
	for _, ch := range chs.arr {
		if !ch.object() {
			continue
		}
		a := &oneAnswer{}
		c.answers = append(c.answers, a)
		var content, refusal int
		if completion {
			c.text(a, ch, "text", &content)
		} else {
			c.message(a, ch.get("message"), &content, &refusal)
		}
		a.cut = func() {
			ch.set("finish_reason", strValue("length"))
			if lp := ch.get("logprobs"); !lp.isNull() {
				if completion {
					cutLegacyLogprobs(ch, lp, content)
				} else {
					cutLogprobs(ch, lp, content, refusal)
				}
			}
		}
	}
	c.finish = func(kept int64) { keptUsage(top, "prompt_tokens", "completion_tokens", kept) }
}

// message reads a chat choice's message: its reasoning, content and
// refusal texts, then its calls, in the order a model generates them.
func (c *answerCut) message(a *oneAnswer, m *jv, content, refusal *int) {
	if !m.object() {
		return
	}
	c.text(a, m, "reasoning_content", nil)
	c.text(a, m, "reasoning", nil)
	if parts := m.get("content"); parts.array() {
		for _, p := range parts.arr {
			if p.object() {
				c.text(a, p, "text", nil)
			}
		}
		*content = -1 // parts: their logprobs are not matched to them
	} else {
		c.text(a, m, "content", content)
	}
	c.text(a, m, "refusal", refusal)
	if calls, drop := cutList(a, m.get("tool_calls")); calls != nil {
		for i, call := range calls {
			args := ""
			if call.object() {
				args, _ = call.get("function").get("arguments").str()
				if args == "" {
					args, _ = call.get("custom").get("input").str()
				}
			}
			c.add(a, unit{text: args, whole: true, drop: drop(i)})
		}
		a.after = append(a.after, func() {
			if tc := m.get("tool_calls"); tc.kind == '[' && len(tc.arr) == 0 {
				m.del("tool_calls")
			}
		})
	}
	if fc := m.get("function_call"); fc.object() {
		args, _ := fc.get("arguments").str()
		c.add(a, unit{text: args, whole: true, drop: func() { m.del("function_call") }})
	}
}

// messages reads an Anthropic message's content blocks.
func (c *answerCut) messages(top *jv) {
	a := &oneAnswer{}
	c.answers = append(c.answers, a)
	blocks, drop := cutList(a, top.get("content"))
	for i, b := range blocks {
		typ, _ := b.get("type").str()
		switch {
		case typ == "text":
			s, _ := b.get("text").str()
			c.add(a, unit{text: s, keep: func(p string) { b.set("text", strValue(p)) }, drop: drop(i)})
		case typ == "thinking":
			s, _ := b.get("thinking").str()
			c.add(a, unit{text: s, whole: true, drop: drop(i)})
		case typ == "tool_use" || typ == "server_tool_use" || typ == "mcp_tool_use":
			s := ""
			if in := b.get("input"); in != nil {
				s = in.minimal()
			}
			c.add(a, unit{text: s, whole: true, drop: drop(i)})
		default:
			c.add(a, unit{free: true, drop: drop(i)})
		}
	}
	a.cut = func() {
		top.set("stop_reason", strValue("max_tokens"))
		if top.find("stop_sequence") >= 0 {
			top.set("stop_sequence", rawValue([]byte("null")))
		}
	}
	c.finish = func(kept int64) {
		if u := top.get("usage"); u.object() {
			u.set("output_tokens", intValue(kept))
		}
	}
}

// responses reads a Responses API response's output items.
func (c *answerCut) responses(top *jv) {
	a := &oneAnswer{}
	c.answers = append(c.answers, a)
	items, drop := cutList(a, top.get("output"))
	for i, it := range items {
		typ, _ := it.get("type").str()
		switch {
		case typ == "message":
			c.outputMessage(a, it, drop(i))
		case typ == "reasoning":
			var b strings.Builder
			for _, list := range []string{"summary", "content"} {
				if parts := it.get(list); parts.array() {
					for _, p := range parts.arr {
						s, _ := p.get("text").str()
						b.WriteString(s)
					}
				}
			}
			c.add(a, unit{text: b.String(), whole: true, drop: drop(i)})
		case strings.HasSuffix(typ, "_call"):
			s, ok := it.get("arguments").str()
			if !ok {
				s, _ = it.get("input").str()
			}
			c.add(a, unit{text: s, whole: true, drop: drop(i)})
		default:
			c.add(a, unit{free: true, drop: drop(i)})
		}
	}
	a.cut = func() {
		top.set("status", strValue("incomplete"))
		top.set("incomplete_details", rawValue([]byte(`{"reason":"max_output_tokens"}`)))
	}
	c.finish = func(kept int64) { keptUsage(top, "input_tokens", "output_tokens", kept) }
}

// outputMessage reads a Responses message item's parts; a part cut to
// nothing goes, and so does the item when none is left. The item a cut
// falls in is incomplete.
func (c *answerCut) outputMessage(a *oneAnswer, it *jv, dropItem func()) {
	parts, drop := cutList(a, it.get("content"))
	left := len(parts)
	for i, p := range parts {
		typ, _ := p.get("type").str()
		name := "text"
		if typ == "refusal" {
			name = "refusal"
		}
		s, ok := p.get(name).str()
		if !ok || typ != "output_text" && typ != "refusal" {
			c.add(a, unit{free: true, drop: drop(i)})
			continue
		}
		gone := drop(i)
		c.add(a, unit{text: s,
			keep: func(q string) {
				p.set(name, strValue(q))
				it.set("status", strValue("incomplete"))
				if lp := p.get("logprobs"); lp.array() {
					cutTokenList(lp, len(q))
				}
			},
			drop: func() {
				gone()
				if left--; left == 0 {
					dropItem()
				} else {
					it.set("status", strValue("incomplete"))
				}
			}})
	}
}

// cutLogprobs cuts a chat choice's logprobs to the text kept: content's
// and refusal's token lists to as many tokens as their kept bytes hold.
// Logprobs of another shape, or of content given in parts, are
// dropped: they would carry the tokens cut.
func cutLogprobs(ch, lp *jv, content, refusal int) {
	if !lp.object() || content < 0 {
		ch.set("logprobs", rawValue([]byte("null")))
		return
	}
	for _, f := range []struct {
		name string
		kept int
	}{{"content", content}, {"refusal", refusal}} {
		if l := lp.get(f.name); !l.isNull() && !cutTokenList(l, f.kept) {
			ch.set("logprobs", rawValue([]byte("null")))
			return
		}
	}
}

// cutTokenList cuts a list of {"token": ...} entries to those whose
// tokens fit in kept bytes; false when the list is not one.
func cutTokenList(l *jv, kept int) bool {
	if !l.array() {
		return false
	}
	n, sum := 0, 0
	for _, e := range l.arr {
		tok, ok := e.peek("token").str()
		if !ok {
			return false
		}
		if sum += len(tok); sum > kept {
			break
		}
		n++
	}
	l.arr = l.arr[:n]
	return true
}

// cutLegacyLogprobs cuts a completion's logprobs (tokens,
// token_logprobs, top_logprobs, text_offset: one entry a token) to the
// tokens the kept text holds; logprobs of another shape are dropped.
func cutLegacyLogprobs(ch, lp *jv, kept int) {
	toks := lp.get("tokens")
	if !lp.object() || !toks.array() {
		ch.set("logprobs", rawValue([]byte("null")))
		return
	}
	n, sum := 0, 0
	for _, e := range toks.arr {
		s, ok := e.str()
		if !ok {
			ch.set("logprobs", rawValue([]byte("null")))
			return
		}
		if sum += len(s); sum > kept {
			break
		}
		n++
	}
	for _, name := range []string{"tokens", "token_logprobs", "top_logprobs", "text_offset"} {
		if l := lp.get(name); l.array() && len(l.arr) > n {
			l.arr = l.arr[:n]
		}
	}
}

// capCounts caps every count in a usage's details object at kept: none
// says more was generated than the answer holds.
func capCounts(d *jv, kept int64) {
	if !d.object() {
		return
	}
	for i, m := range d.obj {
		if n, ok := m.val.num(); ok && n > kept {
			d.obj[i].val = intValue(kept)
		}
	}
}

// keptUsage sets an OpenAI-style usage object (chat's prompt_tokens and
// completion_tokens, the Responses API's input_tokens and output_tokens)
// to the output kept: the output count, the total where the answer gave
// one, and the output's details capped at it. An answer without usage
// is left so.
func keptUsage(top *jv, in, out string, kept int64) {
	u := top.get("usage")
	if !u.object() {
		return
	}
	u.set(out, intValue(kept))
	if p, ok := u.get(in).num(); ok && u.find("total_tokens") >= 0 {
		u.set("total_tokens", intValue(p+kept))
	}
	capCounts(u.get(out+"_details"), kept)
}
