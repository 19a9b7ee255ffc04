package mock

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

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
}

// encoder renders one call's response; tokens is the count generated and
// capped says max_tokens cut the reply short.
type encoder interface {
	body(text string, tokens int, capped bool) []byte
	streamHead() []byte // SSE bytes due before the first token
	streamToken(tok string) []byte
	streamTail(tokens int, capped bool) []byte
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
		writeJSON(w, http.StatusBadRequest, proto.errorJSON(http.StatusBadRequest, err.Error()))
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
	if p.fail != nil && p.fail.Early() {
		return injectEarly(ctx, w, proto, p.fail, s.cfg.TimeScale != 0 && s.cfg.TimeScale != 1)
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
	g := &gen{s: s, ctx: ctx, w: w, p: p, enc: c.enc(p), n: p.tokens, echo: c.echo}
	if s.answers != nil && !c.noTokens {
		s.rngMu.Lock()
		g.reply = s.answers.reply(promptText(body))
		s.rngMu.Unlock()
		if g.reply != nil {
			g.n = len(g.reply)
		}
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
	} else if c.maxTokens > 0 && c.maxTokens < g.n {
		g.n, g.capped = c.maxTokens, true
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
	s      *Server
	ctx    context.Context
	w      http.ResponseWriter
	p      *plan
	enc    encoder
	n      int
	capped bool
	opened bool   // the stream's headers and head are sent
	echo   string // text before the generated tokens (tools.go)
	// reply is a scripted answer's words (answers.go); nil: generated.
	reply []string
}

// token is the i-th token of the reply.
func (g *gen) token(i int) string {
	if i < len(g.reply) {
		return g.reply[i]
	}
	return word(g.p.rng)
}

// tpot is re-read per token because the batch changes while we generate.
func (g *gen) tpot() time.Duration { return g.s.sched.tpot(g.s.cfg.TPOT, g.p.tpotScale) }

func (g *gen) failKind() string {
	if g.p.fail == nil {
		return ""
	}
	return g.p.fail.Kind
}

func (g *gen) whole() outcome {
	var text strings.Builder
	text.WriteString(g.echo)
	for i := range g.n {
		if i > 0 && !wait.Sleep(g.ctx, g.tpot()) {
			return outCancelled
		}
		text.WriteString(g.token(i))
	}
	body := g.enc.body(text.String(), g.n, g.capped)
	switch g.failKind() {
	case FailMalformed:
		writeJSON(g.w, http.StatusOK, garbageBody(body))
		return outInjected
	case FailTruncate, FailReset:
		g.w.Header().Set("Content-Type", "application/json")
		g.w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		g.w.WriteHeader(http.StatusOK)
		g.w.Write(body[:len(body)/2])
		http.NewResponseController(g.w).Flush()
		abort(g.w, g.failKind() == FailReset)
		return outInjected
	}
	writeJSON(g.w, http.StatusOK, body)
	return outCompleted
}

// open sends a stream's headers and head.
func (g *gen) open() bool {
	g.headers()
	g.opened = true
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
	cut := -1
	switch g.failKind() {
	case FailMalformed:
		g.send(garbageEvent(g.enc.streamToken(word(g.p.rng))))
		return outInjected
	case FailReset:
		cut = min(g.p.fail.AfterTokens, g.n)
	case FailTruncate:
		cut = g.p.fail.AfterTokens
		if cut == 0 {
			cut = g.n / 2
		}
		cut = min(cut, g.n)
	}
	if !g.opened && !g.send(g.enc.streamHead()) {
		return outCancelled
	}
	if g.echo != "" && !g.send(g.enc.streamToken(g.echo)) {
		return outCancelled
	}
	for i := range g.n + 1 {
		if i == cut {
			abort(g.w, g.failKind() == FailReset)
			return outInjected
		}
		if i == g.n {
			break // the cut may fall after the last token, before the tail
		}
		if i > 0 && !wait.Sleep(g.ctx, g.tpot()) {
			return outCancelled
		}
		if !g.send(g.enc.streamToken(g.token(i))) {
			return outCancelled
		}
	}
	if !g.send(g.enc.streamTail(g.n, g.capped)) {
		return outCancelled
	}
	return outCompleted
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

// garbageEvent is one SSE event whose data is cut mid-JSON.
func garbageEvent(ev []byte) []byte {
	return append(bytes.TrimRight(ev[:len(ev)/2:len(ev)/2], "\n"), "\n\n"...)
}
