package gateway

import (
	"fmt"

	"github.com/sluice-gw/sluice/internal/wire/contract"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
	"github.com/sluice-gw/sluice/internal/wire/translate"
)

// A relayed stream is a chain of filters, in the manner of Envoy's
// encoder filters: each concern is one filter that sees every event on
// its way to the client, and may pass it, rewrite it, hold it back or end
// the stream. The relay (relay.go) owns the one read loop, the buffer,
// the clock (streamWatch), the client and the one end path; the source's
// check frames and reads every event once (protocol.StreamCheck), and the
// filters own everything else:
//
//	source ─read─▶ check: frames, validates, parses each event once
//	       ─▶ the relay's events stage (a continuation's events become
//	          the stream's own; an injected usage chunk is dropped)
//	       ─▶ translation ─▶ client check     (only when the dialects differ)
//	       ─▶ validation collector            (when the request declared a contract)
//	       ─▶ scrub ─▶ client
//
// Translated and untranslated streams take the same loop and the same
// end path; only their chains differ. A continuation's events are
// already in the client's dialect: they skip translation.

// A streamFilter is one concern of a relayed stream. The relay calls it
// from its one goroutine, in chain order. Embed passThrough for the
// hooks a filter does not need.
type streamFilter interface {
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

func (passThrough) events(p []byte, _ bool) ([]byte, error) { return p, nil }
func (passThrough) holdBack([]byte) int                     { return 0 }
func (passThrough) end(err error) ([]byte, error)           { return nil, err }

var (
	_ streamFilter = (*translateFilter)(nil)
	_ streamFilter = (*checkFilter)(nil)
	_ streamFilter = (*collectorFilter)(nil)
	_ streamFilter = (*scrubFilter)(nil)
)

// streamFilters holds one stream's filters, so that the chain costs no
// allocation of its own. Those only a translated stream uses are held
// apart, so that the others do not carry their space.
type streamFilters struct {
	answer collectorFilter
	scrub  scrubFilter
	chain  [4]streamFilter
	// dropUsage: the relay drops the usage-only chunk Sluice asked for
	// and the client did not (exchange.injectedUsage).
	dropUsage bool
	cross     *crossFilters
}

// crossFilters are the filters only a translated stream has.
type crossFilters struct {
	translate translateFilter
	check     checkFilter
}

// newChain builds the stream's filter chain and the relay's view of the
// answer (answerState); text is what the committed call's check
// captured of its text while its head was read, when it reads the
// client's dialect.
func (s *streamRelay) newChain(text *[]byte) {
	f, x, p := &s.filters, s.x, s.src.p
	s.chain = f.chain[:0]
	s.watch = streamWatch{idle: s.g.streamIdle, stall: s.g.stall}
	// client is the check that reads the stream in the client's
	// dialect: the source's own, or the translation's.
	client := s.src.check
	cross := 0
	if s.translated {
		// The provider's events are framed and read by its check,
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
		f.cross = c
		s.chain = append(s.chain, &c.translate, &c.check)
		client, cross, text = &c.check.check, 2, nil
	}
	s.answer.start(client, x.endpoint.Dialect, x.cont.call != nil && x.cont.capture, text)
	if x.contract != nil {
		f.answer = collectorFilter{g: s.g, x: x, p: p, k: contract.NewCollector(x.endpoint.Dialect), h: s.w.Header()}
		s.chain = append(s.chain, &f.answer)
	}
	// A translated stream's usage chunk is the translator's to leave out
	// (translate.StreamConfig.IncludeUsage).
	f.dropUsage = x.injectedUsage && !s.translated
	f.scrub = scrubFilter{c: &x.creds}
	s.chain = append(s.chain, &f.scrub)
	s.tail = s.chain[cross:]
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
