package answer

import (
	"bytes"
	"errors"
	"strconv"

	"github.com/sluice-gw/sluice/internal/wire/protocol"
	"github.com/sluice-gw/sluice/internal/wire/translate"
)

// Collect reads a whole SSE stream of a chat answer in dialect d (every
// legal framing: CR, LF or CRLF, comments, data over several lines) and
// returns the whole answer it carried, as that dialect writes one. It
// fails with ErrIncomplete when the stream lacks its terminator or a
// choice its finish, ErrFailed when it carried an error event, and
// ErrShape when it has a part Collect does not know.
func Collect(d protocol.Dialect, stream []byte) ([]byte, error) {
	c := NewCollector(d, 0)
	c.Write(stream)
	return c.Whole()
}

// Collector collects a stream as it passes, holding the answer so far,
// not the stream's bytes: fed a stream's bytes in any cuts (Write), it
// gives the whole answer at its end (Whole). Past its bound it stops
// and holds nothing more. Not safe for concurrent use.
type Collector struct {
	// pend is an event not yet ended.
	pend []byte
	feed interface {
		event(translate.Event) error
		held() int
		whole() ([]byte, error)
	}
	max int
	err error
}

// ErrTooLarge: the answer passed the collector's bound.
var ErrTooLarge = errors.New("answer: larger than the collector holds")

// NewCollector starts collecting a stream in dialect d; max bounds the
// bytes it holds (0: no bound).
func NewCollector(d protocol.Dialect, max int) *Collector {
	c := &Collector{max: max}
	if d == protocol.Anthropic {
		c.feed = &anCollect{}
	} else {
		c.feed = &oaCollect{}
	}
	return c
}

// Write feeds the collector p, the stream's next bytes. It never fails
// (a writer it stands beside must not): an error is kept for Whole.
func (c *Collector) Write(p []byte) (int, error) {
	if c.err != nil {
		return len(p), nil
	}
	c.pend = append(c.pend, p...)
	events, n := translate.ParseEvents(c.pend)
	for _, ev := range events {
		if c.err = c.feed.event(ev); c.err != nil {
			c.pend = nil
			return len(p), nil
		}
	}
	c.pend = append(c.pend[:0], c.pend[n:]...)
	if c.max > 0 && len(c.pend)+c.feed.held() > c.max {
		c.err, c.pend = ErrTooLarge, nil
	}
	return len(p), nil
}

// Whole is the whole answer the stream carried, once it has ended.
func (c *Collector) Whole() ([]byte, error) {
	if c.err != nil {
		return nil, c.err
	}
	if len(bytes.TrimSpace(c.pend)) > 0 {
		return nil, ErrIncomplete // an event cut short
	}
	return c.feed.whole()
}

// Options shape a stream written from a whole answer.
type Options struct {
	// IncludeUsage: an OpenAI client asked for the usage chunk
	// (stream_options.include_usage). Anthropic's stream always carries
	// its usage.
	IncludeUsage bool
}

// Stream writes whole, a complete chat answer in dialect d, as the
// stream its vendor would have sent for it. It fails with ErrShape on
// a part it cannot write back, and ErrIncomplete on an answer without
// its finish.
func Stream(d protocol.Dialect, whole []byte, o Options) ([]byte, error) {
	if d == protocol.Anthropic {
		return streamAnthropic(whole)
	}
	return streamOpenAI(whole, o.IncludeUsage)
}

// Usage is an answer's usage as its provider reported it. Input
// excludes CachedInput.
type Usage struct {
	Input, CachedInput, Output int64
	// Known: the answer carries its usage.
	Known bool
}

// Facts are what a whole answer says of itself.
type Facts struct {
	// Finished: every choice has its finish (stop) reason.
	Finished bool
	// Refused: the model declined, or a filter stopped it: a choice
	// with a refusal, finish_reason content_filter, or Anthropic's
	// stop_reason refusal.
	Refused bool
	Usage   Usage
}

// Inspect reads a whole chat answer in dialect d.
func Inspect(d protocol.Dialect, whole []byte) (Facts, error) {
	o, err := readObject(whole)
	if err != nil {
		return Facts{}, err
	}
	var f Facts
	if d == protocol.Anthropic {
		stop, ok := str(o.get("stop_reason"))
		f.Finished = ok && stop != ""
		f.Refused = stop == "refusal"
		if u, err := readObject(o.get("usage")); err == nil {
			in, ok1 := integer(u.get("input_tokens"))
			out, ok2 := integer(u.get("output_tokens"))
			read, _ := integer(u.get("cache_read_input_tokens"))
			write, _ := integer(u.get("cache_creation_input_tokens"))
			f.Usage = Usage{Input: in + write, CachedInput: read, Output: out, Known: ok1 && ok2}
		}
		return f, nil
	}
	choices, err := elements(o.get("choices"))
	if err != nil {
		return Facts{}, err
	}
	f.Finished = len(choices) > 0
	for _, raw := range choices {
		c, err := readObject(raw)
		if err != nil {
			return Facts{}, err
		}
		finish, ok := str(c.get("finish_reason"))
		f.Finished = f.Finished && ok && finish != ""
		if finish == "content_filter" {
			f.Refused = true
		}
		if m, err := readObject(c.get("message")); err == nil && !isNull(m.get("refusal")) {
			f.Refused = true
		}
	}
	if u, err := readObject(o.get("usage")); err == nil {
		in, ok1 := integer(u.get("prompt_tokens"))
		out, ok2 := integer(u.get("completion_tokens"))
		var cached int64
		if det, err := readObject(u.get("prompt_tokens_details")); err == nil {
			cached, _ = integer(det.get("cached_tokens"))
		}
		cached = min(max(cached, 0), in)
		f.Usage = Usage{Input: in - cached, CachedInput: cached, Output: out, Known: ok1 && ok2}
	}
	return f, nil
}

// WithUsage returns whole, an OpenAI chat answer without its usage
// (a stream whose client did not ask for the usage chunk), with u as
// its usage; any other answer is returned as it is.
func WithUsage(d protocol.Dialect, whole []byte, u Usage) []byte {
	if d != protocol.OpenAI || !u.Known {
		return whole
	}
	o, err := readObject(whole)
	if err != nil || !isNull(o.get("usage")) {
		return whole
	}
	in := u.Input + u.CachedInput
	num := func(n int64) []byte { return []byte(strconv.FormatInt(n, 10)) }
	uo := object{{"prompt_tokens", num(in)}, {"completion_tokens", num(u.Output)}, {"total_tokens", num(in + u.Output)}}
	if u.CachedInput > 0 {
		uo = append(uo, field{"prompt_tokens_details", object{{"cached_tokens", num(u.CachedInput)}}.bytes()})
	}
	return o.set("usage", uo.bytes()).bytes()
}
