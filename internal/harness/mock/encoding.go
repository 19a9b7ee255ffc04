package mock

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/sluice-gw/sluice/internal/wire/sseenc"
)

// HeaderEncoding picks the way this call's stream is written
// (Config.Encoding, sluice mock --encoding): "spaced+crlf".
const HeaderEncoding = "X-Mock-Encoding"

// defaultKeepalive is how often a stalled stream sends a keepalive when
// the encoding names no interval (before the time scale).
const defaultKeepalive = time.Second

// applyEncoding sets the call's encoding: the header's, else the
// failure rule's that hit the call, else the Config's. A native API's call keeps the compact default: its codec
// reads the Messages stream and writes its own vendor's bytes.
func (p *plan) applyEncoding(r *http.Request, cfg sseenc.Encoding, scale float64) error {
	if p.fail != nil && p.fail.Encoding != "" {
		e, err := sseenc.Parse(p.fail.Encoding)
		if err != nil {
			return fmt.Errorf("failure rule: %v", err)
		}
		cfg = e
	}
	p.encoding, p.keepEvery = cfg, cfg.KeepaliveEvery()
	if p.keepEvery == 0 {
		p.keepEvery = defaultKeepalive
	}
	p.keepEvery = time.Duration(float64(p.keepEvery) * scale)
	if v := r.Header.Get(HeaderEncoding); v != "" {
		e, err := sseenc.Parse(v)
		if err != nil {
			return fmt.Errorf("%s: %v", HeaderEncoding, err)
		}
		// The header's times are the caller's own, in real time.
		p.encoding, p.keepEvery = e, e.KeepaliveEvery()
		if p.keepEvery == 0 {
			p.keepEvery = defaultKeepalive
		}
	}
	if _, native := r.Context().Value(vendorPath{}).(string); native {
		p.encoding = sseenc.Encoding{}
	}
	return nil
}

// sseWriter writes one call's events in its encoding, and leaves out
// what the encoding or the call's fault says to.
type sseWriter struct {
	st *sseenc.Stream
	// noEnd leaves out the end marker (nodone, or the no_done fault):
	// OpenAI's [DONE] or Anthropic's message_stop. Anthropic's
	// message_delta, before it, carries the stop_reason and usage, as
	// OpenAI's last chunks carry finish_reason and usage before [DONE]:
	// what is missing is the marker and nothing else. The Responses API
	// has no marker apart from response.completed, which carries the
	// status and usage, so its streams are unchanged.
	noEnd bool
}

func newSSEWriter(p *plan) *sseWriter {
	// The shuffle draws from a source of the call's own seed, apart from
	// the one that draws its words, so an encoding changes no word.
	return &sseWriter{
		st:    p.encoding.Stream(rand.New(rand.NewPCG(p.encSeed[0], p.encSeed[1]))),
		noEnd: p.encoding.NoDone() || (p.fail != nil && p.fail.Kind == FailNoDone),
	}
}

// data is an event with no name (OpenAI's chunks).
func (w *sseWriter) data(v any) []byte { return w.event("", v) }

func (w *sseWriter) event(name string, v any) []byte {
	b, _ := json.Marshal(v)
	return w.raw(name, b)
}

func (w *sseWriter) raw(name string, data []byte) []byte {
	return w.st.AppendEvent(nil, name, data)
}

// end is the stream's end marker event, unless it is left out.
func (w *sseWriter) end(name string, v any) []byte {
	if w.noEnd {
		return nil
	}
	return w.event(name, v)
}

// done is OpenAI's data: [DONE], unless it is left out.
func (w *sseWriter) done() []byte {
	if w.noEnd {
		return nil
	}
	return w.raw("", []byte("[DONE]"))
}

func (w *sseWriter) comment() []byte { return w.st.AppendComment(nil) }

func (w *sseWriter) enc() sseenc.Encoding { return w.st.Encoding() }
