package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	"github.com/sluice-gw/sluice/internal/server/runner"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
	"github.com/sluice-gw/sluice/internal/wire/translate"
)

// Mid-stream continuation: a stream that breaks after its first token
// has gone to the client (a cut, a stall, a malformed event, an error
// event) is continued on another target, and the client gets one stream
// with the whole answer exactly once. The core decides whether and
// where (lifecycle.Engine.Continue, through runner.Call.Continue); the
// relay carries it out as a stage after its read loop (carryOn), before
// its one end path:
//
//   - the whole events read before the break go out first, as on any
//     failure; an error event from the provider is held back
//     (textFilter), and goes out only if nothing can continue;
//   - the continuation call asks the target to go on from the text the
//     client has had (textFilter's), with an assistant prefill where the
//     target takes one, else a continuation prompt, whose answer may
//     repeat the last words: the repeat is trimmed
//     (lifecycle.Overlap);
//   - the continuation's events, in its provider's dialect, are read for
//     their text, finish reason and usage, and written as the stream's
//     own events in the client's dialect, so no translation is needed;
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
}

// capable: the request's model has a target that can continue an
// answer (config), so a stall is worth cutting.
func (c *contState) capable() bool {
	if c.m == nil {
		return false
	}
	for _, k := range c.m.caps {
		if k.Mode() != lifecycle.ContinueNone {
			return true
		}
	}
	return false
}

// contResult is how a continued stream ended, for the end path.
type contResult struct {
	tokens int
	known  bool
	finish string
}

// errContinued: the stream broke and was continued to its end.
var errContinued = &streamEnd{outcome: outcomeOK, reason: "continued"}

// breakOf says whether err, the end of the read loop, is a break that a
// continuation may mend, and its cause.
func (s *streamRelay) breakOf(err error) (lifecycle.BreakCause, bool) {
	t := &s.filters.text
	if !t.on || err == errClientWrite || err == errClientGone || s.r.Context().Err() != nil || timedOut(s.ctx) {
		return 0, false
	}
	complete := t.finished || s.filters.usage.u.FinishReason() != ""
	if s.filters.idle.fired.Load() {
		return lifecycle.BreakStall, true
	}
	switch e, _ := err.(*streamEnd); {
	case err == nil:
		return lifecycle.BreakCut, !complete
	case e == nil:
		// A cut after the finish reason lost nothing a continuation
		// could add: it fails as before.
		return lifecycle.BreakCut, !complete
	case e.reason == protocol.StreamErrorEvent:
		return lifecycle.BreakErrorEvent, true
	case e.reason == protocol.StreamUnterminated:
		return lifecycle.BreakCut, !complete
	}
	return lifecycle.BreakMalformed, true
}

// carryOn is the continuation stage: err ended the read loop; it
// returns what the end path gets, errContinued when the stream was
// continued to its end.
func (s *streamRelay) carryOn(err error) error {
	cause, broken := s.breakOf(err)
	if !broken {
		return err
	}
	t := &s.filters.text
	// Every whole event read before the break goes out first.
	if err != errClientWrite && s.ready > 0 {
		if s.send(s.ready, true) == errClientWrite {
			return errClientWrite
		}
	}
	cs := &s.x.cont
	if s.midEvent || t.parts || cs.call == nil || cs.m == nil {
		return s.giveUp(err)
	}
	// The broken call is done with: cancel it at its provider now.
	s.cancel()
	caps := append([]lifecycle.ContinueCaps(nil), cs.m.caps...)
	orig, from := err, s.p.name
	done := 0
	var res contResult
	// What the broken call generated: the text events the client got (a
	// broken stream's usage, if any, is message_start's opening count,
	// or comes at the end it never reached), or the provider's count
	// when it said more.
	first, firstKnown := s.filters.usage.u.Tokens()
	if !firstKnown || first < t.deltas {
		first, firstKnown = t.deltas, false
	}
	res.tokens = first
	for {
		d := cs.call.Continue(cause, caps, done, t.tool)
		if !d.OK {
			s.g.log.Debug("stream not continued", "provider", from, "cause", cause.String(), "why", d.Why)
			break
		}
		tg := cs.m.targets[d.Target]
		caps[d.Target] = lifecycle.ContinueCaps{} // once per answer
		done++
		c := s.continueOn(tg, d.Mode, res.tokens)
		if c.called {
			// Billed on its own: the prompt again, with the answer so far.
			s.x.contUses = append(s.x.contUses, contUse{model: tg.model, input: s.x.inputTokens + int64(res.tokens), output: int64(c.tokens)})
		}
		res.tokens += c.tokens
		if c.wrote {
			from = tg.provider.name
		}
		if c.clientErr {
			return errClientWrite
		}
		if c.finish != "" {
			res.finish, res.known = c.finish, c.known && firstKnown
			s.contRes = res
			cs.continued = strconv.Itoa(done) + "; cause=" + cause.String() + "; to=" + tg.provider.name + "; mode=" + d.Mode.String()
			s.w.Header().Set(http.TrailerPrefix+"X-Sluice-Continuation", cs.continued)
			if _, err := s.cw.write(s.ending(res)); err != nil {
				return errClientWrite
			}
			return errContinued
		}
		if c.wrote {
			cause = c.cause // it broke too: continue from there
		}
	}
	return s.giveUp(orig)
}

// giveUp ends a stream that could not be continued: with the provider's
// own error event when it sent one, else with err's.
func (s *streamRelay) giveUp(err error) error {
	if ev := s.filters.text.errEvent; ev != nil {
		s.filters.text.errEvent = nil
		// Held back before the scrub filter saw it: it is scrubbed
		// here, as every provider byte is on its way to the client.
		s.p.scrub.scrub(ev)
		if _, werr := s.cw.write(ev); werr != nil {
			return errClientWrite
		}
		return upstreamEnd(protocol.StreamErrorEvent, "")
	}
	return err
}

// contCall is one continuation call's result: wrote, its text reached
// the client; finish, its finish reason ("": it did not finish); cause,
// how it broke; tokens its output.
type contCall struct {
	// called: the provider answered the call with a stream.
	called                  bool
	wrote, known, clientErr bool
	finish                  string
	cause                   lifecycle.BreakCause
	tokens                  int
}

// continuePrompt asks a model without prefill to go on from its own
// message.
const continuePrompt = "Your previous message was cut off. Continue it exactly from where it stopped: write only the rest of it, without repeating any of it, without any preamble, as if no interruption had happened."

// overlapWindow is how much of a prompted continuation's text is held
// before its repeat of the text so far is judged: a model that repeats
// its last words repeats fewer bytes than this.
const overlapWindow = 256

// continueOn makes one continuation call to t and relays its text.
func (s *streamRelay) continueOn(t target, mode lifecycle.ContinueMode, sofarTokens int) (r contCall) {
	x, tf := s.x, &s.filters.text
	sofar := string(tf.soFar())
	body, trimmed, err := contBody(x.cont.out, t, mode, sofar, sofarTokens)
	if err != nil {
		return r
	}
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	dl, ok := s.ctx.Deadline()
	if !ok {
		dl = time.Now().Add(t.provider.timeout)
	}
	req, err := s.g.upstreamRequest(ctx, s.r, t, t.provider.baseURL, x.endpoint, x.cont.out, dl)
	if err != nil {
		return r
	}
	req.Body, req.ContentLength, req.GetBody = io.NopCloser(bytes.NewReader(body)), int64(len(body)), nil
	x.attempts++
	resp, err := s.g.roundTripper(t.provider).RoundTrip(req)
	if err != nil {
		return r
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !isEventStream(resp.Header) {
		// A refused prefill, an overload: never shown to the client.
		io.Copy(io.Discard, io.LimitReader(resp.Body, errorBodyLimit))
		return r
	}
	r.called = true
	var stalled atomic.Bool
	var gaps lifecycle.Gaps
	deadline := func() time.Duration { return min(lifecycle.StallDeadline(s.g.stall, gaps), s.g.streamIdle) }
	timer := time.AfterFunc(deadline(), func() { stalled.Store(true); cancel() })
	defer timer.Stop()

	pending := []byte(nil)
	decided := false
	emit := func(txt []byte, final bool) bool {
		if !decided {
			pending = append(pending, txt...)
			if mode == lifecycle.ContinuePrompt && len(pending) < overlapWindow && !final {
				return true
			}
			decided = true
			k := 0
			if mode == lifecycle.ContinuePrompt {
				tail := tf.soFar()
				if len(tail) > 4*overlapWindow {
					tail = tail[len(tail)-4*overlapWindow:]
				}
				k = lifecycle.Overlap(string(tail), string(pending))
			} else if trimmed != "" && bytes.HasPrefix(pending, []byte(trimmed)) {
				k = len(trimmed) // the whitespace the prefill could not end with
			}
			txt = pending[k:]
		}
		if len(txt) == 0 {
			return true
		}
		ev := s.textEvent(txt)
		t.provider.scrub.scrub(ev)
		if _, err := s.cw.write(ev); err != nil {
			r.clientErr = true
			return false
		}
		tf.addText(txt)
		r.wrote = true
		return true
	}

	var held []byte
	buf := make([]byte, 4<<10)
	last := time.Now()
	usage, deltas := -1, 0
	ended := false
	for !ended {
		n, rerr := resp.Body.Read(buf)
		timer.Stop()
		if now := time.Now(); n > 0 {
			gaps.Add(now.Sub(last))
			last = now
		}
		held = append(held, buf[:n]...)
		evs, used := translate.ParseEvents(held)
		held = held[:copy(held, held[used:])]
		for _, ev := range evs {
			e := readContEvent(t.provider.dialect, ev)
			switch {
			case e.bad:
				r.cause = lifecycle.BreakMalformed
				ended = true
			case e.err:
				r.cause = lifecycle.BreakErrorEvent
				ended = true
			}
			if ended {
				break
			}
			if len(e.text) > 0 {
				deltas++
				if !emit(e.text, false) {
					return r
				}
			}
			if e.finish != "" {
				r.finish = e.finish
			}
			if e.usage >= 0 {
				usage = e.usage
			}
			if e.done {
				ended = true
				break
			}
		}
		if rerr != nil {
			if stalled.Load() {
				r.cause = lifecycle.BreakStall
			}
			break
		}
		timer.Reset(deadline())
	}
	if !decided && len(pending) > 0 && !emit(nil, true) {
		return r
	}
	if stalled.Load() {
		r.cause = lifecycle.BreakStall
	}
	if r.cause != lifecycle.BreakCut {
		r.finish = "" // broken: what it said of its finish does not hold
	}
	r.tokens, r.known = deltas, false
	if usage >= 0 {
		r.tokens, r.known = usage, true
	}
	if !r.wrote && r.finish != "" && len(pending) == 0 && deltas == 0 {
		// It finished at once, with nothing to add: the answer was whole.
		r.wrote = true
	}
	return r
}

// contEvent is what one of a continuation's events carries.
type contEvent struct {
	text      []byte
	finish    string
	usage     int // -1: none
	done, err bool
	bad       bool
}

// readContEvent reads an event of a continuation stream, in dialect d.
func readContEvent(d protocol.Dialect, ev translate.Event) (e contEvent) {
	e.usage = -1
	data := bytes.TrimSpace(ev.Data)
	if d == protocol.OpenAI && bytes.Equal(data, []byte("[DONE]")) {
		e.done = true
		return e
	}
	if len(data) == 0 {
		return e
	}
	if !json.Valid(data) {
		e.bad = true
		return e
	}
	if d == protocol.Anthropic {
		var v struct {
			Type  string `json:"type"`
			Delta struct {
				Type       string `json:"type"`
				Text       string `json:"text"`
				StopReason string `json:"stop_reason"`
			} `json:"delta"`
			Usage *struct {
				OutputTokens *int `json:"output_tokens"`
			} `json:"usage"`
		}
		_ = json.Unmarshal(data, &v)
		switch {
		case ev.Name == "error" || v.Type == "error":
			e.err = true
		case v.Type == "content_block_delta" && v.Delta.Type == "text_delta":
			e.text = []byte(v.Delta.Text)
		case v.Type == "message_delta":
			e.finish = v.Delta.StopReason
			if v.Usage != nil && v.Usage.OutputTokens != nil {
				e.usage = *v.Usage.OutputTokens
			}
		case v.Type == "message_stop":
			e.done = true
		}
		return e
	}
	var v struct {
		Error   json.RawMessage `json:"error"`
		Choices []struct {
			Delta struct {
				Content string `json:"content"`
			} `json:"delta"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Usage *struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	_ = json.Unmarshal(data, &v)
	if len(v.Error) > 0 && string(v.Error) != "null" {
		e.err = true
		return e
	}
	if len(v.Choices) > 0 {
		e.text = []byte(v.Choices[0].Delta.Content)
		if f := v.Choices[0].FinishReason; f != nil {
			e.finish = *f
		}
	}
	if v.Usage != nil {
		e.usage = v.Usage.CompletionTokens
	}
	return e
}

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

// textEvent is one text delta as the stream's own event, in the client's
// dialect.
func (s *streamRelay) textEvent(txt []byte) []byte {
	tf := &s.filters.text
	q, _ := json.Marshal(string(txt))
	if tf.dialect == protocol.Anthropic {
		var b []byte
		if !tf.open {
			if tf.deltas > 0 || tf.block > 0 {
				tf.block++
			}
			b = append(b, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":"...)
			b = strconv.AppendInt(b, int64(tf.block), 10)
			b = append(b, ",\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"...)
			tf.open = true
		}
		b = append(b, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":"...)
		b = strconv.AppendInt(b, int64(tf.block), 10)
		b = append(b, ",\"delta\":{\"type\":\"text_delta\",\"text\":"...)
		b = append(b, q...)
		return append(b, "}}\n\n"...)
	}
	b := s.chunkHead()
	b = append(b, `"choices":[{"index":0,"delta":{"content":`...)
	b = append(b, q...)
	return append(b, "},\"finish_reason\":null}]}\n\n"...)
}

// chunkHead begins an OpenAI chunk as the stream's own: its id, created
// and model.
func (s *streamRelay) chunkHead() []byte {
	h := s.filters.text.head[:s.filters.text.headN]
	b := []byte(`data: {"id":`)
	b = strconv.AppendQuote(b, jsonString(h, "id"))
	b = append(b, `,"object":"chat.completion.chunk","created":`...)
	b = strconv.AppendInt(b, int64(jsonInt(h, []byte(`"created":`))), 10)
	b = append(b, `,"model":`...)
	b = strconv.AppendQuote(b, jsonString(h, "model"))
	return append(b, ',')
}

// ending ends a continued stream in the client's dialect: the last
// attempt's finish reason, the summed usage, the terminator.
func (s *streamRelay) ending(res contResult) []byte {
	tf := &s.filters.text
	if tf.dialect == protocol.Anthropic {
		var b []byte
		if tf.open {
			b = append(b, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":"...)
			b = strconv.AppendInt(b, int64(tf.block), 10)
			b = append(b, "}\n\n"...)
		}
		b = append(b, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"...)
		b = strconv.AppendQuote(b, translate.StopReason(res.finish))
		b = append(b, ",\"stop_sequence\":null},\"usage\":{\"output_tokens\":"...)
		b = strconv.AppendInt(b, int64(res.tokens), 10)
		return append(b, "}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"...)
	}
	b := s.chunkHead()
	b = append(b, `"choices":[{"index":0,"delta":{},"finish_reason":`...)
	b = strconv.AppendQuote(b, translate.FinishReason(res.finish))
	b = append(b, "}]}\n\n"...)
	if s.x.cont.wantsUsage() {
		b = append(b, s.chunkHead()...)
		b = append(b, `"choices":[],"usage":{"prompt_tokens":`...)
		b = strconv.AppendInt(b, s.x.inputTokens, 10)
		b = append(b, `,"completion_tokens":`...)
		b = strconv.AppendInt(b, int64(res.tokens), 10)
		b = append(b, `,"total_tokens":`...)
		b = strconv.AppendInt(b, s.x.inputTokens+int64(res.tokens), 10)
		b = append(b, "}}\n\n"...)
	}
	return append(b, "data: [DONE]\n\n"...)
}

// wantsUsage: the OpenAI client asked for the usage chunk itself.
func (c *contState) wantsUsage() bool {
	if c.out == nil || c.out.body == nil {
		return false
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
