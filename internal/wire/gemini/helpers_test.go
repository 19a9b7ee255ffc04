package gemini

import (
	"encoding/json"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"github.com/sluice-gw/sluice/internal/wire/protocol"
	"github.com/sluice-gw/sluice/internal/wire/translate"
)

// drain reads every hub event from Events, and how it ended.
func drain(ev interface{ Next() ([]byte, error) }) ([]byte, error) {
	var out []byte
	for range 1 << 20 {
		b, err := ev.Next()
		out = append(out, b...)
		if err != nil {
			return out, err
		}
	}
	panic("Next never ended")
}

// hubStream turns Gemini stream bytes into the hub's, read one byte at a
// time when oneByte.
func hubStream(gm string, oneByte bool) ([]byte, error) {
	var r io.Reader = stringsReader(gm)
	if oneByte {
		r = iotest.OneByteReader(r)
	}
	return drain(Reply{Model: "gemini-2.5-flash"}.Stream(r))
}

type sr struct {
	s string
	i int
}

func (r *sr) Read(p []byte) (int, error) {
	if r.i >= len(r.s) {
		return 0, io.EOF
	}
	n := copy(p, r.s[r.i:])
	r.i += n
	return n, nil
}

func stringsReader(s string) io.Reader { return &sr{s: s} }

// hubEvents parses hub SSE into events, with their data decoded.
func hubEvents(t testing.TB, b []byte) []map[string]any {
	t.Helper()
	evs, n := translate.ParseEvents(b)
	if n != len(b) {
		t.Fatalf("hub stream has %d bytes after its last whole event: %q", len(b)-n, b[n:])
	}
	var out []map[string]any
	for _, ev := range evs {
		var m map[string]any
		if err := json.Unmarshal(ev.Data, &m); err != nil {
			t.Fatalf("event %s data not JSON: %s", ev.Name, ev.Data)
		}
		if m["type"] != ev.Name {
			t.Fatalf("event name %q, data type %v", ev.Name, m["type"])
		}
		out = append(out, m)
	}
	return out
}

// checkHub judges hub bytes as the gateway does (protocol.StreamCheck)
// and runs them through the OpenAI translation, which must accept them.
// It returns the gateway's verdict and usage.
func checkHub(t testing.TB, b []byte) (verdict string, out int, in int64) {
	t.Helper()
	c := protocol.NewStreamCheck(protocol.Anthropic)
	if _, ok, _ := c.Feed(b); !ok {
		t.Fatalf("StreamCheck finds a malformed event in %q", b)
	}
	var u protocol.StreamUsage
	u.Write(b)
	out, _ = u.Tokens()
	in, _ = u.InputTokens()
	evs, _ := translate.ParseEvents(b)
	oa := translate.NewStreamToOpenAI(translate.StreamConfig{IncludeUsage: true})
	for _, ev := range evs {
		if _, err := oa.Feed(ev); err != nil {
			t.Fatalf("the OpenAI translation refuses %s %s: %v", ev.Name, ev.Data, err)
		}
	}
	verdict = c.End()
	cerr := oa.Close()
	switch verdict {
	case protocol.StreamOK:
		if cerr != nil {
			t.Fatalf("OpenAI translation Close = %v on a whole stream", cerr)
		}
	case protocol.StreamErrorEvent:
		if !errors.Is(cerr, translate.ErrStreamFailed) {
			t.Fatalf("OpenAI translation Close = %v after an error event", cerr)
		}
	}
	return verdict, out, in
}
