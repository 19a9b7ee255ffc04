package answer

import (
	"slices"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluice-gw/sluice/internal/wire/translate"
)

// OpenAI's chat completions: a stream of chat.completion.chunk objects,
// each a delta of one or more choices, ended by [DONE]; the whole
// answer a chat.completion.

// maxChoices bounds the choices a collector keeps apart.
const maxChoices = 128

// oaChoice is one choice as its chunks build it.
type oaChoice struct {
	index                int64
	role                 string
	content              []byte
	haveContent          bool
	refusal              []byte
	haveRefusal          bool
	reasoning            [2][]byte // reasoning_content, reasoning
	haveReasoning        [2]bool
	calls                []*oaCall
	logprobs             [2][]jsontext.Value // content, refusal
	haveLogprobs         bool
	haveRefusalLogprobs  bool
	finish               jsontext.Value
	roleSeen, finishSeen bool
}

type oaCall struct {
	index    int64
	id, typ  string
	name     []byte
	args     []byte
	haveName bool
}

// reasoningFields are the deltas some OpenAI-compatible servers (vLLM,
// SGLang, DeepSeek) send a model's reasoning in.
var reasoningFields = [2]string{"reasoning_content", "reasoning"}

// oaCollect collects a chat completion stream, one event at a time.
type oaCollect struct {
	head    struct{ id, created, model, fingerprint, tier, usage jsontext.Value }
	choices []*oaChoice
	done    bool
}

func (c *oaCollect) event(ev translate.Event) error {
	if c.done {
		return shape("an event after [DONE]")
	}
	if string(ev.Data) == "[DONE]" {
		c.done = true
		return nil
	}
	// An unnamed event, or one named message, SSE's default.
	if (ev.Name != "" && ev.Name != "message") || len(ev.Data) == 0 {
		return shape("an event named %q", ev.Name)
	}
	o, err := readObject(ev.Data)
	if err != nil {
		return err
	}
	if !isNull(o.get("error")) {
		return ErrFailed
	}
	h := &c.head
	for _, f := range []struct {
		name string
		to   *jsontext.Value
	}{{"id", &h.id}, {"created", &h.created}, {"model", &h.model}, {"system_fingerprint", &h.fingerprint}, {"service_tier", &h.tier}} {
		if v := o.get(f.name); !isNull(v) && len(*f.to) == 0 {
			*f.to = v
		}
	}
	if u := o.get("usage"); !isNull(u) {
		h.usage = u
	}
	cs := o.get("choices")
	if isNull(cs) {
		return nil
	}
	list, err := elements(cs)
	if err != nil {
		return err
	}
	for _, raw := range list {
		if c.choices, err = feedChoice(c.choices, raw); err != nil {
			return err
		}
	}
	return nil
}

// held is about how many bytes the collection holds.
func (c *oaCollect) held() int {
	n := len(c.head.usage)
	for _, ch := range c.choices {
		n += len(ch.content) + len(ch.refusal) + len(ch.reasoning[0]) + len(ch.reasoning[1])
		for _, lp := range ch.logprobs {
			for _, v := range lp {
				n += len(v)
			}
		}
		for _, call := range ch.calls {
			n += len(call.name) + len(call.args) + len(call.id)
		}
	}
	return n
}

func (c *oaCollect) whole() ([]byte, error) {
	h := &c.head
	if !c.done || len(c.choices) == 0 || len(h.id) == 0 {
		return nil, ErrIncomplete
	}
	choices := c.choices
	slices.SortFunc(choices, func(a, b *oaChoice) int { return int(a.index - b.index) })
	var o object
	o = append(o, field{"id", h.id}, field{"object", quote("chat.completion")})
	if len(h.created) > 0 {
		o = append(o, field{"created", h.created})
	}
	if len(h.model) > 0 {
		o = append(o, field{"model", h.model})
	}
	cb := []byte{'['}
	for i, ch := range choices {
		if !ch.finishSeen {
			return nil, ErrIncomplete
		}
		if i > 0 {
			cb = append(cb, ',')
		}
		cb = ch.whole(cb)
	}
	o = append(o, field{"choices", append(cb, ']')})
	if len(h.usage) > 0 {
		o = append(o, field{"usage", h.usage})
	}
	if len(h.fingerprint) > 0 {
		o = append(o, field{"system_fingerprint", h.fingerprint})
	}
	if len(h.tier) > 0 {
		o = append(o, field{"service_tier", h.tier})
	}
	return o.bytes(), nil
}

// feedChoice adds one chunk's choice to the choices so far.
func feedChoice(choices []*oaChoice, raw jsontext.Value) ([]*oaChoice, error) {
	c, err := readObject(raw)
	if err != nil {
		return choices, err
	}
	if bad := c.only("index", "delta", "logprobs", "finish_reason"); bad != "" {
		return choices, shape("a choice's %q", bad)
	}
	idx, ok := integer(c.get("index"))
	if !ok || idx < 0 || idx >= maxChoices {
		return choices, shape("a choice's index")
	}
	var ch *oaChoice
	for _, x := range choices {
		if x.index == idx {
			ch = x
		}
	}
	if ch == nil {
		ch = &oaChoice{index: idx}
		choices = append(choices, ch)
	}
	if ch.finishSeen {
		return choices, shape("a delta after choice %d finished", idx)
	}
	if lp := c.get("logprobs"); !isNull(lp) {
		if err := ch.addLogprobs(lp); err != nil {
			return choices, err
		}
	}
	if d := c.get("delta"); !isNull(d) {
		if err := ch.addDelta(d); err != nil {
			return choices, err
		}
	}
	if f := c.get("finish_reason"); !isNull(f) {
		if _, ok := str(f); !ok {
			return choices, shape("a finish_reason that is not a string")
		}
		ch.finish, ch.finishSeen = f, true
	}
	return choices, nil
}

func (ch *oaChoice) addDelta(raw jsontext.Value) error {
	d, err := readObject(raw)
	if err != nil {
		return err
	}
	for _, f := range d {
		switch f.name {
		case "role":
			if isNull(f.value) {
				continue
			}
			s, ok := str(f.value)
			if !ok {
				return shape("a role")
			}
			ch.role, ch.roleSeen = s, true
		case "content", "refusal", reasoningFields[0], reasoningFields[1]:
			if isNull(f.value) {
				continue
			}
			s, ok := str(f.value)
			if !ok {
				return shape("a delta's %s that is not a string", f.name)
			}
			switch f.name {
			case "content":
				// An empty first delta says nothing: a tool call's
				// answer has a null content, a text's a string.
				ch.content, ch.haveContent = append(ch.content, s...), ch.haveContent || s != ""
			case "refusal":
				ch.refusal, ch.haveRefusal = append(ch.refusal, s...), true
			default:
				i := slices.Index(reasoningFields[:], f.name)
				ch.reasoning[i], ch.haveReasoning[i] = append(ch.reasoning[i], s...), true
			}
		case "tool_calls":
			if isNull(f.value) {
				continue
			}
			calls, err := elements(f.value)
			if err != nil {
				return err
			}
			for _, c := range calls {
				if err := ch.addCall(c); err != nil {
					return err
				}
			}
		case "annotations":
			if list, err := elements(f.value); err != nil || len(list) > 0 {
				return shape("annotations")
			}
		default:
			return shape("a delta's %q", f.name)
		}
	}
	return nil
}

func (ch *oaChoice) addCall(raw jsontext.Value) error {
	c, err := readObject(raw)
	if err != nil {
		return err
	}
	if bad := c.only("index", "id", "type", "function"); bad != "" {
		return shape("a tool call's %q", bad)
	}
	idx, ok := integer(c.get("index"))
	if !ok || idx < 0 || idx >= maxChoices {
		return shape("a tool call's index")
	}
	var call *oaCall
	for _, x := range ch.calls {
		if x.index == idx {
			call = x
		}
	}
	if call == nil {
		call = &oaCall{index: idx}
		ch.calls = append(ch.calls, call)
	}
	if s, ok := str(c.get("id")); ok && s != "" {
		call.id = s
	}
	if s, ok := str(c.get("type")); ok && s != "" {
		call.typ = s
	}
	if fn := c.get("function"); !isNull(fn) {
		fo, err := readObject(fn)
		if err != nil {
			return err
		}
		if bad := fo.only("name", "arguments"); bad != "" {
			return shape("a function's %q", bad)
		}
		if s, ok := str(fo.get("name")); ok {
			call.name, call.haveName = append(call.name, s...), true
		}
		if s, ok := str(fo.get("arguments")); ok {
			call.args = append(call.args, s...)
		}
	}
	return nil
}

func (ch *oaChoice) addLogprobs(raw jsontext.Value) error {
	lp, err := readObject(raw)
	if err != nil {
		return err
	}
	if bad := lp.only("content", "refusal"); bad != "" {
		return shape("logprobs' %q", bad)
	}
	ch.haveLogprobs = true
	for i, name := range [2]string{"content", "refusal"} {
		v := lp.get(name)
		if isNull(v) {
			continue
		}
		list, err := elements(v)
		if err != nil {
			return err
		}
		ch.logprobs[i] = append(ch.logprobs[i], list...)
		if i == 1 {
			ch.haveRefusalLogprobs = true
		}
	}
	return nil
}

// whole appends the choice as a whole answer's.
func (ch *oaChoice) whole(b []byte) []byte {
	role := ch.role
	if role == "" {
		role = "assistant"
	}
	var m object
	m = append(m, field{"role", quote(role)})
	if ch.haveContent || len(ch.calls) == 0 {
		m = append(m, field{"content", quoteBytes(ch.content)})
	} else {
		m = append(m, field{"content", null})
	}
	if ch.haveRefusal {
		m = append(m, field{"refusal", quoteBytes(ch.refusal)})
	} else {
		m = append(m, field{"refusal", null})
	}
	for i, name := range reasoningFields {
		if ch.haveReasoning[i] {
			m = append(m, field{name, quoteBytes(ch.reasoning[i])})
		}
	}
	if len(ch.calls) > 0 {
		slices.SortFunc(ch.calls, func(a, b *oaCall) int { return int(a.index - b.index) })
		tb := []byte{'['}
		for i, c := range ch.calls {
			if i > 0 {
				tb = append(tb, ',')
			}
			typ := c.typ
			if typ == "" {
				typ = "function"
			}
			fn := object{{"name", quoteBytes(c.name)}, {"arguments", quoteBytes(c.args)}}
			tb = object{{"id", quote(c.id)}, {"type", quote(typ)}, {"function", fn.bytes()}}.appendTo(tb)
		}
		m = append(m, field{"tool_calls", append(tb, ']')})
	}
	var o object
	o = append(o, field{"index", []byte(strconv.FormatInt(ch.index, 10))}, field{"message", m.bytes()})
	if ch.haveLogprobs {
		lp := object{{"content", array(ch.logprobs[0])}, {"refusal", null}}
		if ch.haveRefusalLogprobs {
			lp[1].value = array(ch.logprobs[1])
		}
		o = append(o, field{"logprobs", lp.bytes()})
	} else {
		o = append(o, field{"logprobs", null})
	}
	o = append(o, field{"finish_reason", ch.finish})
	return o.appendTo(b)
}

// streamOpenAI writes a whole chat completion as its stream: for each
// choice, a chunk with its role, one with its reasoning, one with its
// content (and the content's logprobs), one per tool call, and one
// with its finish reason; then the usage chunk when the client asked
// for it, and [DONE].
func streamOpenAI(body []byte, includeUsage bool) ([]byte, error) {
	w, err := readObject(body)
	if err != nil {
		return nil, err
	}
	// The head every chunk repeats, in OpenAI's order, and the members
	// a chunk does not carry.
	var head object
	for _, name := range []string{"id", "created", "model", "service_tier", "system_fingerprint"} {
		if v := w.get(name); len(v) > 0 {
			head = append(head, field{name, v})
		}
	}
	var first object // unknown top-level members, on the first chunk
	var choices []jsontext.Value
	var usage jsontext.Value
	for _, f := range w {
		switch f.name {
		case "id", "created", "model", "system_fingerprint", "service_tier", "object":
		case "choices":
			if choices, err = elements(f.value); err != nil {
				return nil, err
			}
		case "usage":
			usage = f.value
		default:
			first = append(first, f)
		}
	}
	if len(head.get("id")) == 0 || len(choices) == 0 {
		return nil, shape("no id or no choices")
	}
	var out []byte
	chunk := func(choice []byte, extra object) {
		var c object
		c = append(c, field{"id", head.get("id")}, field{"object", quote("chat.completion.chunk")})
		for _, f := range head {
			if f.name != "id" {
				c = append(c, f)
			}
		}
		c = append(c, extra...)
		if choice != nil {
			c = append(c, field{"choices", append(append([]byte{'['}, choice...), ']')})
		} else {
			c = append(c, field{"choices", []byte("[]")})
		}
		out = translate.AppendEvent(out, translate.Event{Data: c.bytes()})
	}
	for _, raw := range choices {
		deltas, err := choiceDeltas(raw)
		if err != nil {
			return nil, err
		}
		for _, d := range deltas {
			chunk(d, first)
			first = nil
		}
	}
	if includeUsage && !isNull(usage) {
		chunk(nil, object{{"usage", usage}})
	}
	return translate.AppendEvent(out, translate.Event{Data: []byte("[DONE]")}), nil
}

// choiceDeltas are the chunk choices that stream one whole choice.
func choiceDeltas(raw jsontext.Value) ([][]byte, error) {
	c, err := readObject(raw)
	if err != nil {
		return nil, err
	}
	if bad := c.only("index", "message", "logprobs", "finish_reason"); bad != "" {
		return nil, shape("a choice's %q", bad)
	}
	idx := c.get("index")
	if _, ok := integer(idx); !ok {
		return nil, shape("a choice's index")
	}
	finish := c.get("finish_reason")
	if _, ok := str(finish); !ok {
		return nil, ErrIncomplete
	}
	m, err := readObject(c.get("message"))
	if err != nil {
		return nil, err
	}
	delta := func(d object, logprobs jsontext.Value, finish jsontext.Value) []byte {
		o := object{{"index", idx}, {"delta", d.bytes()}}
		if len(logprobs) == 0 {
			logprobs = null
		}
		o = append(o, field{"logprobs", logprobs})
		if len(finish) == 0 {
			finish = null
		}
		return append(o, field{"finish_reason", finish}).bytes()
	}
	role := m.get("role")
	if isNull(role) {
		role = quote("assistant")
	}
	// The first delta, as OpenAI's: the role, an empty content (null
	// for an answer that has none, a tool call's), no refusal.
	firstContent := quote("")
	if isNull(m.get("content")) {
		firstContent = null
	}
	out := [][]byte{delta(object{{"role", role}, {"content", firstContent}, {"refusal", null}}, nil, nil)}
	for _, f := range m {
		switch f.name {
		case "role":
		case "content", "refusal", reasoningFields[0], reasoningFields[1]:
			if isNull(f.value) {
				continue
			}
			if _, ok := str(f.value); !ok {
				return nil, shape("a message's %s that is not a string", f.name)
			}
		case "annotations":
			if list, err := elements(f.value); err != nil || len(list) > 0 {
				return nil, shape("annotations")
			}
		case "tool_calls":
		default:
			return nil, shape("a message's %q", f.name)
		}
	}
	for _, name := range reasoningFields {
		if v := m.get(name); !isNull(v) {
			out = append(out, delta(object{{name, v}}, nil, nil))
		}
	}
	logprobs := c.get("logprobs")
	if v := m.get("content"); !isNull(v) {
		if s, _ := str(v); s != "" || !isNull(logprobs) {
			out = append(out, delta(object{{"content", v}}, logprobs, nil))
		}
	}
	if v := m.get("refusal"); !isNull(v) {
		out = append(out, delta(object{{"refusal", v}}, nil, nil))
	}
	if tc := m.get("tool_calls"); !isNull(tc) {
		calls, err := elements(tc)
		if err != nil {
			return nil, err
		}
		for i, raw := range calls {
			call, err := readObject(raw)
			if err != nil {
				return nil, err
			}
			if bad := call.only("id", "type", "function"); bad != "" {
				return nil, shape("a tool call's %q", bad)
			}
			fn, err := readObject(call.get("function"))
			if err != nil {
				return nil, err
			}
			if bad := fn.only("name", "arguments"); bad != "" {
				return nil, shape("a function's %q", bad)
			}
			d := object{{"index", []byte(strconv.Itoa(i))}}
			d = append(d, call...)
			out = append(out, delta(object{{"tool_calls", append(append([]byte{'['}, d.bytes()...), ']')}}, nil, nil))
		}
	}
	return append(out, delta(object{}, nil, finish)), nil
}
