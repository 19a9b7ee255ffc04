package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/sluice-gw/sluice/internal/wire/sseenc"
)

// The wire matrix's providers: a fake that writes one 60-delta answer
// in a given encoding and breaks it as the cell says, and a healthy
// fallback that continues from a prefill.

const (
	wireDeltas = 60
	// wireBreakAt is where a cut, stall or malformed event comes: after
	// this many deltas.
	wireBreakAt = 20
	// wireFirstToken is the delay between the stream's head and its first
	// delta: a TTFT below it means the head was counted as a token.
	wireFirstToken = 100 * time.Millisecond
	wireGap        = 3 * time.Millisecond
	// wireStall is the gateway's stall deadline (floor and ceiling alike,
	// so it does not depend on the gaps): long enough that a busy
	// two-core box does not stall a healthy stream, short enough that a
	// stall cell costs about a second. wireStallHold is how long a stalled
	// fake stays silent before it sends the rest, so a stall not cut
	// shows as an answer after it; wireKeepalive the interval of comments
	// or pings during the stall when the encoding names none, under
	// wireStall as the rows' 300 ms are.
	wireStall     = 800 * time.Millisecond
	wireStallHold = 4 * time.Second
	wireKeepalive = 300 * time.Millisecond
	// wireHostileAt is the delta whose text a hostile row replaces.
	wireHostileAt = 14
)

// wireAnswer is the answer's deltas: words 2-10 carry characters whose
// escaping differs between encoders. hostile, if set, replaces the
// 15th delta's text.
func wireAnswer(hostile string) []string {
	extra := []string{"é", "😀", "/ok", `"q"`, "<b>&amp;"}
	d := make([]string, wireDeltas)
	for i := range d {
		w := fmt.Sprintf("w%d", i+1)
		if i >= 1 && i <= 9 {
			w += extra[(i-1)%len(extra)]
		}
		d[i] = w + " "
	}
	if hostile != "" {
		d[wireHostileAt] = hostile
	}
	return d
}

// wireToolArgs is a tool call's argument deltas.
func wireToolArgs() []string {
	d := make([]string, wireDeltas)
	d[0] = `{"q": "`
	for i := 1; i < len(d)-1; i++ {
		d[i] = fmt.Sprintf("arg%d ", i)
	}
	d[len(d)-1] = `"}`
	return d
}

// wireFake is the provider under test. It serves the OpenAI dialect on
// /chat/completions and the Anthropic one on /messages.
type wireFake struct {
	srv    *httptest.Server
	row    wireRow
	cs     wireCase
	deltas []string

	mu         sync.Mutex
	calls      int
	sent       int       // deltas written, over all calls
	stallStart time.Time // when the stall began
	resumed    bool      // the stall was waited out
	cancelled  bool      // the call ended early from the gateway's side
}

func (f *wireFake) snapshot() (calls, sent int, stallStart time.Time, resumed, cancelled bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls, f.sent, f.stallStart, f.resumed, f.cancelled
}

func newWireFake(row wireRow, cs wireCase, deltas []string) *wireFake {
	f := &wireFake{row: row, cs: cs, deltas: deltas}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	return f
}

// close ends the calls still open, so a fake that was never cancelled
// does not hold the cell.
func (f *wireFake) close() {
	f.srv.CloseClientConnections()
	f.srv.Close()
}

// sleep waits d, or until ctx ends: false then.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func seedOf(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

func (f *wireFake) serve(w http.ResponseWriter, r *http.Request) {
	var req struct {
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	json.NewDecoder(r.Body).Decode(&req)
	f.mu.Lock()
	f.calls++
	f.mu.Unlock()
	ant := strings.HasSuffix(r.URL.Path, "/messages")
	enc, err := sseenc.Parse(f.row.enc)
	if err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	st := enc.Stream(rand.New(rand.NewPCG(seedOf(f.row.name), seedOf(string(f.cs)))))
	ctx := r.Context()
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	var buf []byte
	put := func(b []byte) bool {
		if f.row.bytewise {
			for i := range b {
				w.Write(b[i : i+1])
				w.(http.Flusher).Flush()
			}
		} else {
			w.Write(b)
			w.(http.Flusher).Flush()
		}
		return ctx.Err() == nil
	}
	emit := func(name, data string) bool {
		buf = st.AppendEvent(buf[:0], name, []byte(data))
		return put(buf)
	}
	tool := f.cs == caseClientCutTool
	ev := oaiEvents{}
	if ant {
		emit("message_start", `{"type":"message_start","message":{"id":"msg_wire","type":"message","role":"assistant","model":"up-model","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":11,"output_tokens":1}}}`)
		if tool {
			emit("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_wire","name":"lookup","input":{}}}`)
		} else {
			emit("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
		}
		if !enc.NoPing() {
			emit("ping", `{"type":"ping"}`)
		}
	} else {
		if tool {
			emit("", ev.chunk(`{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_wire","type":"function","function":{"name":"lookup","arguments":""}}]}`, "null", ""))
		} else {
			emit("", ev.chunk(`{"role":"assistant","content":""}`, "null", ""))
		}
	}
	if !sleep(ctx, wireFirstToken) {
		f.cancel()
		return
	}
	for i, d := range f.deltas {
		if i == wireBreakAt {
			switch f.cs {
			case caseCut:
				return // the stream ends with no finish
			case caseMalformed:
				put(st.AppendEvent(nil, map[bool]string{true: "content_block_delta"}[ant], []byte(`{"choices":[{"delta":{"content":"oops`)))
				return
			case caseStall:
				if !f.stall(ctx, st, ant, put, emit) {
					return
				}
			case caseClientCut, caseClientCutTool:
				if !sleep(ctx, 10*time.Second) {
					f.cancel()
				}
				return
			}
		}
		if i > 0 && !sleep(ctx, wireGap) {
			f.cancel()
			return
		}
		q, _ := json.Marshal(d)
		switch {
		case ant && tool:
			emit("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":`+string(q)+`}}`)
		case ant:
			emit("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`+string(q)+`}}`)
		case tool:
			emit("", ev.chunk(`{"tool_calls":[{"index":0,"function":{"arguments":`+string(q)+`}}]}`, "null", ""))
		default:
			emit("", ev.chunk(`{"content":`+string(q)+`}`, "null", ""))
		}
		f.mu.Lock()
		f.sent++
		f.mu.Unlock()
	}
	usage := fmt.Sprintf(`{"prompt_tokens":11,"completion_tokens":%d,"total_tokens":%d}`, len(f.deltas), 11+len(f.deltas))
	if ant {
		emit("content_block_stop", `{"type":"content_block_stop","index":0}`)
		emit("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":%d}}`, len(f.deltas)))
		if !enc.NoDone() {
			emit("message_stop", `{"type":"message_stop"}`)
		}
		return
	}
	if f.row.inline {
		emit("", ev.chunk(`{}`, `"stop"`, usage))
	} else {
		emit("", ev.chunk(`{}`, `"stop"`, ""))
		if req.StreamOptions.IncludeUsage || enc.UsageLast() {
			emit("", ev.usage(usage))
		}
	}
	if !enc.NoDone() {
		emit("", "[DONE]")
	}
}

func (f *wireFake) cancel() {
	f.mu.Lock()
	f.cancelled = true
	f.mu.Unlock()
}

// stall is wireStallHold of silence, or of keepalives if the encoding
// sends them; false if the gateway gave up on the call first.
func (f *wireFake) stall(ctx context.Context, st *sseenc.Stream, ant bool, put func([]byte) bool, emit func(string, string) bool) bool {
	comment, ping := st.Encoding().Keepalive()
	every := st.Encoding().KeepaliveEvery()
	if every == 0 {
		every = wireKeepalive
	}
	f.mu.Lock()
	f.stallStart = time.Now()
	f.mu.Unlock()
	end := time.Now().Add(wireStallHold)
	for {
		left := time.Until(end)
		if left <= 0 {
			break
		}
		if !sleep(ctx, min(left, every)) {
			f.cancel()
			return false
		}
		switch {
		case time.Until(end) <= 0:
		case ping && ant:
			emit("ping", `{"type":"ping"}`)
		case comment || ping:
			put(st.AppendComment(nil))
		}
	}
	f.mu.Lock()
	f.resumed = true
	f.mu.Unlock()
	return true
}

// oaiEvents writes OpenAI chunks in OpenAI's own key order.
type oaiEvents struct{}

func (oaiEvents) chunk(delta, finish, usage string) string {
	s := `{"id":"chatcmpl-wire","object":"chat.completion.chunk","created":1700000000,"model":"up-model","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]`
	if usage != "" {
		s += `,"usage":` + usage
	}
	return s + "}"
}

func (oaiEvents) usage(usage string) string {
	return `{"id":"chatcmpl-wire","object":"chat.completion.chunk","created":1700000000,"model":"up-model","choices":[],"usage":` + usage + "}"
}

// wireFallback is the healthy second target, an OpenAI-dialect provider
// that takes a prefill: it answers the deltas after the prefill, as a
// model given the answer's start would. It records each prefill and when
// it was called.
type wireFallback struct {
	srv    *httptest.Server
	deltas []string

	mu       sync.Mutex
	prefills []string
	at       []time.Time
}

func (f *wireFallback) snapshot() (prefills []string, at []time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slicesClone(f.prefills), slicesClone(f.at)
}

func slicesClone[T any](s []T) []T { return append([]T(nil), s...) }

func newWireFallback(deltas []string) *wireFallback {
	f := &wireFallback{deltas: deltas}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	return f
}

func (f *wireFallback) close() {
	f.srv.CloseClientConnections()
	f.srv.Close()
}

// from is where a continuation starts: after the deltas the prefill
// holds exactly, or, if it holds something else, after as many deltas
// as it has words (a model does not know which words it was given).
func (f *wireFallback) from(prefill string) int {
	var sofar string
	for k := 0; k <= len(f.deltas); k++ {
		if sofar == prefill {
			return k
		}
		if k < len(f.deltas) {
			sofar += f.deltas[k]
		}
	}
	return min(len(strings.Fields(prefill)), len(f.deltas))
}

func (f *wireFallback) serve(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	json.NewDecoder(r.Body).Decode(&req)
	k := 0
	f.mu.Lock()
	f.at = append(f.at, time.Now())
	if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == "assistant" {
		p := textOf(req.Messages[n-1].Content)
		f.prefills = append(f.prefills, p)
		k = f.from(p)
	}
	f.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	var ev oaiEvents
	put := func(data string) {
		fmt.Fprintf(w, "data: %s\n\n", data)
		w.(http.Flusher).Flush()
	}
	put(ev.chunk(`{"role":"assistant","content":""}`, "null", ""))
	for _, d := range f.deltas[k:] {
		q, _ := json.Marshal(d)
		put(ev.chunk(`{"content":`+string(q)+`}`, "null", ""))
	}
	put(ev.chunk(`{}`, `"stop"`, ""))
	if req.StreamOptions.IncludeUsage {
		n := len(f.deltas) - k
		put(ev.usage(fmt.Sprintf(`{"prompt_tokens":31,"completion_tokens":%d,"total_tokens":%d}`, n, 31+n)))
	}
	put("[DONE]")
}

// textOf is a message's text, whether its content is a string or parts.
func textOf(c any) string {
	switch v := c.(type) {
	case string:
		return v
	case []any:
		var b strings.Builder
		for _, p := range v {
			if m, ok := p.(map[string]any); ok {
				if s, ok := m["text"].(string); ok {
					b.WriteString(s)
				}
			}
		}
		return b.String()
	}
	return ""
}
