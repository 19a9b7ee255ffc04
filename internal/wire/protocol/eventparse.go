package protocol

import (
	"bytes"
	"errors"
	"io"

	"github.com/go-json-experiment/json/jsontext"
)

// EventParser reads events' data into Events. It keeps a tokenizer and
// a scratch buffer for the unescaped strings, reused from event to
// event, so that after the first few events it allocates nothing. One
// per stream; not safe for concurrent use.
type EventParser struct {
	dec     jsontext.Decoder
	rd      bytes.Reader
	scratch []byte // unescaped strings of the current event
	keyBuf  []byte // an escaped key, unescaped
	name    []byte // the event's name
	f       fields
}

// decodeOptions accept what JSONScanner (and encoding/json) accepts:
// duplicate names, the last of which counts, and invalid UTF-8.
var decodeOptions = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}

// strSpan is a string in the parser's scratch; set says it was there (a
// string, not null).
type strSpan struct {
	at, end int32
	set     bool
}

// fields are what an event's data said, by path, before its type is
// known: a type may come after the fields it gives meaning to.
type fields struct {
	object            bool    // the data is an object
	typ               strSpan // /type
	id, model         strSpan // /id, /model
	created           int64
	seq               int64 // /sequence_number (Responses)
	haveSeq           bool
	err               bool // /error, not null
	index             int  // /index
	haveIndex         bool
	usage             EventUsage // /usage
	msgUsage          EventUsage // /message/usage
	respUsage         EventUsage // /response/usage
	msgID, msgModel   strSpan    // /message/id, /message/model
	respID, respModel strSpan    // /response/id, /response/model
	incomplete        strSpan    // /response/incomplete_details/reason
	deltaStr          strSpan    // /delta as a string (Responses)
	// /delta as an object (Anthropic).
	deltaType, deltaText, deltaThinking, deltaPartial, deltaStop strSpan
	blockType, blockText                                         strSpan // /content_block/type, /text
	itemType                                                     strSpan // /item/type

	// OpenAI's choices, folded.
	text       strSpan // choice 0's content (or text)
	anyText    bool    // some choice carried non-empty content
	otherText  int
	reasoning  int
	refusal    int
	toolArgs   int
	tool       bool
	finish     strSpan // choice 0's finish_reason, else another's
	finishIdx0 bool
	other      bool // a choice other than 0 carried content
	// choices: /choices was an array; nChoices, how many it held.
	choices  bool
	nChoices int
}

// errNotJSON: the tokenizer stopped where a value should be.
var errNotJSON = errors.New("not one JSON value")

// Internal dialect for a meter that was not told its stream's: each
// event is read by the dialect its type names.
const dialectAuto Dialect = 255

// Parse reads one event: its name and its data (the data lines joined
// by "\n"), for a stream in dialect d, or of the Responses API. The
// record is written to ev, whose slices stay valid until the next Parse.
func (p *EventParser) Parse(d Dialect, responses bool, name, data []byte, ev *Event) {
	// The name is copied, so that the record holds nothing of the
	// caller's (a check's name buffer would otherwise escape).
	p.name = append(p.name[:0], name...)
	*ev = Event{Name: p.name, Block: -1, Seq: -1}
	if len(name) == 0 {
		ev.Name = nil
	}
	name = ev.Name
	p.scratch = p.scratch[:0]
	p.f = fields{}
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	switch {
	case len(data) == 0:
		// An event without data means what its name says, if anything.
	case bytes.Equal(bytes.TrimRight(trimmed, " \t\r\n"), doneData):
		if d == OpenAI && !responses {
			ev.Done = true
		} else {
			ev.other = true
		}
		return
	case !p.read(data):
		ev.Invalid = true
		return
	}
	noData := len(data) == 0
	if d == dialectAuto && !responses {
		d = p.guess(name)
		responses = d == dialectAuto
	}
	if p.f.haveSeq {
		ev.Seq = p.f.seq
	}
	switch {
	case responses:
		p.responses(ev, noData)
	case d == Anthropic:
		p.anthropic(ev, noData)
	default:
		p.openAI(ev, noData)
	}
}

var doneData = []byte("[DONE]")

// read tokenizes data into p.f; false if data is not one JSON value.
func (p *EventParser) read(data []byte) bool {
	p.rd.Reset(data)
	p.dec.Reset(&p.rd, decodeOptions...)
	if p.top() != nil {
		return false
	}
	if _, err := p.dec.ReadToken(); err != io.EOF {
		return false
	}
	// JSONScanner bounds nesting at MaxJSONDepth and the tokenizer,
	// which skips what it need not read, far deeper: for the rare data
	// that could nest that deep, the scanner judges.
	if len(data) > MaxJSONDepth && bytes.Count(data, []byte{'['})+bytes.Count(data, []byte{'{'}) > MaxJSONDepth {
		var s JSONScanner
		s.Write(data)
		return s.Done()
	}
	return true
}

// guess names the dialect an event's type belongs to, for a meter told
// none: dialectAuto for the Responses API.
func (p *EventParser) guess(name []byte) Dialect {
	t := p.str(p.f.typ)
	if !p.f.typ.set {
		t = name
	}
	switch {
	case bytes.HasPrefix(t, []byte("response.")):
		return dialectAuto
	case anthropicType(t):
		return Anthropic
	}
	return OpenAI
}

func anthropicType(t []byte) bool {
	switch string(t) {
	case "message_start", "message_delta", "message_stop", "content_block_start", "content_block_delta",
		"content_block_stop", "ping", "error":
		return true
	}
	return false
}

// str is the bytes of s.
func (p *EventParser) str(s strSpan) []byte {
	if !s.set {
		return nil
	}
	return p.scratch[s.at:s.end:s.end]
}

// --- the tokenizer's side ---

// peek is the next token's kind, or the error that stopped it.
func (p *EventParser) peek() (jsontext.Kind, error) {
	k := p.dec.PeekKind()
	if k == 0 {
		_, err := p.dec.ReadToken()
		if err == nil || err == io.EOF {
			err = errNotJSON
		}
		return 0, err
	}
	return k, nil
}

// open enters the next value if it is of kind k ('{' or '['), and skips
// it otherwise.
func (p *EventParser) open(k jsontext.Kind) (bool, error) {
	next, err := p.peek()
	if err != nil {
		return false, err
	}
	if next != k {
		return false, p.dec.SkipValue()
	}
	_, err = p.dec.ReadToken()
	return err == nil, err
}

// more reports whether the object or array entered has another member,
// reading its end if not.
func (p *EventParser) more() (bool, error) {
	k, err := p.peek()
	if err != nil {
		return false, err
	}
	if k == '}' || k == ']' {
		_, err = p.dec.ReadToken()
		return false, err
	}
	return true, nil
}

// key reads an object's next name.
func (p *EventParser) key() (key, error) {
	v, err := p.dec.ReadValue()
	if err != nil {
		return kOther, err
	}
	raw := v[1 : len(v)-1]
	if bytes.IndexByte(raw, '\\') >= 0 {
		p.keyBuf, _ = jsontext.AppendUnquote(p.keyBuf[:0], v)
		raw = p.keyBuf
	}
	return keyOf(raw), nil
}

// string reads the next value into the scratch if it is a string, and
// skips it otherwise (null included: an unset strSpan).
func (p *EventParser) string() (strSpan, error) {
	k, err := p.peek()
	if err != nil {
		return strSpan{}, err
	}
	v, err := p.dec.ReadValue()
	if err != nil || k != '"' {
		return strSpan{}, err
	}
	at := len(p.scratch)
	p.scratch, _ = jsontext.AppendUnquote(p.scratch, v) // invalid UTF-8 is replaced
	return strSpan{at: int32(at), end: int32(len(p.scratch)), set: true}, nil
}

// length reads the next value's unescaped length if it is a string,
// keeping nothing.
func (p *EventParser) length() (int, error) {
	at := len(p.scratch)
	s, err := p.string()
	p.scratch = p.scratch[:at]
	return int(s.end - s.at), err
}

// null reads the next value and reports whether it was null.
func (p *EventParser) null() (bool, error) {
	k, err := p.peek()
	if err != nil {
		return false, err
	}
	return k == 'n', p.dec.SkipValue()
}

// number reads the next value as a whole number in [0, max]; ok is
// false for anything else, which a provider could not mean as a count.
func (p *EventParser) number(max int64) (n int64, ok bool, err error) {
	k, err := p.peek()
	if err != nil {
		return 0, false, err
	}
	v, err := p.dec.ReadValue()
	if err != nil || k != '0' || len(v) > 18 {
		return 0, false, err
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false, nil
		}
		n = n*10 + int64(c-'0')
	}
	return n, n <= max, nil
}

// usage reads a usage object.
func (p *EventParser) usage(u *EventUsage) error {
	return p.object(func(k key) error {
		var dst *int
		var have *bool
		switch k {
		case kCompletionTokens, kOutputTokens:
			dst, have = &u.Output, &u.HaveOutput
		case kPromptTokens, kInputTokens:
			dst, have = &u.Input, &u.HaveInput
		case kCacheCreation:
			dst, have = &u.CacheWrite, &u.HaveCacheWrite
		case kCacheRead:
			dst, have = &u.CacheRead, &u.HaveCacheRead
		case kPromptDetails, kInputDetails:
			return p.object(func(k key) error {
				if k != kCachedTokens {
					return p.dec.SkipValue()
				}
				n, ok, err := p.number(MaxUsage)
				if ok {
					u.Cached, u.HaveCached = int(n), true
				}
				return err
			})
		default:
			return p.dec.SkipValue()
		}
		n, ok, err := p.number(MaxUsage)
		if ok {
			*dst, *have = int(n), true
		}
		return err
	})
}

// object reads an object's members, each by member (which must read
// the member's value); anything but an object is skipped.
func (p *EventParser) object(member func(key) error) error {
	ok, err := p.open('{')
	if !ok {
		return err
	}
	for {
		more, err := p.more()
		if !more || err != nil {
			return err
		}
		k, err := p.key()
		if err != nil {
			return err
		}
		if err := member(k); err != nil {
			return err
		}
	}
}
