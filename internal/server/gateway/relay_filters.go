package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	"github.com/sluice-gw/sluice/internal/wire/contract"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
	"github.com/sluice-gw/sluice/internal/wire/translate"
)

// The stream relay's filters, in chain order (relay_filter.go).

// usageMeter reads the output token count and finish reason from the
// provider's bytes as they come, in the provider's dialect, whatever
// happens to them after; at the end it records them on the exchange,
// for the key's budget and the log, however the stream ended.
type usageMeter struct {
	passThrough
	u protocol.StreamUsage
	x *exchange
}

func (f *usageMeter) read(chunk []byte) {
	if len(chunk) > 0 {
		f.u.Write(chunk)
	}
}

func (f *usageMeter) end(err error) ([]byte, error) {
	f.x.outputTokens, f.x.usageKnown = f.u.Tokens()
	f.x.reportedInput, _ = f.u.InputTokens()
	f.x.reportedCached = f.u.CachedTokens()
	f.x.finish = f.u.FinishReason()
	return nil, err
}

// idleFilter cancels the upstream call when the provider sends nothing
// for server.stream_idle_timeout. Its clock runs only while the relay
// waits on the provider, so a slow client is never taken for a quiet
// provider. At the end it explains a read that failed because it fired:
// stream_idle.
//
// It watches for a stall too: a stream that has begun and goes quiet
// for far longer than its own gaps between reads (the stall deadline,
// lifecycle.StallDeadline, well under the idle timeout) is cancelled
// the same way, and ends as stalled (stream_stall), which a
// continuation may mend (relay_continue.go).
type idleFilter struct {
	passThrough
	d        time.Duration
	stall    lifecycle.StallConfig
	gaps     lifecycle.Gaps
	last     time.Time
	cancel   context.CancelFunc
	provider string
	t        *time.Timer
	fired    atomic.Bool
	// armed is the wait the timer was last set for, in nanoseconds.
	armed atomic.Int64
	// text and capable say whether a stall could be mended: only a
	// stream that a continuation could go on from (text's), of a model
	// with a target that can continue, is cut at the stall deadline; any
	// other waits out the idle timeout, as a slow stream always did.
	text    *textFilter
	capable bool
}

func (f *idleFilter) wait() {
	d := f.d
	if f.stall.Ceiling > 0 && f.capable && f.text != nil && f.text.continuable() {
		d = min(d, lifecycle.StallDeadline(f.stall, f.gaps))
	}
	f.armed.Store(int64(d))
	if f.last.IsZero() {
		f.last = time.Now()
	}
	if f.t == nil {
		f.t = time.AfterFunc(d, f.fire)
		return
	}
	f.t.Reset(d)
}

func (f *idleFilter) fire() { f.fired.Store(true); f.cancel() }

func (f *idleFilter) read(chunk []byte) {
	if f.t != nil {
		f.t.Stop()
	}
	if len(chunk) > 0 {
		now := time.Now()
		if !f.last.IsZero() { // the head, read before any wait, starts the clock
			f.gaps.Add(now.Sub(f.last))
		}
		f.last = now
	}
}

func (f *idleFilter) end(err error) ([]byte, error) {
	if f.t != nil {
		f.t.Stop()
	}
	if unexplained(err) && f.fired.Load() {
		if d := time.Duration(f.armed.Load()); d < f.d {
			return nil, upstreamEnd("stream_stall", fmt.Sprintf("provider %s sent nothing for %s", f.provider, d))
		}
		return nil, upstreamEnd("stream_idle", fmt.Sprintf("provider %s sent nothing for %s", f.provider, f.d))
	}
	return nil, err
}

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
// them and adds the verdict as the stream's trailing event
// (streamVerdict).
type collectorFilter struct {
	passThrough
	g *Gateway
	x *exchange
	p *provider
	k *contract.Collector
}

func (f *collectorFilter) events(p []byte, _ bool) ([]byte, error) {
	f.k.Write(p)
	return p, nil
}

func (f *collectorFilter) end(err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	return f.g.streamVerdict(f.x, f.p, f.k), nil
}

// usageChunkDrop removes the usage-only chunk from an OpenAI-style
// stream whose client did not ask for it: Sluice did, to settle the
// key's budget with the provider's count (exchange.injectedUsage).
type usageChunkDrop struct{ passThrough }

func (usageChunkDrop) events(p []byte, whole bool) ([]byte, error) {
	if whole {
		p = dropUsageChunks(p)
	}
	return p, nil
}

var (
	emptyChoices = []byte(`"choices":[]`)
	usageObject  = []byte(`"usage":{`)
)

// dropUsageChunks removes, in place, the usage-only chunks (no choices,
// a usage object) from whole SSE events: the chunk an OpenAI-style
// stream ends with when Sluice, not the client, asked for
// stream_options.include_usage. Every other event is kept as it came.
func dropUsageChunks(b []byte) []byte {
	if !bytes.Contains(b, emptyChoices) {
		return b
	}
	out := b[:0]
	for len(b) > 0 {
		end := eventEnd(b)
		ev := b[:end]
		b = b[end:]
		if bytes.Contains(ev, emptyChoices) && bytes.Contains(ev, usageObject) {
			continue
		}
		out = append(out, ev...) // never ahead of what is read: in place is safe
	}
	return out
}

// eventEnd is the length of b's first event with its blank line
// ("\n\n" or "\n\r\n"), or all of b.
func eventEnd(b []byte) int {
	for i := 0; i+1 < len(b); i++ {
		if b[i] != '\n' {
			continue
		}
		switch {
		case b[i+1] == '\n':
			return i + 2
		case b[i+1] == '\r' && i+2 < len(b) && b[i+2] == '\n':
			return i + 3
		}
	}
	return len(b)
}

// scrubFilter blanks the provider's secrets out of what goes to the
// client, in place (keyScrub.scrub), and across events (eventScrub,
// redact.go). Of a part of an event too long to hold it holds back the
// bytes that could begin a secret, until the next part shows whether
// they do.
type scrubFilter struct {
	passThrough
	k     keyScrub
	cross eventScrub
}

func (f *scrubFilter) events(p []byte, whole bool) ([]byte, error) {
	if !whole {
		return f.cross.part(f.k, p), nil
	}
	return f.cross.events(f.k, p), nil
}

func (f *scrubFilter) end(err error) ([]byte, error) { return f.cross.flush(), err }

func (f *scrubFilter) holdBack(part []byte) int { return f.k.partial(part) }
