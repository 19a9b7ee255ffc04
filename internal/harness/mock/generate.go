package mock

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-gw/sluice/internal/model/upstream"
	"github.com/sluice-gw/sluice/internal/wait"
)

// maxBody bounds a request body; far beyond any real prompt a test sends.
const maxBody = 32 << 20

// protocol is what the OpenAI and Anthropic wire formats do differently
// outside a response body.
type protocol interface {
	errorJSON(status int, msg string) []byte
	// overloadStatus is the code for a full queue (upstream.RefusalStatus).
	overloadStatus() int
	setHeaders(h http.Header, p *plan, c *call)
	// The 400s of faults.go, in the dialect's shape.
	contextError(prompt, window int) []byte
	contentFilterError() []byte
	prefillError() []byte
}

// call is one parsed generation request.
type call struct {
	model        string
	stream       bool
	promptTokens int
	maxTokens    int  // 0 = no cap
	noTokens     bool // embeddings: only TTFT, then the body
	enc          func(p *plan) encoder
	// tool is the tool the answer calls, echo the tool result its text
	// starts with (tools.go).
	tool *toolUse
	echo string
	// prompt is the text the answer's words derive from under
	// Config.Words prompt; prefilled says the request continues an
	// answer whose first skip words it holds (prefill.go).
	prompt    string
	prefilled bool
	skip      int
	// json is the JSON a structured output request's answer is, in place
	// of words; thinking: Anthropic thinking was enabled (structured.go).
	json     string
	thinking bool
}

// reply is a whole answer as an encoder writes it.
type reply struct {
	text string
	// args are the tool call's arguments as far as they got (all of
	// them unless capped cut them short); nil: the answer calls no tool.
	args *string
	// tokens is the count generated, text and arguments; capped says
	// max_tokens cut the answer short.
	tokens int
	capped bool
}

// encoder renders one call's response.
type encoder interface {
	body(r reply) []byte
	streamHead() []byte // SSE bytes due before the first token
	streamToken(tok string) []byte
	// toolHead opens the answer's tool call once its text is done, and
	// toolToken streams one piece of the call's arguments; the encoder
	// keeps what it needs to close the call in streamTail. Dialects
	// without tools return nil.
	toolHead() []byte
	toolToken(piece string) []byte
	// streamTail ends the stream: tokens is the count generated, text
	// and arguments, and capped says max_tokens cut the answer short.
	streamTail(tokens int, capped bool) []byte
	// ping is the dialect's keepalive event (Anthropic's ping), nil
	// where it has none.
	ping() []byte
}

// serveCall runs one generation request start to finish and counts it.
func (s *Server) serveCall(w http.ResponseWriter, r *http.Request, proto protocol, parse func([]byte) (*call, error)) {
	s.begin()
	defer func() {
		// The only panic expected is abort's http.ErrAbortHandler, which
		// is an injected failure that still has to reach net/http.
		if v := recover(); v != nil {
			s.end(outInjected)
			panic(v)
		}
	}()
	s.end(s.runCall(w, r, proto, parse))
}

func (s *Server) runCall(w http.ResponseWriter, r *http.Request, proto protocol, parse func([]byte) (*call, error)) outcome {
	body, err := readAll(w, r)
	if err != nil && r.Context().Err() != nil {
		return outCancelled // the client left while sending the body
	}
	if err != nil {
		s.record(r, body, "")
		status := http.StatusBadRequest
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			status = http.StatusRequestEntityTooLarge
		}
		writeJSON(w, status, proto.errorJSON(status, "reading request body: "+err.Error()))
		return outBadRequest
	}
	c, err := parse(body)
	if err != nil {
		s.record(r, body, "")
		b := proto.errorJSON(http.StatusBadRequest, err.Error())
		if re, ok := errors.AsType[*requestError](err); ok {
			b = re.body // the vendor's own (refuse.go)
		}
		writeJSON(w, http.StatusBadRequest, b)
		return outBadRequest
	}
	s.record(r, body, c.model)
	p, err := s.newPlan(r)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, proto.errorJSON(http.StatusBadRequest, err.Error()))
		return outBadRequest
	}
	proto.setHeaders(w.Header(), p, c)

	ctx := r.Context()
	if b := p.refusal(proto, c); b != nil {
		writeJSON(w, http.StatusBadRequest, b)
		return outBadRequest
	}
	if p.fail != nil && p.fail.Early() {
		return injectEarly(ctx, w, proto, p, c, s.cfg.TimeScale != 0 && s.cfg.TimeScale != 1)
	}
	if err := s.sched.acquire(ctx); err != nil {
		if err == errQueueFull {
			st := proto.overloadStatus()
			writeJSON(w, st, proto.errorJSON(st, "the server is overloaded: too many requests waiting"))
			return outRejected
		}
		return outCancelled
	}
	defer s.sched.release()
	g := &gen{s: s, ctx: ctx, w: w, p: p, enc: c.enc(p), n: p.tokens, echo: c.echo, words: p.rng}
	if s.answers != nil && !c.noTokens {
		s.rngMu.Lock()
		g.reply = s.answers.reply(promptText(body))
		s.rngMu.Unlock()
		if g.reply != nil {
			g.n = len(g.reply)
		}
	}
	if p.words == upstream.WordsPrompt {
		g.words = promptWords(c.prompt)
	}
	if c.json != "" {
		g.reply = jsonTokens(c.json)
		g.n = len(g.reply)
	}
	if c.prefilled {
		g.skipWords(c.skip)
	}
	// A hang with an end is silence before anything, headers included,
	// that then answers as usual (upstream.Failure.For).
	if f := p.fail; f != nil && f.Kind == FailHang && !wait.Sleep(ctx, f.Delay+f.For) {
		return outInjectedCancelled
	}
	// Unless EarlyHead is set, nothing, not even headers, goes out before
	// TTFT, so TTFT is also time to first byte whichever way a gateway
	// measures it.
	if c.stream && s.cfg.EarlyHead && !g.open() {
		return outCancelled
	}
	// Reading the prompt holds the slot too: a long prompt delays its
	// first token and keeps others waiting.
	if !wait.Sleep(ctx, p.ttft+s.cfg.Prefill(int64(c.promptTokens))) {
		return outCancelled
	}
	if c.noTokens {
		g.n = 0
	} else {
		g.fit(c)
	}
	if c.stream {
		return g.stream()
	}
	return g.whole()
}

func readAll(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	return io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
}

// gen produces one admitted call's reply, token by token.
type gen struct {
	s   *Server
	ctx context.Context
	w   http.ResponseWriter
	p   *plan
	enc encoder
	// n is the count of text tokens; args are the pieces of the tool
	// call's arguments that follow them, one token each (fit), nil for
	// no call.
	n      int
	args   []string
	capped bool
	opened bool   // the stream's headers and head are sent
	head   bool   // the stream's head is sent: a ping may follow it
	echo   string // text before the generated tokens (tools.go)
	// reply is a scripted answer's words (answers.go); nil: generated.
	reply []string
	// words is the source of generated words: the call's own, or the
	// prompt's (Config.Words).
	words *rand.Rand
	// faulted: a fault was played and the answer went on after it.
	faulted bool
}

// fit cuts the answer to max_tokens. The text comes first, then the
// tool call, whose arguments cost tokens as a JSON answer's text does
// (jsonTokens: eight bytes each). A cap inside the text ends the answer
// there, with no call; one inside the arguments ends it with the call
// cut short, its arguments not valid JSON, as a vendor's model stops
// mid-call (finish_reason length, stop_reason max_tokens, an incomplete
// response). A cap that leaves no room after the text is a cut too: the
// call would have come next.
func (g *gen) fit(c *call) {
	var pieces []string
	if c.tool != nil {
		pieces = jsonTokens(c.tool.args)
	}
	switch {
	case c.maxTokens > 0 && c.maxTokens < g.n:
		g.n, g.capped = c.maxTokens, true
		return
	case c.maxTokens > 0 && c.maxTokens-g.n < len(pieces):
		pieces, g.capped = pieces[:c.maxTokens-g.n], true
	}
	if len(pieces) > 0 {
		g.args = pieces
	}
}

// total is the count of tokens the answer generates: text and arguments.
func (g *gen) total() int { return g.n + len(g.args) }

// answer is the whole answer as far as it got.
func (g *gen) answer(text, args string) reply {
	r := reply{text: text, tokens: g.total(), capped: g.capped}
	if g.args != nil {
		r.args = &args
	}
	return r
}

// token is the i-th token of the reply.
func (g *gen) token(i int) string {
	if i < len(g.reply) {
		return g.reply[i]
	}
	return word(g.words)
}

// skipWords drops the first k words of the answer, which a prefill
// already holds: the answer is the rest, n-k words long.
func (g *gen) skipWords(k int) {
	k = min(k, g.n)
	if k >= len(g.reply) {
		for range k - len(g.reply) {
			word(g.words)
		}
		g.reply = nil
	} else {
		g.reply = g.reply[k:]
	}
	g.n -= k
}

// tpot is re-read per token because the batch changes while we generate.
func (g *gen) tpot() time.Duration { return g.s.sched.tpot(g.s.cfg.TPOT, g.p.tpotScale) }

func (g *gen) failKind() string {
	if g.p.fail == nil {
		return ""
	}
	return g.p.fail.Kind
}

// faultAt is the token before which the call's fault acts, -1 for none:
// after_tokens (half the answer for truncate and eof without one),
// never past the last token. A tool call's arguments are tokens too.
func (g *gen) faultAt() int {
	f := g.p.fail
	n := g.total()
	switch g.failKind() {
	case FailReset, FailStall, FailMalformed:
		return min(f.AfterTokens, n)
	case FailTruncate, FailEOF:
		if f.AfterTokens == 0 {
			return n / 2
		}
		return min(f.AfterTokens, n)
	}
	return -1
}

// done is how a call that reached its end went: injected if a fault was
// played on the way.
func (g *gen) done() outcome {
	if g.faulted || g.p.fail != nil {
		return outInjected
	}
	return outCompleted
}

func (g *gen) whole() outcome {
	f, kind := g.p.fail, g.failKind()
	at := g.faultAt()
	var text, args strings.Builder
	text.WriteString(g.echo)
	// cut is where the body is cut: the text's length, or, past the
	// text, the arguments' (cutArgs); -1 for nowhere in particular.
	cut, cutArgs := -1, false
	mark := func(i int) {
		if cutArgs = i > g.n; cutArgs {
			cut = args.Len()
		} else {
			cut = text.Len()
		}
	}
	ending := kind
	for i := range g.total() + 1 {
		if i == at {
			if kind == FailStall {
				// The headers go out, then the body is held back.
				g.wholeHead(0)
				if !g.flush() {
					return outCancelled
				}
				if o, over := g.stall(f, false); over {
					return o
				}
				if ending = f.Ending(); ending != upstream.ThenResume {
					mark(i)
					break
				}
			} else if kind != FailMalformed && f.AfterTokens > 0 {
				mark(i)
			}
		}
		if i == g.total() {
			break
		}
		if i > 0 && !wait.Sleep(g.ctx, g.tpot()) {
			return outCancelled
		}
		if i < g.n {
			text.WriteString(g.token(i))
		} else {
			args.WriteString(g.args[i-g.n])
		}
	}
	body := g.enc.body(g.answer(text.String(), args.String()))
	switch ending {
	case FailMalformed:
		writeJSON(g.w, http.StatusOK, garbageBody(body))
		return outInjected
	case FailTruncate, FailReset, FailEOF:
		n := len(body) / 2
		switch {
		case cut >= 0 && cutArgs:
			n = bodyCut(body, args.String()[:cut])
		case cut >= 0:
			n = bodyCut(body, text.String()[:cut])
		}
		length := len(body)
		if ending == FailEOF {
			length = 0 // chunked, so the short body ends cleanly
		}
		g.wholeHead(length)
		g.w.Write(body[:n])
		g.flush()
		if ending != FailEOF {
			abort(g.w, ending == FailReset)
		}
		return outInjected
	}
	if g.opened {
		g.w.Write(body)
		return g.done()
	}
	writeJSON(g.w, http.StatusOK, body)
	return g.done()
}

// wholeHead sends a whole answer's headers once, with a Content-Length
// when length is positive.
func (g *gen) wholeHead(length int) {
	if g.opened {
		return
	}
	g.opened = true
	g.w.Header().Set("Content-Type", "application/json")
	if length > 0 {
		g.w.Header().Set("Content-Length", strconv.Itoa(length))
	}
	g.w.WriteHeader(http.StatusOK)
}

// stall is a stall's silence: for its for, or until the client leaves.
// A stream whose encoding asks for keepalives sends them through it
// (stallStream). over reports that the call ended in it.
func (g *gen) stall(f *Failure, stream bool) (o outcome, over bool) {
	g.faulted = true
	if comment, ping := g.p.encoding.Keepalive(); stream && (comment || ping) {
		if !g.stallStream(f.For, comment, ping) {
			return outInjectedCancelled, true
		}
		return 0, false
	}
	if f.For == 0 {
		<-g.ctx.Done()
		return outInjectedCancelled, true
	}
	if !wait.Sleep(g.ctx, f.For) {
		return outInjectedCancelled, true
	}
	return 0, false
}

// stallStream is a stream's stall of d (0: until the client leaves) that
// is not silent: every keepEvery a comment, a ping, or both, and never a
// token, so a gateway can be tested on keepalives not being progress.
// Before the head a ping would break the dialect's order, so a comment
// goes in its place, as it does where the dialect has no ping. false:
// the client left.
func (g *gen) stallStream(d time.Duration, comment, ping bool) bool {
	every := max(g.p.keepEvery, time.Millisecond)
	var slept time.Duration
	for d == 0 || slept+every < d {
		if !wait.Sleep(g.ctx, every) {
			return false
		}
		slept += every
		var b []byte
		p := g.enc.ping()
		if ping && g.head && p != nil {
			b = p
		}
		if comment || b == nil {
			b = append(g.p.sse.comment(), b...)
		}
		if !g.send(b) {
			return false
		}
	}
	return wait.Sleep(g.ctx, d-slept)
}

// open sends a stream's headers and head.
func (g *gen) open() bool {
	g.headers()
	g.opened, g.head = true, true
	return g.send(g.enc.streamHead())
}

func (g *gen) headers() {
	h := g.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	g.w.WriteHeader(http.StatusOK)
}

func (g *gen) stream() outcome {
	if !g.opened {
		g.headers()
	}
	f, kind := g.p.fail, g.failKind()
	if kind == FailMalformed && f.AfterTokens == 0 && f.Then == "" {
		g.send(g.garbageEvent(g.enc.streamToken(word(g.p.rng))))
		return outInjected
	}
	at := g.faultAt()
	if at == 0 && kind == FailStall && !g.opened {
		// Silence before the first token: the headers and nothing else.
		if !g.flush() {
			return outCancelled
		}
		if o, over := g.fault(f); over {
			return o
		}
		at = -1
	}
	if !g.opened && !g.send(g.enc.streamHead()) {
		return outCancelled
	}
	g.head = true
	if g.echo != "" && !g.send(g.enc.streamToken(g.echo)) {
		return outCancelled
	}
	for i := range g.total() + 1 {
		if i == at {
			if o, over := g.fault(f); over {
				return o
			}
		}
		if i == g.total() {
			break // the fault may fall after the last token, before the tail
		}
		if i > 0 && !wait.Sleep(g.ctx, g.tpot()) {
			return outCancelled
		}
		var b []byte
		switch {
		case i < g.n:
			b = g.enc.streamToken(g.token(i))
		case i == g.n:
			b = append(g.enc.toolHead(), g.enc.toolToken(g.args[0])...)
		default:
			b = g.enc.toolToken(g.args[i-g.n])
		}
		if !g.send(b) {
			return outCancelled
		}
	}
	// The writer leaves out the end marker for no_done (newSSEWriter).
	if !g.send(g.enc.streamTail(g.total(), g.capped)) {
		return outCancelled
	}
	return g.done()
}

// fault plays the call's fault where the stream has got to. over
// reports that the call ended there, with o; otherwise the stream goes
// on.
func (g *gen) fault(f *Failure) (o outcome, over bool) {
	ending := f.Kind
	switch f.Kind {
	case FailStall:
		if o, over := g.stall(f, true); over {
			return o, true
		}
		ending = f.Ending()
	case FailMalformed:
		g.faulted = true
		if !g.send(g.garbageEvent(g.enc.streamToken(" malformed"))) {
			return outCancelled, true
		}
		ending = f.Ending()
	}
	switch ending {
	case upstream.ThenEOF:
		return outInjected, true // the handler returns: the body ends cleanly
	case upstream.ThenTruncate, upstream.ThenReset:
		abort(g.w, ending == upstream.ThenReset)
		return outInjected, true
	}
	return 0, false
}

// flush sends what is buffered (the headers, for a stall before the
// first byte of the body); false means the client has gone.
func (g *gen) flush() bool {
	return http.NewResponseController(g.w).Flush() == nil && g.ctx.Err() == nil
}

// send writes and flushes at once: incremental delivery is the point.
// A failed write means the client has gone.
func (g *gen) send(b []byte) bool {
	if _, err := g.w.Write(b); err != nil {
		return false
	}
	if err := http.NewResponseController(g.w).Flush(); err != nil {
		return false
	}
	return g.ctx.Err() == nil
}

// garbageBody is half a JSON document: the shape of a proxy cutting a
// body short or an upstream writing junk with a 200.
func garbageBody(body []byte) []byte {
	return append(body[:len(body)/2:len(body)/2], "\n<!-- upstream error -->"...)
}

// garbageEvent is one SSE event whose data is cut mid-JSON, ended as
// the encoding ends an event.
func (g *gen) garbageEvent(ev []byte) []byte {
	eol := g.p.encoding.LineEnd()
	return append(bytes.TrimRight(ev[:len(ev)/2:len(ev)/2], "\r\n"), eol+eol...)
}
