package gateway

import (
	"strconv"

	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// Output caps: an answer is relayed up to its request's output limit
// (runner.Call.OutputLimit, lifecycle.Engine.OutputLimit: its max_tokens,
// or the model's default without one, for all its answers, plus a
// margin), whatever its provider does, streamed or whole. What is
// relayed is counted by its meaning, never by what the provider says it
// generated, so a provider that ignores max_tokens, or reports a count
// it did not keep to, is cut all the same.
//
// A stream is counted as it passes, by its events
// (protocol.StreamFacts.Relayed, as each event's mark has it):
//
//   - the events up to the one that would take the count past the limit
//     go out whole; that one and all after it do not, and the provider's
//     call is cancelled (the relay's end closes its body);
//   - the stream ends as a length stop in the client's dialect, after
//     the events already relayed: OpenAI's finish_reason "length" (each
//     of n answers'), and its usage chunk when the client asked for one,
//     and [DONE]; Anthropic's open block closed, message_delta with
//     stop_reason "max_tokens", message_stop; a completion's text chunk
//     with finish_reason "length"; the Responses API's
//     response.incomplete with reason max_output_tokens; a bridged
//     Responses request gets the chat ending, which the bridge writes as
//     that;
//   - a stream cut so is no failure: the provider answered, and what a
//     client asked for is not its health; it is never continued;
//   - the request is charged, and its call billed, what was relayed
//     (Relayed's count), with reason output_cap in the log.
//
// A whole answer (relayWhole: held up to maxHeldAnswer, 4 MiB, before
// its client has a byte) is cut by protocol.CutAnswer, in the client's
// API once it is in it (translated, or from a native codec's Anthropic
// bytes, or the chat answer a bridged Responses request is given, which
// the bridge then writes as response.incomplete):
//
//   - its texts are counted in the order the model generated them
//     (reasoning, text, refusal, then calls) by tokens.Output: in the
//     upstream model's own encoding when Sluice has it (OpenAI's
//     models), else by a floor, a token a word (a pre-tokenizer piece)
//     or a token for each BytesPerToken bytes, which no subword
//     tokenizer counts more than, as a stream's token an event;
//   - it is cut where a token ends (a piece ends, or inside a long
//     piece at a rune boundary), to the limit shared among its n
//     choices; a call, and signed or encrypted reasoning, is relayed
//     whole or not at all (protocol/answercut.go says why), and what
//     follows the cut goes;
//   - it ends as its API's own length stop: finish_reason "length",
//     stop_reason "max_tokens", status "incomplete" for
//     max_output_tokens, with its usage's output count what it holds;
//     a declared structured output's verdict becomes invalid;
//   - as a stream's, the cut is no failure, and it is charged and
//     billed what it holds (its call's record, ledger.go, the output's
//     source estimated), with reason output_cap in the log.
//
// An answer past maxHeldAnswer is relayed as it arrives (relayLarge)
// and not cut: its bytes have gone before its end, where a cut would be
// written, is known. Its usage is read as before, the provider's.
//
// A provider that keeps to max_tokens is never cut, nor an answer of it
// changed by a byte: a stream relays at most max_tokens by its count (a
// token an event at most, and far fewer than BytesPerToken bytes a
// token), and a whole answer counts no more than its provider does (in
// the model's own encoding, what it counts of the same text; by the
// floor, less).

// reasonOutputCap is the log's reason for an answer cut at its limit.
const reasonOutputCap = "output_cap"

// errOutputCap ends a stream's read loop when its output reached the
// request's limit: the end path writes the length stop (mend).
var errOutputCap = &streamEnd{outcome: outcomeOK, reason: reasonOutputCap, kind: protocol.Upstream}

// capped cuts the whole events p holds, whose marks are in (the first
// beginning at buf offset from), at the first whose output would take
// the stream past its limit. It returns what goes on, those events'
// marks, and errOutputCap when it cut.
func (s *streamRelay) capped(p []byte, in []protocol.EventMark, from int) ([]byte, []protocol.EventMark, error) {
	limit := s.x.outputLimit
	if limit <= 0 || len(in) == 0 {
		return p, in, nil
	}
	var err error
	for j := range in {
		if s.capBase+int64(in[j].Relayed) <= limit {
			continue
		}
		cut := from
		if j > 0 {
			cut = int(in[j-1].End - s.src.off)
		}
		p, in, err = p[:max(0, min(cut, len(p)))], in[:j], errOutputCap
		s.cut = true
		break
	}
	if len(in) > 0 {
		s.relayedOut = s.capBase + int64(in[len(in)-1].Relayed)
		s.nextSeq = in[len(in)-1].NextSeq
	}
	return p, in, err
}

// capEnding is the length stop that ends a stream cut at its limit, in
// the client's dialect and endpoint's shape, after what was relayed.
func (s *streamRelay) capEnding() []byte {
	a, x := &s.answer, s.x
	a.takeIdentity()
	f := a.client.Facts()
	in, ok := s.src.check.Facts().InputTokens()
	if a.origKept {
		in, ok = a.orig.InputTokens()
	}
	if !ok {
		in = x.inputTokens
	}
	u := answerUsage{input: in + a.contInput, output: s.relayedOut}
	b := s.out[:0]
	switch {
	case x.endpoint.IsResponses():
		b = append(b, "event: response.incomplete\ndata: {\"type\":\"response.incomplete\",\"sequence_number\":"...)
		b = strconv.AppendInt(b, s.nextSeq, 10)
		b = append(b, `,"response":{"id":`...)
		b = jsonQuote(b, []byte(a.id))
		b = append(b, `,"object":"response","created_at":`...)
		b = strconv.AppendInt(b, a.created, 10)
		b = append(b, `,"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"model":`...)
		b = jsonQuote(b, []byte(a.model))
		b = append(b, `,"output":[],"usage":{"input_tokens":`...)
		b = strconv.AppendInt(b, u.input, 10)
		b = append(b, `,"output_tokens":`...)
		b = strconv.AppendInt(b, u.output, 10)
		b = append(b, `,"total_tokens":`...)
		b = strconv.AppendInt(b, u.input+u.output, 10)
		b = append(b, "}}}\n\n"...)
	case x.endpoint.Dialect == protocol.OpenAI && x.endpoint.Name == "completions":
		b = append(b, `data: {"id":`...)
		b = jsonQuote(b, []byte(a.id))
		b = append(b, `,"object":"text_completion","created":`...)
		b = strconv.AppendInt(b, a.created, 10)
		b = append(b, `,"model":`...)
		b = jsonQuote(b, []byte(a.model))
		b = append(b, `,"choices":[`...)
		for i := range max(int(x.choices), 1) {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"text":"","index":`...)
			b = strconv.AppendInt(b, int64(i), 10)
			b = append(b, `,"logprobs":null,"finish_reason":"length"}`...)
		}
		b = append(b, "]}\n\n"...)
		if s.wantsUsage() {
			b = a.usageChunk(b, u)
		}
		b = append(b, "data: [DONE]\n\n"...)
	case a.dialect == protocol.OpenAI:
		b = a.finishChunk(b, "length", max(int(x.choices), 1))
		if s.wantsUsage() {
			b = a.usageChunk(b, u)
		}
		b = append(b, "data: [DONE]\n\n"...)
	default:
		b = a.appendEnding(b, "length", f.FinishReason() != "", u, false)
	}
	s.out = b
	return b
}

// maxHeldAnswer bounds a whole answer held so that it can be cut at its
// output limit: as much as a translated one is held (maxTranslatedBody).
// A variable so that tests can make it small.
var maxHeldAnswer int64 = maxTranslatedBody

// heldWhole is how much of a whole answer is held before any of it goes
// to the client: all of one that generates output, up to maxHeldAnswer,
// so that it can be cut; of another (embeddings), wholeBodyLimit.
func heldWhole(x *exchange) int {
	if x.outputLimit > 0 {
		return int(max(maxHeldAnswer, wholeBodyLimit))
	}
	return wholeBodyLimit
}

// cutWhole cuts a whole answer, data, in the client's API, at the
// request's output limit; ok false when it is within it (data is then
// the client's as it is). n is the output the cut answer holds.
func (g *Gateway) cutWhole(x *exchange, a *attempt, data []byte) (out []byte, n int64, ok bool) {
	if x.outputLimit <= 0 {
		return data, 0, false
	}
	o := g.counts.tokens().Output(a.t.model, protocol.BytesPerToken)
	defer o.Close()
	out, n, ok = protocol.CutAnswer(x.endpoint, data, x.outputLimit, o)
	if ok && x.verdict == verdictValid {
		// The answer checked was whole; the client's is not. Its call is
		// not held invalid (x.invalid): what it generated was.
		x.verdict, x.invalidReason = verdictInvalid, "the answer was cut at the request's output limit (max_tokens)"
	}
	return out, n, ok
}
