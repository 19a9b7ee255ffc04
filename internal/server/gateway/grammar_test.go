package gateway_test

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/grammar"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
	"github.com/sluice-gw/sluice/internal/wire/sseenc"
	"github.com/sluice-gw/sluice/internal/wire/vendors"
)

// Every stream Sluice emits follows its client's event grammar
// (package grammar): a client that reads it with its vendor's own parser
// meets no event it does not know, and none out of the vendor's order,
// whatever the provider behind it, whether the stream was relayed as it
// came, translated, written by a native codec, continued on another
// target after a break, or ended by Sluice's own error event. Each case
// is one streamed request through a gateway in front of the mock; the
// basic cases run once per encoding the mock can write (X-Mock-Encoding).
//
// The one event of Sluice's own a stream may carry is the validation
// verdict, and only for a model that asks for it
// (validation.stream_event): the cases that turn it on check that it
// comes, after the terminator, and is the only thing that breaks the
// grammar.

// grammarEnd is how a case's stream must end, beyond following its
// grammar.
type grammarEnd uint8

const (
	// endWhole: the stream's own terminator, no error event.
	endWhole grammarEnd = iota
	// endError: Sluice's error event in the client's dialect, after
	// what the provider sent before it broke.
	endError
	// endContinued: whole, continued on another target
	// (X-Sluice-Continuation).
	endContinued
	// endVerdictEvent: whole, then the validation verdict event, which
	// the model asked for (validation.stream_event).
	endVerdictEvent
)

// grammarCase is one stream through Sluice. model names one of
// grammarStack's models, which picks the provider behind it; body adds
// members to the request's JSON object; hdr is the call's X-Mock-*
// headers (a fault for the first target). encodings runs the case once
// per encoding the mock can write. findings are the known violations
// of the case, by the encoding word that causes them ("*": under every
// encoding): the test fails when one stops happening, so that it is
// dropped from the list.
type grammarCase struct {
	name      string
	client    grammar.Dialect
	model     string
	body      string
	hdr       map[string]string
	end       grammarEnd
	validated bool // the request declares a schema or tools: the verdict goes in trailers
	encodings bool
	native    string // the native codec's kind the case needs (skipped in a build without it)
	findings  map[string]grammar.Rule
}

// Request members the cases add.
const (
	grammarUsage      = `"stream_options":{"include_usage":true}`
	grammarOAITools   = `"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city","days"]}}}]`
	grammarAntTools   = `"tools":[{"name":"get_weather","input_schema":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city","days"]}}]`
	grammarSchema     = `"response_format":{"type":"json_schema","json_schema":{"name":"person","strict":true,"schema":` + personSchema + `}}`
	grammarThinking   = `"thinking":{"type":"enabled","budget_tokens":1024}`
	grammarRespTools  = `"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city","days"]}}]`
	grammarRespSchema = `"text":{"format":{"type":"json_schema","name":"person","strict":true,"schema":` + personSchema + `}}`
	grammarCut        = "truncate:3"
	grammarMalformed  = "malformed:5"
	grammarMockTokens = 8
	grammarFaultPace  = 25 * time.Millisecond
	// grammarStall is the stall deadline: a stalled call's keepalives
	// come several times within it, and are not progress.
	grammarStall = 400 * time.Millisecond
)

func cut(how string) map[string]string { return map[string]string{mock.HeaderFail: how} }

// stalled is a call that goes quiet after its third word, past the
// stall deadline, and sends what enc says meanwhile (keepalive comments,
// Anthropic pings).
func stalled(enc string) map[string]string {
	return map[string]string{mock.HeaderFail: "stall:3:10s", mock.HeaderEncoding: enc}
}

// The known findings: what Sluice relays of a provider's stream as it
// came, legal SSE but not its vendor's grammar, which a vendor SDK
// misreads (openai-python wraps a named chunk; Anthropic's SDKs skip an
// unnamed event, so its text is lost).

var (
	findOAIEvent     = map[string]grammar.Rule{"oaievent": grammar.RuleNoEventField}
	findNoEventNamed = map[string]grammar.Rule{"noevent": grammar.RuleEventName}
)

// The cases. A new one is one line: a name (client/route/what), the
// client's dialect, the model (grammarStack: oai and ant are the
// OpenAI- and Anthropic-kind providers, gem and rock the native codecs,
// cont-* continue a break on a second provider, fail-* cannot, strict-*
// send the verdict event), and what the stream must do.
var grammarCases = []grammarCase{
	// Relayed as the provider wrote it: every encoding.
	{name: "openai/native", client: grammar.OpenAIChat, model: "oai", encodings: true, findings: findOAIEvent},
	{name: "openai/native/include_usage", client: grammar.OpenAIChat, model: "oai", body: grammarUsage, encodings: true, findings: findOAIEvent},
	{name: "anthropic/native", client: grammar.Anthropic, model: "ant", encodings: true, findings: findNoEventNamed},
	{name: "responses/native", client: grammar.Responses, model: "oai", encodings: true, findings: findNoEventNamed},

	// Translated: every encoding.
	{name: "openai→anthropic", client: grammar.OpenAIChat, model: "ant", encodings: true},
	{name: "openai→anthropic/include_usage", client: grammar.OpenAIChat, model: "ant", body: grammarUsage, encodings: true},
	{name: "anthropic→openai", client: grammar.Anthropic, model: "oai", encodings: true},

	// Native codecs: the codec writes the stream.
	{name: "openai→gemini", client: grammar.OpenAIChat, model: "gem", native: config.KindGemini},
	{name: "openai→gemini/include_usage", client: grammar.OpenAIChat, model: "gem", body: grammarUsage, native: config.KindGemini},
	{name: "anthropic→gemini", client: grammar.Anthropic, model: "gem", native: config.KindGemini},
	{name: "openai→bedrock", client: grammar.OpenAIChat, model: "rock", native: config.KindBedrock},
	{name: "anthropic→bedrock", client: grammar.Anthropic, model: "rock", native: config.KindBedrock},

	// Tool calls, validated against their schemas.
	{name: "openai/native/tools", client: grammar.OpenAIChat, model: "oai", body: grammarOAITools, validated: true, encodings: true, findings: findOAIEvent},
	{name: "anthropic/native/tools", client: grammar.Anthropic, model: "ant", body: grammarAntTools, validated: true, encodings: true, findings: findNoEventNamed},
	{name: "openai→anthropic/tools", client: grammar.OpenAIChat, model: "ant", body: grammarOAITools, validated: true},
	{name: "anthropic→openai/tools", client: grammar.Anthropic, model: "oai", body: grammarAntTools, validated: true},
	{name: "openai→gemini/tools", client: grammar.OpenAIChat, model: "gem", body: grammarOAITools, validated: true, native: config.KindGemini},
	{name: "anthropic→bedrock/tools", client: grammar.Anthropic, model: "rock", body: grammarAntTools, validated: true, native: config.KindBedrock},

	// Structured output, validated: the verdict goes in trailers, and
	// the stream has no event of Sluice's own.
	{name: "openai/native/json_schema", client: grammar.OpenAIChat, model: "oai", body: grammarSchema, validated: true, encodings: true, findings: findOAIEvent},
	{name: "openai→anthropic/json_schema", client: grammar.OpenAIChat, model: "ant", body: grammarSchema, validated: true},

	// Thinking blocks.
	{name: "anthropic/native/thinking", client: grammar.Anthropic, model: "ant", body: grammarThinking},

	// A break mid-stream, continued on the second target.
	{name: "openai/native/cut/continued", client: grammar.OpenAIChat, model: "cont-oai", hdr: cut(grammarCut), end: endContinued},
	{name: "openai/native/malformed/continued", client: grammar.OpenAIChat, model: "cont-oai", body: grammarUsage, hdr: cut(grammarMalformed), end: endContinued},
	{name: "anthropic/native/cut/continued", client: grammar.Anthropic, model: "cont-ant", hdr: cut(grammarCut), end: endContinued},
	{name: "anthropic/native/malformed/continued", client: grammar.Anthropic, model: "cont-ant", hdr: cut(grammarMalformed), end: endContinued},
	{name: "openai→anthropic/cut/continued", client: grammar.OpenAIChat, model: "cont-ant", body: grammarUsage, hdr: cut(grammarCut), end: endContinued},
	{name: "anthropic→openai/cut/continued", client: grammar.Anthropic, model: "cont-oai", hdr: cut(grammarCut), end: endContinued},
	{name: "openai/native/stall+keepalive/continued", client: grammar.OpenAIChat, model: "cont-oai", hdr: stalled("comments+keepalive:100ms"), end: endContinued},
	{name: "anthropic/native/stall+pings/continued", client: grammar.Anthropic, model: "cont-ant", hdr: stalled("pings:100ms"), end: endContinued},
	{name: "openai→anthropic/stall+pings/continued", client: grammar.OpenAIChat, model: "cont-ant", hdr: stalled("pings:100ms"), end: endContinued},

	// A break nothing can continue: Sluice's own error event ends it.
	{name: "openai/native/cut/error", client: grammar.OpenAIChat, model: "fail-oai", hdr: cut(grammarCut), end: endError},
	{name: "openai/native/malformed/error", client: grammar.OpenAIChat, model: "fail-oai", hdr: cut(grammarMalformed), end: endError},
	{name: "anthropic/native/cut/error", client: grammar.Anthropic, model: "fail-ant", hdr: cut(grammarCut), end: endError},
	{name: "openai→anthropic/cut/error", client: grammar.OpenAIChat, model: "fail-ant", hdr: cut(grammarCut), end: endError},
	{name: "anthropic→openai/cut/error", client: grammar.Anthropic, model: "fail-oai", hdr: cut(grammarCut), end: endError},
	{name: "anthropic/native/stall+pings/error", client: grammar.Anthropic, model: "fail-ant", hdr: stalled("pings:100ms"), end: endError},
	{name: "openai/native/stall+keepalive/error", client: grammar.OpenAIChat, model: "fail-oai", hdr: stalled("keepalive:100ms"), end: endError},
	{name: "responses/native/cut/error", client: grammar.Responses, model: "fail-oai", hdr: cut(grammarCut), end: endError},

	// The one allowed exception: the verdict event, asked for.
	{name: "openai/native/json_schema/stream_event", client: grammar.OpenAIChat, model: "strict-oai", body: grammarSchema, validated: true, end: endVerdictEvent},
	{name: "anthropic/native/tools/stream_event", client: grammar.Anthropic, model: "strict-ant", body: grammarAntTools, validated: true, end: endVerdictEvent},
	{name: "openai→anthropic/tools/stream_event", client: grammar.OpenAIChat, model: "strict-ant", body: grammarOAITools, validated: true, end: endVerdictEvent},
	// A stream whose provider left out its terminator is complete by
	// its finish reason: Sluice adds the terminator, and the verdict
	// follows it.
	{name: "openai/native/json_schema/nodone/stream_event", client: grammar.OpenAIChat, model: "strict-oai", body: grammarSchema, hdr: map[string]string{mock.HeaderEncoding: "nodone"}, validated: true, end: endVerdictEvent},
	{name: "anthropic/native/tools/nodone/stream_event", client: grammar.Anthropic, model: "strict-ant", body: grammarAntTools, hdr: map[string]string{mock.HeaderEncoding: "nodone"}, validated: true, end: endVerdictEvent},

	// The Responses API bridged through chat (responses_bridge.go):
	// Sluice writes every event, its own error event included.
	{name: "responses→anthropic", client: grammar.Responses, model: "ant", encodings: true},
	{name: "responses→gemini", client: grammar.Responses, model: "gem", native: config.KindGemini},
	{name: "responses→anthropic/tools", client: grammar.Responses, model: "ant", body: grammarRespTools, validated: true},
	{name: "responses→anthropic/json_schema", client: grammar.Responses, model: "ant", body: grammarRespSchema, validated: true},
	{name: "responses→anthropic/cut/continued", client: grammar.Responses, model: "cont-ant", hdr: cut(grammarCut), end: endContinued},
	{name: "responses→anthropic/cut/error", client: grammar.Responses, model: "fail-ant", hdr: cut(grammarCut), end: endError},

	// More cases go here, one line each.
}

// grammarEncodings are the encodings the basic cases run under: every
// word of sseenc's, and the combinations real servers write.
func grammarEncodings() []string {
	return append(sseenc.Words(), "pydefault+crlf", "pretty+cr+comments", "shuffle+escaped+slashes+nospace+idretry", "sortkeys+pretty+pydefault+crlf+usagelast")
}

func TestGrammarOfEveryStream(t *testing.T) {
	t.Setenv(geminiKeyEnv, geminiKey)
	fakeAWSCredentials(t)
	for _, c := range grammarCases {
		t.Run(c.name, func(t *testing.T) {
			if _, ok := vendors.Lookup(c.native); c.native != "" && !ok {
				t.Skipf("this build has no %s codec", c.native)
			}
			encs := []string{cmp.Or(c.hdr[mock.HeaderEncoding], "compact")}
			if c.encodings {
				encs = grammarEncodings()
			}
			// One gateway for the case's encodings: none of them fails
			// a provider. A case that breaks its stream has a gateway of
			// its own per run, so no breaker carries a failure over.
			var s *stack
			for _, enc := range encs {
				if s == nil || c.hdr[mock.HeaderFail] != "" {
					s = grammarStack(t, c.hdr[mock.HeaderFail] != "")
				}
				runGrammarCase(t, s, c, enc)
			}
		})
	}
}

// grammarStack is a gateway in front of the mock with the models the
// cases name. The mock answers grammarMockTokens words drawn from the
// prompt, so a continuation goes on from the exact text relayed. When
// a call is faulted, its words come grammarFaultPace apart, so that the
// fault comes well after the stream's first token, which the gateway
// commits to the stream on: a malformed event in the same read as the
// first token fails the call before it is committed, and the next
// target answers whole.
func grammarStack(t *testing.T, faulted bool) *stack {
	t.Helper()
	mc := mock.Config{OutputTokens: mock.TokenRange{Min: grammarMockTokens, Max: grammarMockTokens}, Words: "prompt"}
	if faulted {
		mc.TPOT = grammarFaultPace
	}
	return newStack(t, mc, func(c *config.Config) {
		c.Server.StreamStallTimeout = config.Duration(grammarStall)
		c.Server.StreamStallFloor = config.Duration(grammarStall)
		base := c.Providers[0].BaseURL // the mock's /v1
		root := strings.TrimSuffix(base, "/v1")
		enc := []string{mock.HeaderEncoding, mock.HeaderWords}
		faulted := append([]string{mock.HeaderFail}, enc...)
		p := func(name, kind, url, cont string, hdr []string) config.Provider {
			return config.Provider{Name: name, Kind: kind, BaseURL: url, Timeout: config.Duration(10 * time.Second),
				ForwardHeaders: hdr, Continuation: cont}
		}
		c.Providers = []config.Provider{
			p("oai", config.KindOpenAI, base, config.ContinueNone, faulted),
			p("ant", config.KindAnthropic, base, config.ContinueNone, faulted),
			// The second targets of a continuation hear no fault.
			p("oai-next", config.KindOpenAI, base, config.ContinuePrefill, enc),
			p("ant-next", config.KindAnthropic, base, config.ContinuePrefill, enc),
			p("gem", config.KindGemini, root+"/v1beta", config.ContinueNone, faulted),
			p("rock", config.KindBedrock, root, config.ContinueNone, faulted),
		}
		c.Providers[4].APIKeyEnv = geminiKeyEnv
		c.Providers[5].Region = "us-east-1"
		to := func(provider, model string) []config.Target {
			return []config.Target{{Provider: provider, Model: model}}
		}
		verdictEvent := config.Validation{StreamEvent: true}
		c.Models = []config.Model{
			{Name: "oai", Targets: to("oai", "gpt-mock")},
			{Name: "ant", Targets: to("ant", "claude-mock")},
			{Name: "gem", Targets: to("gem", "gemini-2.5-flash")},
			{Name: "rock", Targets: to("rock", "anthropic.claude-sonnet-4:0")},
			{Name: "cont-oai", Targets: append(to("oai", "gpt-mock"), to("oai-next", "gpt-next")...)},
			{Name: "cont-ant", Targets: append(to("ant", "claude-mock"), to("ant-next", "claude-next")...)},
			{Name: "fail-oai", Targets: to("oai", "gpt-mock")},
			{Name: "fail-ant", Targets: to("ant", "claude-mock")},
			{Name: "strict-oai", Targets: to("oai", "gpt-mock"), Validation: verdictEvent},
			{Name: "strict-ant", Targets: to("ant", "claude-mock"), Validation: verdictEvent},
		}
	})
}

// grammarRequest is the case's streamed request in its client's API.
func grammarRequest(c grammarCase) (path, body string, hdr map[string]string) {
	hdr = map[string]string{mock.HeaderEncoding: "", mock.HeaderWords: "prompt"}
	for k, v := range c.hdr {
		hdr[k] = v
	}
	extra := ""
	if c.body != "" {
		extra = "," + c.body
	}
	const prompt = `"count the sheep"`
	switch c.client {
	case grammar.Anthropic:
		hdr["Anthropic-Version"] = "2023-06-01"
		return "/v1/messages", `{"model":"` + c.model + `","max_tokens":2000,"stream":true,"messages":[{"role":"user","content":` + prompt + `}]` + extra + `}`, hdr
	case grammar.Responses:
		return protocol.Responses.Path, `{"model":"` + c.model + `","stream":true,"input":` + prompt + extra + `}`, hdr
	}
	return "/v1/chat/completions", `{"model":"` + c.model + `","stream":true,"messages":[{"role":"user","content":` + prompt + `}]` + extra + `}`, hdr
}

// runGrammarCase sends the case's request in encoding enc and holds
// the stream to its client's grammar.
func runGrammarCase(t *testing.T, s *stack, c grammarCase, enc string) {
	t.Helper()
	path, body, hdr := grammarRequest(c)
	hdr[mock.HeaderEncoding] = enc
	resp, err := s.post(t.Context(), path, body, hdr)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: status %d, %v\n%s", enc, resp.StatusCode, err, stream)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("%s: Content-Type %q, want an event stream\n%s", enc, ct, stream)
	}
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf("%s, encoding %s: %s\nthe client got:\n%s", c.name, enc, strings.TrimSpace(fmt.Sprintf(format, args...)), clip(stream))
	}

	err = grammar.Check(c.client, stream)
	var v *grammar.Violation
	if want, ok := findingFor(c, enc); ok {
		if !errors.As(err, &v) || v.Rule != want {
			fail("the known finding (%s) no longer happens, and Check says %v: drop it from the case's findings", want, err)
			return
		}
		t.Logf("finding: %s under %s: %v", c.name, enc, err)
		return
	}
	events, _ := grammar.Frame(stream)
	if c.end == endVerdictEvent {
		// The verdict event breaks the grammar where it stands, after
		// the terminator, and nothing else does.
		if !errors.As(err, &v) || v.Rule != grammar.RuleAfterEnd || v.Index != len(events)-1 || events[v.Index].Name != "sluice.validation" {
			fail("want the verdict event last, after the terminator, as the only violation; Check says %v", err)
			return
		}
		last := events[len(events)-1]
		rest := stream[:last.Offset]
		if err := grammar.Check(c.client, rest); err != nil {
			fail("without the verdict event: %v", err)
		}
		events = events[:len(events)-1]
	} else if err != nil {
		fail("%v", err)
		return
	}

	failed := endsInError(c.client, events)
	// An OpenAI client gets the usage-only chunk when it asked for one,
	// and never the one Sluice asked for on its behalf.
	asked := c.client == grammar.OpenAIChat && strings.Contains(c.body, grammarUsage)
	switch n := usageChunks(c.client, events); {
	case asked && !failed && n != 1:
		fail("%d usage-only chunks; the client asked for one", n)
	case !asked && n != 0:
		fail("%d usage-only chunks; the client asked for none", n)
	}
	switch {
	case c.end == endError && !failed:
		fail("the stream should end with Sluice's error event")
	case c.end != endError && failed:
		fail("the stream ended with an error event")
	case c.end == endContinued && resp.Trailer.Get("X-Sluice-Continuation") == "":
		fail("no X-Sluice-Continuation trailer: the break was not continued")
	case c.validated && c.end != endError && resp.Trailer.Get("X-Sluice-Validation") == "":
		fail("no X-Sluice-Validation trailer for a stream whose request declared structured output")
	}
}

// findingFor is the known finding of case c under enc, if any.
func findingFor(c grammarCase, enc string) (grammar.Rule, bool) {
	words := strings.Split(enc, "+")
	for w, rule := range c.findings {
		if w == "*" || slices.Contains(words, w) {
			return rule, true
		}
	}
	return "", false
}

// endsInError reports whether the stream's last event is an error event
// in dialect d.
func endsInError(d grammar.Dialect, events []grammar.Event) bool {
	if len(events) == 0 {
		return false
	}
	last := events[len(events)-1]
	if d != grammar.OpenAIChat {
		return last.Name == "error"
	}
	var v map[string]json.RawMessage
	if json.Unmarshal([]byte(last.Data), &v) != nil {
		return false
	}
	_, ok := v["error"]
	return ok
}

// usageChunks counts an OpenAI chat stream's usage-only chunks: no
// choices, a usage object.
func usageChunks(d grammar.Dialect, events []grammar.Event) int {
	if d != grammar.OpenAIChat {
		return 0
	}
	n := 0
	for _, ev := range events {
		var chunk struct {
			Choices *[]json.RawMessage         `json:"choices"`
			Usage   map[string]json.RawMessage `json:"usage"`
		}
		if json.Unmarshal([]byte(ev.Data), &chunk) == nil && chunk.Choices != nil && len(*chunk.Choices) == 0 && chunk.Usage != nil {
			n++
		}
	}
	return n
}
