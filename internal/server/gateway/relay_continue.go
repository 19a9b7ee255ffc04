package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	"github.com/sluice-gw/sluice/internal/core/price"
	"github.com/sluice-gw/sluice/internal/server/runner"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// Mid-stream continuation: a stream that breaks after its first token
// has gone to the client (a cut, a stall, a malformed event, an error
// event) is continued on another target, and the client gets one stream
// with the whole answer exactly once. The core decides whether a break
// can be mended, from the stream's facts (lifecycle.Mend), and where
// (lifecycle.Engine.Continue, through runner.Call.Continue); the relay
// carries it out as a change of source inside its one read loop:
//
//   - the whole events read before the break go out first, as on any
//     failure; an error event from the provider is held back (framed),
//     and goes out only if nothing can continue;
//   - the continuation call asks the target to go on from the exact text
//     the client has had (answerState), with an assistant prefill where
//     the target takes one, else a continuation prompt; with no text
//     captured there is nothing to go on from, and nothing is continued;
//   - the continuation's stream becomes the relay's source: the same
//     loop, clock and filters (scrubbing, the stall watch) see it, and
//     its events, read by its own check in its provider's dialect, are
//     written as the stream's own events in the client's dialect
//     (splice): its head, finish and terminator are dropped, and its
//     text is held until it is known whether it repeats the answer so
//     far (all of it, or its tail), which is trimmed
//     (lifecycle.SpliceOverlap);
//   - it ends with the last attempt's finish reason, the attempts'
//     summed usage, the client's terminator, and a trailer,
//     X-Sluice-Continuation, naming the continuation;
//   - a continuation that fails before its first text (a refused
//     prefill, say) is never shown: the next target is asked, and when
//     none can, the stream ends with an error event carrying the
//     original cause, never a finish reason.
//
// The broken call is cancelled before the continuation starts, and the
// continuation's own call ends with the relay (invariant 2). Only the
// broken path allocates.

// contState is what a request's stream needs to be continued, set by
// forward; continued names the continuation, for the log and trailer.
type contState struct {
	call      *runner.Call
	m         *model
	out       *outgoing
	continued string
	// caps is what each target can still do for this answer; done, the
	// continuations made.
	caps []lifecycle.ContinueCaps
	done int
	// capture: the text the client has had is kept, since a continuation
	// could go on from it.
	capture bool
}

// continuable: some target of m can continue a broken stream.
func (m *model) continuable() bool {
	for _, k := range m.caps {
		if k.Mode() != lifecycle.ContinueNone {
			return true
		}
	}
	return false
}

// stopOf is how the read loop of the current source ended, in the
// core's terms.
func (s *streamRelay) stopOf(err error) lifecycle.StreamStop {
	switch e, _ := err.(*streamEnd); {
	case err == errClientWrite || err == errClientGone || s.r.Context().Err() != nil:
		return lifecycle.StopClient
	case timedOut(s.ctx):
		return lifecycle.StopDeadline
	case err == nil:
		return lifecycle.StopClosed
	case e == nil:
		return lifecycle.StopCut
	case e.reason == "stream_stall":
		return lifecycle.StopStalled
	case e.reason == "stream_idle":
		return lifecycle.StopCut
	case e.reason == protocol.StreamErrorEvent:
		return lifecycle.StopErrorEvent
	case e.reason == protocol.StreamUnterminated:
		return lifecycle.StopUnterminated
	case e.reason == "stream_untranslatable":
		return lifecycle.StopUntranslatable
	}
	return lifecycle.StopMalformed
}

// facts is what the stream has shown, as the core reads it.
func (s *streamRelay) facts() lifecycle.StreamFacts {
	f := s.src.check.Facts()
	tool := f.Tool
	if s.answer.origKept {
		tool = tool || s.answer.orig.Tool
	}
	return lifecycle.StreamFacts{
		Text:     s.answer.on && len(s.answer.soFar()) > 0,
		Tool:     tool,
		Unread:   s.parts || f.Unread,
		Finished: f.FinishReason() != "",
	}
}

// complete: the current source's stream ended whole, by its terminator
// or by its finish reason.
func (s *streamRelay) complete(err error) bool {
	return lifecycle.Complete(s.facts(), s.stopOf(err))
}

// carryOn is the continuation stage: err ended the read loop; it returns
// what the end path gets: nil for a stream continued to its end.
func (s *streamRelay) carryOn(err error) error {
	err = s.watch.explain(err, s.src.p.name)
	if !s.answer.on {
		return s.giveUp(err)
	}
	orig := err
	for {
		if err == errOutputCap {
			// Cut at its limit: it ends as a length stop, never
			// continued (mend).
			if sp := s.src.splice; sp != nil {
				sp.flushPending(s)
				s.nameContinuation(sp)
			}
			return err
		}
		if sp := s.src.splice; sp != nil {
			if s.complete(err) {
				return s.finishContinued()
			}
			if e, ok := err.(*streamEnd); ok && e.reason == "continuation_unspliceable" {
				err = e
			}
		}
		cause, ok := lifecycle.Mend(s.facts(), s.stopOf(err))
		if !ok {
			break
		}
		// Every whole event read before the break goes out first.
		if err != errClientWrite && s.ready > 0 {
			if s.send(s.ready, true) == errClientWrite {
				return errClientWrite
			}
		}
		if s.midEvent || s.x.cont.call == nil || s.x.cont.m == nil {
			break
		}
		if !s.openContinuation(cause) {
			break
		}
		err = s.pump()
		if err == io.EOF {
			err = s.last()
		}
		err = s.watch.explain(err, s.src.p.name)
	}
	if s.src.splice != nil {
		// The continuation broke too, and nothing can go on: the
		// original cause ends the stream: the provider's own error
		// event, held back when it broke, or an error event of Sluice's.
		s.src.splice.flushPending(s)
		if held := s.answer.heldErr; held != nil {
			if perr := s.passThrough(s.origChain, held); perr == errClientWrite {
				return perr
			}
			return upstreamEnd(protocol.StreamErrorEvent, "")
		}
		if e, ok := orig.(*streamEnd); ok && e.msg == "" {
			return upstreamEnd(e.reason, fmt.Sprintf("provider %s broke off the stream and no target could continue it", s.answer.origProvider))
		}
		if err == errClientWrite {
			return err
		}
		return orig
	}
	return s.giveUp(err)
}

// giveUp ends a stream that could not be continued: with the provider's
// own error event when it sent one (held back in what the relay holds),
// else with err.
func (s *streamRelay) giveUp(err error) error {
	e, ok := err.(*streamEnd)
	if !ok || !s.errHeld || e.reason != protocol.StreamErrorEvent || e.msg != "" || s.n == 0 {
		return err
	}
	// The held error event, and anything after it, goes on as it came,
	// through the filters (translation, scrubbing).
	held := s.n
	s.ready = 0
	if perr := s.send(held, true); perr == errClientWrite {
		return errClientWrite
	}
	return err
}

// openContinuation asks the core where the answer goes on, and makes
// the call there; a target that does not answer with a stream is never
// shown, and the next is asked. It reports whether a continuation's
// stream is now the relay's source.
func (s *streamRelay) openContinuation(cause lifecycle.BreakCause) bool {
	cs := &s.x.cont
	if cs.caps == nil {
		cs.caps = append([]lifecycle.ContinueCaps(nil), cs.m.caps...)
	}
	tool := s.facts().Tool
	for {
		d := cs.call.Continue(cause, cs.caps, cs.done, tool)
		if !d.OK {
			s.g.log.Debug("stream not continued", "provider", s.src.p.name, "cause", cause.String(), "why", d.Why)
			return false
		}
		tg := cs.m.targets[d.Target]
		cs.caps[d.Target] = lifecycle.ContinueCaps{} // once per answer
		cs.done++
		if s.dial(tg, d.Mode, cause) {
			return true
		}
	}
}

// dial makes one continuation call to t and, when it answers with a
// stream, makes it the relay's source.
func (s *streamRelay) dial(t target, mode lifecycle.ContinueMode, cause lifecycle.BreakCause) bool {
	x := s.x
	sofar := string(s.answer.soFar())
	sofarTokens := s.outputSoFar()
	body, trimmed, err := contBody(x.cont.out, t, mode, sofar, sofarTokens)
	if err != nil {
		return false
	}
	ctx, cancel := context.WithCancel(s.ctx)
	dl, _ := s.ctx.Deadline()
	req, err := upstreamRequest(ctx, s.r, t, t.provider.baseURL, x.endpoint, x.cont.out, dl, &x.creds)
	if err != nil {
		cancel()
		return false
	}
	req.Body, req.ContentLength, req.GetBody = io.NopCloser(bytes.NewReader(body)), int64(len(body)), nil
	x.attempts++
	resp, err := t.provider.rt.RoundTrip(req)
	if err != nil {
		cancel()
		s.g.recordContinuation(x, t, false, price.Usage{}, false, false)
		return false
	}
	if resp.StatusCode != http.StatusOK || !isEventStream(resp.Header) {
		// A refused prefill, an overload: never shown to the client.
		io.Copy(io.Discard, io.LimitReader(resp.Body, errorBodyLimit))
		resp.Body.Close()
		cancel()
		s.g.recordContinuation(x, t, false, price.Usage{}, false, false)
		return false
	}
	// The broken source is done with: cancel its call at its provider,
	// keep what it said, and let the continuation take its place.
	s.retire()
	check := protocol.NewStreamCheck(t.provider.dialect)
	check.KeepMarks()
	s.src = source{p: t.provider, body: resp.Body, check: &check, cancel: cancel,
		splice: &splice{mode: mode, trimmed: trimmed, to: t, cause: cause, input: int64(len(sofar))}}
	x.relayed = &check
	s.n, s.ready = 0, 0
	s.capBase = s.relayedOut
	s.chain = s.tail
	s.watch.restart(s.g.now(), 0, cancel)
	return true
}

// retire ends the current source: its call is cancelled and its body
// closed; the committed call's facts are kept, a continuation's counted.
func (s *streamRelay) retire() {
	s.src.cancel()
	if s.src.splice == nil {
		if s.errHeld && s.n > s.ready {
			// The provider's error event, held back: it goes out if
			// nothing can continue.
			s.answer.heldErr = append([]byte(nil), s.buf[s.ready:s.n]...)
		}
		s.origChain = s.chain
		s.answer.takeIdentity()
		s.answer.keepOrig(s.src.check.Facts())
		s.answer.origProvider = s.src.p.name
	} else {
		s.src.splice.settle(s)
	}
	s.src.body.Close()
	s.src.check.Release()
}

// outputSoFar is the answer's output so far: what the committed call
// and the continuations generated.
func (s *streamRelay) outputSoFar() int {
	f := s.src.check.Facts()
	if s.answer.origKept {
		f = &s.answer.orig
	}
	n, _ := f.Tokens()
	return n + s.answer.contTokens
}

// finishContinued ends a continued stream whose last continuation
// finished: its held text goes out, then the ending (the last finish
// reason, the summed usage, the terminator), through the filters.
func (s *streamRelay) finishContinued() error {
	sp := s.src.splice
	sp.flushPending(s)
	sp.settle(s)
	a := &s.answer
	a.finish = s.src.check.Facts().FinishReason()
	s.nameContinuation(sp)
	in, _ := a.orig.InputTokens()
	if in == 0 {
		in = s.x.inputTokens
	}
	u := answerUsage{input: in + a.contInput, output: int64(s.outputSoFar())}
	s.out = a.appendEnding(s.out[:0], a.finish, false, u, a.dialect == protocol.OpenAI && s.wantsUsage())
	if err := s.passOwn(s.out); err != nil {
		return err
	}
	return nil
}

// nameContinuation names the continuation sp, which the answer ends
// in, in the X-Sluice-Continuation trailer and the log.
func (s *streamRelay) nameContinuation(sp *splice) {
	cs := &s.x.cont
	cs.continued = strconv.Itoa(cs.done) + "; cause=" + sp.cause.String() + "; to=" + sp.to.provider.name + "; mode=" + sp.mode.String()
	s.w.Header().Set(http.TrailerPrefix+"X-Sluice-Continuation", cs.continued)
}

// passOwn takes bytes the relay wrote itself (whole events in the
// client's dialect) through the filters after translation, to the
// client.
func (s *streamRelay) passOwn(p []byte) error { return s.passThrough(s.tail, p) }

// passThrough takes whole events p through chain, to the client.
func (s *streamRelay) passThrough(chain []streamFilter, p []byte) error {
	for _, f := range chain {
		if len(p) == 0 {
			break
		}
		out, err := f.events(p, true)
		if err != nil {
			return err
		}
		p = out
	}
	if len(p) > 0 {
		if _, err := s.cw.write(p); err != nil {
			return errClientWrite
		}
	}
	return nil
}

// splice makes a continuation's events the stream's own: its text, as
// text events in the client's dialect, once it is known not to repeat
// the answer so far; everything else it sends (its head, its finish,
// its usage, its terminator) is read, not relayed.
type splice struct {
	mode    lifecycle.ContinueMode
	trimmed string // the whitespace an Anthropic prefill could not end with
	to      target
	cause   lifecycle.BreakCause
	input   int64 // an estimate of its prompt's growth: the answer so far
	// pending is its text held until the overlap is decided.
	pending []byte
	decided bool
	settled bool
}

// events turns the continuation's whole events p, described by marks,
// into the stream's own.
func (sp *splice) events(s *streamRelay, p []byte, marks []protocol.EventMark) ([]byte, error) {
	out := s.out[:0]
	for _, m := range marks {
		if m.Tool {
			// The continuation began a tool call: no text splices it.
			s.out = out
			return out, upstreamEnd("continuation_unspliceable", fmt.Sprintf("provider %s began a tool call in a continuation", sp.to.provider.name))
		}
		if len(m.Text) > 0 {
			out = sp.text(s, out, m.Text, false)
		}
	}
	s.out = out
	return out, nil
}

// text passes on the continuation's text t, held at first until the
// overlap with the answer so far is decided (final: no more is coming).
func (sp *splice) text(s *streamRelay, out, t []byte, final bool) []byte {
	if !sp.decided {
		sp.pending = append(sp.pending, t...)
		sofar := string(s.answer.soFar())
		k, decided := lifecycle.SpliceOverlap(sofar, string(sp.pending), final)
		if !decided {
			return out
		}
		if k == 0 && sp.mode == lifecycle.ContinuePrefill && sp.trimmed != "" && bytes.HasPrefix(sp.pending, []byte(sp.trimmed)) {
			k = len(sp.trimmed) // the whitespace the prefill could not end with
		}
		sp.decided = true
		t = sp.pending[k:]
	}
	if len(t) == 0 {
		return out
	}
	out = s.answer.appendTextEvent(out, t)
	s.answer.addText(t)
	return out
}

// flushPending sends the text still held, the continuation having
// ended.
func (sp *splice) flushPending(s *streamRelay) {
	if sp.decided || len(sp.pending) == 0 {
		return
	}
	s.out = sp.text(s, s.out[:0], nil, true)
	_ = s.passOwn(s.out)
}

// settle counts the continuation's usage, once: its output and input,
// as its provider reported them or as relayed.
func (sp *splice) settle(s *streamRelay) {
	if sp.settled {
		return
	}
	sp.settled = true
	f := s.src.check.Facts()
	out, known := f.Tokens()
	if s.cut {
		// Cut at the limit: billed what it relayed.
		out, known = int(s.relayedOut-s.capBase), false
	}
	in, inKnown := f.InputTokens()
	if !inKnown {
		in = s.x.inputTokens + sp.input/4
	}
	var cached int64
	if inKnown {
		cached = min(f.CachedTokens(), in)
	}
	a := &s.answer
	a.contTokens += out
	a.contKnown = a.contKnown && known
	a.contInput += in
	// Billed on its own: the prompt again, with the answer so far.
	s.g.recordContinuation(s.x, sp.to, true, price.Usage{Input: in - cached, CachedInput: cached, Output: int64(out)}, inKnown, known)
}

// continuePrompt asks a model without prefill to go on from its own
// message.
const continuePrompt = "Your previous message was cut off. Continue it exactly from where it stopped: write only the rest of it, without repeating any of it, without any preamble, as if no interruption had happened."

// contBody is the continuation call's body for t: the request as t
// would get it, with the text so far as the assistant's message (a
// prefill), or that message and a prompt to continue. trimmed is the
// whitespace an Anthropic prefill may not end with, which the model's
// text then starts with.
func contBody(out *outgoing, t target, mode lifecycle.ContinueMode, sofar string, sofarTokens int) (body []byte, trimmed string, err error) {
	raw, err := io.ReadAll(out.reader(t))
	if err != nil {
		return nil, "", err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, "", err
	}
	var msgs []json.RawMessage
	if err := json.Unmarshal(m["messages"], &msgs); err != nil {
		return nil, "", err
	}
	msg := func(role, text string) json.RawMessage {
		b, _ := json.Marshal(map[string]string{"role": role, "content": text})
		return b
	}
	anthropic := t.provider.dialect == protocol.Anthropic
	if mode == lifecycle.ContinuePrefill {
		pre := sofar
		if anthropic {
			pre = strings.TrimRight(sofar, " \t\r\n")
			trimmed = sofar[len(pre):]
		}
		msgs = append(msgs, msg("assistant", pre))
		if !anthropic {
			m["continue_final_message"] = json.RawMessage("true")
			m["add_generation_prompt"] = json.RawMessage("false")
		}
	} else {
		msgs = append(msgs, msg("assistant", sofar), msg("user", continuePrompt))
	}
	if m["messages"], err = json.Marshal(msgs); err != nil {
		return nil, "", err
	}
	m["stream"] = json.RawMessage("true")
	if !anthropic {
		m["stream_options"] = json.RawMessage(`{"include_usage":true}`)
	}
	// What is left of the answer's output cap.
	for _, k := range []string{"max_tokens", "max_completion_tokens"} {
		if n, err := strconv.Atoi(string(m[k])); err == nil && n > 0 {
			m[k] = json.RawMessage(strconv.Itoa(max(1, n-sofarTokens)))
		}
	}
	body, err = json.Marshal(m)
	return body, trimmed, err
}

// wantsUsage: the OpenAI client asked for the usage chunk itself.
func (s *streamRelay) wantsUsage() bool {
	if s.x.cross != nil && s.translated {
		return s.x.cross.includeUsage
	}
	c := &s.x.cont
	if c.out == nil || c.out.body == nil {
		return !s.x.injectedUsage
	}
	raw, err := io.ReadAll(c.out.body.Reader(protocol.Edit{Model: c.out.body.Model}))
	if err != nil {
		return false
	}
	var v struct {
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	return json.Unmarshal(raw, &v) == nil && v.StreamOptions.IncludeUsage
}

// record sets what the stream generated on the exchange, for the key's
// budget and the log, however it ended: the committed call's usage as
// its provider reported it or as relayed, plus the continuations'.
func (s *streamRelay) record() {
	x, a := s.x, &s.answer
	if s.src.splice != nil {
		s.src.splice.settle(s)
	}
	f := s.src.check.Facts()
	if a.origKept {
		f = &a.orig
	}
	x.outputTokens, x.usageKnown = f.Tokens()
	if s.cut && !a.origKept {
		// Cut at the limit: charged and billed what was relayed,
		// whatever the provider said it generated.
		x.outputTokens, x.usageKnown = int(s.relayedOut), false
	}
	x.reportedInput, _ = f.InputTokens()
	x.reportedCached = f.CachedTokens()
	x.finish = f.FinishReason()
	if a.origKept {
		x.outputTokens += a.contTokens
		x.usageKnown = x.usageKnown && a.contKnown
		if a.finish != "" {
			x.finish = a.finish
		}
	}
	if s.cut {
		x.finish = "length"
	}
}
