package gateway

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/sluice-gw/sluice/internal/wire/contract"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
	"github.com/sluice-gw/sluice/internal/wire/translate"
)

// The stream relay's filters, in chain order (relay_filter.go).

// translateFilter puts a provider's events in the client's dialect
// (translate.Stream), whole events in, whole events out, so it holds
// back any event it would get in parts. An event the translator refuses
// ends the stream (stream_untranslatable), after what it translated
// before it. At the end the translator says whether the stream was
// whole: a provider's error event went out translated
// (stream_error_event, nothing added), or the stream was cut short.
type translateFilter struct {
	passThrough
	tr       translate.Stream
	out      []byte
	provider string
	dialect  protocol.Dialect // the client's
}

func (f *translateFilter) events(p []byte, _ bool) ([]byte, error) {
	evs, _ := translate.ParseEvents(p)
	f.out = f.out[:0]
	for _, ev := range evs {
		out, err := f.tr.Feed(ev)
		for _, o := range out {
			f.out = translate.AppendEvent(f.out, o)
		}
		if err != nil {
			return f.out, upstreamEnd("stream_untranslatable",
				fmt.Sprintf("provider %s sent an event that cannot be translated to the %s API", f.provider, f.dialect))
		}
	}
	return f.out, nil
}

func (f *translateFilter) holdBack(part []byte) int { return len(part) }

func (f *translateFilter) end(err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	switch err := f.tr.Close(); {
	case errors.Is(err, translate.ErrStreamFailed):
		return nil, upstreamEnd(protocol.StreamErrorEvent, "")
	case err != nil:
		return nil, upstreamEnd(protocol.StreamUnterminated, fmt.Sprintf("provider %s ended the stream before it was complete", f.provider))
	}
	return nil, nil
}

// checkFilter judges a translated stream's events in the client's
// dialect (protocol.StreamCheck), as the framer judges an untranslated
// one: a malformed event is not passed on, and ends the stream. At the
// end, a stream the translator ended well must have ended well in the
// client's dialect too; if not, the gateway slipped, and it is reported
// as the stream's failure.
type checkFilter struct {
	passThrough
	check    protocol.StreamCheck
	provider string
	dialect  protocol.Dialect // the client's
}

func (f *checkFilter) events(p []byte, _ bool) ([]byte, error) {
	if _, ok, bad := f.check.Feed(p); !ok {
		return p[:max(bad, 0)], malformedEvent(f.provider)
	}
	return p, nil
}

func (f *checkFilter) end(err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	if v := f.check.End(); v != protocol.StreamOK {
		return nil, upstreamEnd(v, fmt.Sprintf("provider %s's stream could not be completed in the %s API", f.provider, f.dialect))
	}
	return nil, nil
}

// collectorFilter collects the text and tool-call arguments of a stream
// whose request declared structured output (contract.Collector), as the
// client gets them; at the end of a stream that ended well it judges
// them and sets the verdict in the response's trailers, and as a
// trailing event where the model asks for one (streamVerdict).
type collectorFilter struct {
	passThrough
	g *Gateway
	x *exchange
	p *provider
	k *contract.Collector
	h http.Header // the response's, for its trailers
}

func (f *collectorFilter) events(p []byte, _ bool) ([]byte, error) {
	f.k.Write(p)
	return p, nil
}

func (f *collectorFilter) end(err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	return streamVerdict(f.g.metrics, f.h, f.x, f.p, f.k), nil
}

// scrubFilter blanks the request's secrets out of what goes to the
// client, in place (keyScrub.scrub), and across events (eventScrub,
// redact.go): every event of the stream, its provider's error event and
// a continuation's events included. It reads the request's set afresh
// each time, so a continuation's call is scrubbed of its own
// credentials too. Of a part of an event too long to hold it holds back
// the bytes that could begin a secret, until the next part shows
// whether they do.
type scrubFilter struct {
	passThrough
	c     *credentials
	cross eventScrub
}

func (f *scrubFilter) events(p []byte, whole bool) ([]byte, error) {
	k := f.c.scrubber()
	if !whole {
		return f.cross.part(k, p), nil
	}
	return f.cross.events(k, p), nil
}

func (f *scrubFilter) end(err error) ([]byte, error) { return f.cross.flush(), err }

func (f *scrubFilter) holdBack(part []byte) int { return f.c.scrubber().partial(part) }
