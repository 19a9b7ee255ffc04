package grammar_test

import (
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/internal/harness/grammar"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/wire/sseenc"
)

// The repository's own vendor-shaped streams follow their grammar: the
// protocol package's recorded streams and the translator's inputs and
// goldens, whose dialect is the one they are written in.
func TestGrammarRepositoryFixtures(t *testing.T) {
	wire := filepath.Join("..", "..", "wire")
	files := map[string]grammar.Dialect{
		"protocol/testdata/streams/anthropic.sse":    grammar.Anthropic,
		"protocol/testdata/streams/openai_chat.sse":  grammar.OpenAIChat,
		"protocol/testdata/streams/openai_tools.sse": grammar.OpenAIChat,
	}
	for dir, d := range map[string][2]grammar.Dialect{
		// in: the provider's dialect; want: the client's.
		"translate/testdata/streams/to_anthropic": {grammar.OpenAIChat, grammar.Anthropic},
		"translate/testdata/streams/to_openai":    {grammar.Anthropic, grammar.OpenAIChat},
	} {
		names, err := filepath.Glob(filepath.Join(wire, dir, "*.sse"))
		if err != nil || len(names) == 0 {
			t.Fatalf("no streams in %s: %v", dir, err)
		}
		for _, n := range names {
			rel, _ := filepath.Rel(wire, n)
			files[filepath.ToSlash(rel)] = d[map[bool]int{true: 0, false: 1}[strings.HasSuffix(n, ".in.sse")]]
		}
	}
	for name, d := range files {
		b, err := os.ReadFile(filepath.Join(wire, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := grammar.Check(d, b); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}

	// The recorded Responses stream predates sequence_number, which
	// OpenAI's stream now carries on every event: the grammar says so at
	// its first event without one.
	b, err := os.ReadFile(filepath.Join(wire, "protocol/testdata/streams/responses.sse"))
	if err != nil {
		t.Fatal(err)
	}
	var v *grammar.Violation
	if err := grammar.Check(grammar.Responses, b); !errors.As(err, &v) || v.Rule != grammar.RuleSequence || v.Index != 2 {
		t.Errorf("responses.sse: %v; want its missing sequence_number at event 2", err)
	}
}

// The mock writes each API's streams as the vendor does, in every legal
// SSE encoding (sseenc's words): text, tool calls, structured output,
// thinking and usage all follow the grammar. The words that change what
// a stream holds rather than how it is spelled break it, as they are
// meant to, and the grammar names each: an OpenAI chunk named "message"
// (oaievent), Anthropic and Responses events without their event: line
// (noevent), a stream without its terminator (nodone).
func TestGrammarMockStreamsUnderEveryEncoding(t *testing.T) {
	m := mock.New(mock.Config{Seed: 7, OutputTokens: mock.TokenRange{Min: 6, Max: 6}})
	base, stop, err := m.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)

	const (
		tools  = `"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]`
		antTls = `"tools":[{"name":"get_weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]`
		schema = `"response_format":{"type":"json_schema","json_schema":{"name":"p","schema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}}`
		msgs   = `"messages":[{"role":"user","content":"tell me"}]`
	)
	type call struct {
		name, path, body string
		d                grammar.Dialect
	}
	calls := []call{
		{"chat", "/v1/chat/completions", `{"model":"m","stream":true,` + msgs + `}`, grammar.OpenAIChat},
		{"chat usage", "/v1/chat/completions", `{"model":"m","stream":true,"stream_options":{"include_usage":true},` + msgs + `}`, grammar.OpenAIChat},
		{"chat tools", "/v1/chat/completions", `{"model":"m","stream":true,` + tools + `,` + msgs + `}`, grammar.OpenAIChat},
		{"chat schema", "/v1/chat/completions", `{"model":"m","stream":true,` + schema + `,` + msgs + `}`, grammar.OpenAIChat},
		{"messages", "/v1/messages", `{"model":"m","max_tokens":100,"stream":true,` + msgs + `}`, grammar.Anthropic},
		{"messages tools", "/v1/messages", `{"model":"m","max_tokens":100,"stream":true,` + antTls + `,` + msgs + `}`, grammar.Anthropic},
		{"messages thinking", "/v1/messages", `{"model":"m","max_tokens":2000,"stream":true,"thinking":{"type":"enabled","budget_tokens":1024},` + msgs + `}`, grammar.Anthropic},
		{"messages capped", "/v1/messages", `{"model":"m","max_tokens":3,"stream":true,` + msgs + `}`, grammar.Anthropic},
		{"responses", "/v1/responses", `{"model":"m","stream":true,"input":"tell me"}`, grammar.Responses},
		{"responses capped", "/v1/responses", `{"model":"m","stream":true,"max_output_tokens":3,"input":"tell me"}`, grammar.Responses},
	}
	encodings := append(sseenc.Words(), "pydefault+crlf", "pretty+cr+comments", "shuffle+escaped+slashes+nospace+idretry", "sortkeys+pretty+pydefault+crlf")
	for _, enc := range encodings {
		for _, c := range calls {
			t.Run(enc+"/"+c.name, func(t *testing.T) {
				stream := post(t, base+c.path, c.body, enc)
				err := grammar.Check(c.d, stream)
				want := expectedBreak(enc, c.d)
				var v *grammar.Violation
				switch {
				case want == "" && err != nil:
					t.Fatalf("%v\n%s", err, stream)
				case want != "" && (!errors.As(err, &v) || v.Rule != want):
					t.Fatalf("Check = %v; want a %s violation\n%s", err, want, stream)
				}
			})
		}
	}
}

// expectedBreak is the rule a mock stream in encoding enc breaks, by
// design of the encoding, or "".
func expectedBreak(enc string, d grammar.Dialect) grammar.Rule {
	words := strings.Split(enc, "+")
	has := func(w string) bool {
		for _, x := range words {
			if x == w {
				return true
			}
		}
		return false
	}
	switch {
	case has("oaievent") && d == grammar.OpenAIChat:
		return grammar.RuleNoEventField
	case has("noevent") && d != grammar.OpenAIChat:
		return grammar.RuleEventName
	case has("nodone") && d != grammar.Responses:
		return grammar.RuleTerminator
	}
	return ""
}

// post sends one streamed call to the mock in encoding enc and reads the
// stream whole.
func post(t *testing.T, url, body, enc string) []byte {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(mock.HeaderEncoding, enc)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, %v: %s", resp.StatusCode, err, b)
	}
	return b
}
