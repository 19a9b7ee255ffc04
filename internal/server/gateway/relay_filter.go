package gateway

import (
	"bytes"
	"fmt"

	"github.com/sluice-gw/sluice/internal/wire/contract"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
	"github.com/sluice-gw/sluice/internal/wire/translate"
)

// A relayed stream is a chain of filters, in the manner of Envoy's
// encoder filters: each concern is one filter that sees every event on
// its way to the client, and may pass it, rewrite it, hold it back or end
// the stream. The relay (relay.go) owns the one read loop, the buffer,
// the client and the one end path; the filters own everything else:
//
//	provider ─read─▶ usage meter, idle watch     (the provider's bytes, as read)
//	         ─framer─▶ whole events
//	         ─▶ translation ─▶ stream check       (only when the dialects differ)
//	         ─▶ validation collector              (when the request declared a contract)
//	         ─▶ usage-chunk drop                  (when Sluice asked for the usage chunk)
//	         ─▶ scrub ─▶ client
//
// Translated and untranslated streams take the same loop and the same
// end path; only their chains differ. A new concern (the continuation of
// a broken stream, say) is a new filter, not a new relay.
//
// The framer is not a filter: it says where whole events end in what the
// relay holds. On an untranslated stream it is the stream check itself,
// which finds boundaries as it judges events, in one scan of the bytes
// the client will get; on a translated one the check judges the
// translator's output instead, as a filter, and a plain SSE framer cuts
// the provider's bytes.

// A streamFilter is one concern of a relayed stream. The relay calls it
// from its one goroutine, in chain order. Embed passThrough for the
// hooks a filter does not need.
type streamFilter interface {
	// wait is called before each read from the provider.
	wait()
	// read sees what each read from the provider returned (possibly
	// nothing), before it is framed: the provider's own bytes, which
	// it must not change or keep.
	read(chunk []byte)
	// events sees whole events on their way to the client, or, when
	// whole is false, a part of one too long to hold. It returns what
	// goes on: p, p changed in place, bytes of its own (valid until its
	// next call), or nothing (the events are held back or dropped). An
	// error (a *streamEnd) ends the stream; what it returns with the
	// error, the events before the failure, still goes on first.
	events(p []byte, whole bool) ([]byte, error)
	// holdBack is how many bytes at the end of part, a part of an event
	// too long to hold, the filter must see more of before they can go
	// on. All of part: it cannot take events in parts.
	holdBack(part []byte) int
	// end is called once, when the stream has ended, with the verdict
	// of the filters before it: nil when the provider closed the stream
	// and every event went out, else why it failed. It returns its own
	// verdict (err, unless it judges or explains the end) and any bytes
	// it adds after the stream's own, which go to the client as they are
	// (not through the filters after it), and only if the stream ended
	// well.
	end(err error) ([]byte, error)
}

// passThrough is a filter that passes everything on and does nothing.
type passThrough struct{}

func (passThrough) wait()                                   {}
func (passThrough) read([]byte)                             {}
func (passThrough) events(p []byte, _ bool) ([]byte, error) { return p, nil }
func (passThrough) holdBack([]byte) int                     { return 0 }
func (passThrough) end(err error) ([]byte, error)           { return nil, err }

var (
	_ streamFilter = (*usageMeter)(nil)
	_ streamFilter = (*idleFilter)(nil)
	_ streamFilter = (*translateFilter)(nil)
	_ streamFilter = (*checkFilter)(nil)
	_ streamFilter = (*collectorFilter)(nil)
	_ streamFilter = usageChunkDrop{}
	_ streamFilter = (*scrubFilter)(nil)
)

// streamFilters holds one stream's filters, so that the chain costs no
// allocation of its own. Those only a translated stream uses are held
// apart, so that the others do not carry their space.
type streamFilters struct {
	usage    usageMeter
	idle     idleFilter
	answer   collectorFilter
	scrub    scrubFilter
	checkCut checkFramer
	chain    [6]streamFilter
}

// crossFilters are the filters only a translated stream has.
type crossFilters struct {
	translate translateFilter
	check     checkFilter
}

// newChain builds attempt a's framer and filter chain, and finds the
// whole events in the head the attempt read.
func (s *streamRelay) newChain(a *attempt) {
	f, x, p := &s.filters, s.x, s.p
	s.chain = f.chain[:0]
	f.usage = usageMeter{x: x}
	f.idle = idleFilter{d: s.g.streamIdle, cancel: a.cancel, provider: p.name}
	s.chain = append(s.chain, &f.usage, &f.idle)
	if crossed(x, a) {
		// The provider's events are cut whole by a plain framer,
		// translated, and the translation checked in the client's
		// dialect, so a translator slip is caught like a provider's.
		includeUsage := x.cross != nil && x.cross.includeUsage
		c := &crossFilters{
			translate: translateFilter{
				tr:       translate.NewStream(p.dialect, x.endpoint.Dialect, translate.StreamConfig{IncludeUsage: includeUsage, Created: s.g.now().Unix()}),
				provider: p.name, dialect: x.endpoint.Dialect,
			},
			check: checkFilter{check: protocol.NewStreamCheck(x.endpoint.Dialect), provider: p.name, dialect: x.endpoint.Dialect},
		}
		s.chain = append(s.chain, &c.translate, &c.check)
		s.frame = sseFramer{}
		s.ready = lastEventEnd(s.buf[:s.n])
	} else {
		// The attempt's check has judged the head; it frames and
		// judges the rest.
		f.checkCut = checkFramer{check: &a.check, provider: p.name}
		s.frame = &f.checkCut
		s.ready = a.ready
	}
	if x.contract != nil {
		f.answer = collectorFilter{g: s.g, x: x, p: p, k: contract.NewCollector(x.endpoint.Dialect)}
		s.chain = append(s.chain, &f.answer)
	}
	if x.injectedUsage && !crossed(x, a) {
		// A translated stream's usage chunk is the translator's to leave
		// out (translate.StreamConfig.IncludeUsage).
		s.chain = append(s.chain, usageChunkDrop{})
	}
	f.scrub = scrubFilter{k: p.scrub}
	s.chain = append(s.chain, &f.scrub)
}

// A framer says where whole events end in the provider's bytes the
// relay holds.
type framer interface {
	// scan reads the last m bytes of held, which the last read added.
	// It returns the end of the last whole event in held, or -1 when no
	// event ended in them; or, when an event proved malformed, where the
	// events before it end (-1: it began before these bytes) and why
	// (a *streamEnd).
	scan(held []byte, m int) (end int, bad error)
	// last says, when the provider has closed the stream, whether what
	// is held goes on as its last event, and its verdict on the stream
	// (a *streamEnd, or nil).
	last(held []byte) (send bool, verdict error)
}

// checkFramer frames an untranslated stream with its stream check
// (protocol.StreamCheck), which judges each event as it finds its end:
// the first malformed one ends the stream, and at the end the stream
// must have had its terminator, or the provider's own error event.
type checkFramer struct {
	check    *protocol.StreamCheck
	provider string
}

func (c *checkFramer) scan(held []byte, m int) (int, error) {
	base := len(held) - m
	end, ok, bad := c.check.Feed(held[base:])
	var err error
	if !ok {
		end, err = bad, malformedEvent(c.provider)
	}
	if end < 0 {
		return -1, err
	}
	return base + end, err
}

// last: the terminator, or the provider's own error event, may have come
// without its blank line, and goes out with one.
func (c *checkFramer) last([]byte) (bool, error) {
	switch v := c.check.End(); v {
	case protocol.StreamOK:
		return true, nil
	case protocol.StreamErrorEvent:
		return true, upstreamEnd(v, "")
	default:
		return false, upstreamEnd(v, fmt.Sprintf("provider %s ended the stream before it was complete", c.provider))
	}
}

// sseFramer frames a translated stream's upstream bytes as
// translate.ParseEvents reads them; the check judges the translation.
type sseFramer struct{}

func (sseFramer) scan(held []byte, _ int) (int, error) {
	if n := lastEventEnd(held); n > 0 {
		return n, nil
	}
	return -1, nil
}

// last: a last event may come without its blank line.
func (sseFramer) last(held []byte) (bool, error) { return len(bytes.TrimSpace(held)) > 0, nil }

// lastEventEnd is where the last whole event in p ends, past its blank
// line (0: none has), reading lines as translate.ParseEvents does: a line
// ends at CR, LF or CRLF, and a CR at the very end of p ends its line.
func lastEventEnd(p []byte) int {
	n := 0
	for i := 0; i < len(p); {
		end := bytes.IndexAny(p[i:], "\r\n")
		if end < 0 {
			break
		}
		next := i + end + 1
		if p[i+end] == '\r' && next < len(p) && p[next] == '\n' {
			next++
		}
		if end == 0 {
			n = next
		}
		i = next
	}
	return n
}

// streamEnd is why a committed stream failed: the request log's outcome
// and reason, and the error event the client gets in its dialect.
type streamEnd struct {
	outcome string
	reason  string
	kind    protocol.Kind
	// msg is the error event's message; "" adds none, when the
	// provider's own error event has told the client.
	msg string
}

func (e *streamEnd) Error() string { return "gateway: stream failed: " + e.reason }

// upstreamEnd is a stream the provider failed: an error for its breaker.
func upstreamEnd(reason, msg string) *streamEnd {
	return &streamEnd{outcome: outcomeUpstreamError, reason: reason, kind: protocol.Upstream, msg: msg}
}

func malformedEvent(provider string) *streamEnd {
	return upstreamEnd(protocol.StreamMalformed, fmt.Sprintf("provider %s sent a malformed event", provider))
}
