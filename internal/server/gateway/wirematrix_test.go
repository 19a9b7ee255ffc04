package gateway_test

import (
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/server/gateway"
)

// The wire matrix of the stream-encodings review, rebuilt in process: a
// fake provider writes one 60-delta answer (é, 😀, /ok, "q" and
// <b>&amp; in words 2-10) in an encoding, as an OpenAI or an Anthropic
// stream, whole or broken as the case says; a healthy OpenAI-dialect
// fallback continues from a prefill. Each cell is one request on its
// own gateway (a cut or a stall is an upstream error, and the breaker
// must not carry from one cell to the next), and must come out as the
// compact baseline does:
//
//   - the client gets the 60 deltas' text exactly once, the right
//     finish (stop or end_turn), usage 60, one terminator, no error;
//   - the log says outcome ok, output_tokens 60, and a TTFT no shorter
//     than the fake's delay before its first delta (the head is not a
//     token);
//   - a cut (C), a stall (S) or a malformed event (M) after delta 20 is
//     continued on the fallback, from exactly the text the client had,
//     with its cause in the log, a stall at the stall deadline even
//     when keepalives or pings come during it; a whole stream (N, U) is
//     never continued, whatever its terminator;
//   - an OpenAI client that did not ask for usage (U) gets no usage
//     chunk;
//   - text that mentions the protocol is text: "data: [DONE]" in a
//     stream then cut is continued (C-done), "event: error" in a whole
//     answer goes out untouched (N-error);
//   - a stream the client leaves after 20 deltas, with no usage ever
//     sent, is logged as 20 output tokens within 5 %, text (K) or tool
//     call arguments (KT).
//
// Subtests are named encoding/dialect/case. -v prints the matrix as a
// markdown table (t.Log). The cells run concurrently, each with its
// own sockets, so the whole matrix takes seconds, not the minutes its
// sleeps add up to.

type wireCase string

const (
	caseNormal        wireCase = "N"
	caseCut           wireCase = "C"
	caseStall         wireCase = "S"
	caseNoUsage       wireCase = "U"
	caseMalformed     wireCase = "M"
	caseDoneText      wireCase = "C-done"
	caseErrorText     wireCase = "N-error"
	caseClientCut     wireCase = "K"
	caseClientCutTool wireCase = "KT"
)

// base is what the fake does: a hostile case is its plain one with other
// text.
func (c wireCase) base() wireCase {
	switch c {
	case caseDoneText:
		return caseCut
	case caseErrorText:
		return caseNormal
	}
	return c
}

func (c wireCase) hostile() string {
	switch c {
	case caseDoneText:
		return "\n\ndata: [DONE]\n\n"
	case caseErrorText:
		return "\nevent: error\ndata: {\"type\":\"error\"}\n\n"
	}
	return ""
}

// A dialect is a column group: the client's API, the provider's kind.
type wireDialect struct {
	name, model      string
	client, provider bool // Anthropic?
	head             string
}

var wireDialects = []wireDialect{
	{"oai", "chat", false, false, "OpenAI→openai"},
	{"ant", "chatant", true, true, "Anthropic→anthropic"},
	{"oai2ant", "chatx", false, true, "OpenAI→anthropic (translated)"},
	{"ant2oai", "chatantx", true, false, "Anthropic→openai (translated)"},
}

// A row is an encoding: sseenc's words (enc), and what the fake does
// beyond them: every byte written and flushed on its own (bytewise), or
// usage on the finish chunk whatever was asked (inline). name is the
// row's in the subtests, review the name the printed table gives it if
// it differs; only the provider kind it applies to ("" both).
type wireRow struct {
	name, enc, review, only string
	bytewise, inline        bool
}

func row(enc string) wireRow { return wireRow{name: enc, enc: enc} }

func (r wireRow) as(review string) wireRow    { r.review = review; return r }
func (r wireRow) onlyFor(kind string) wireRow { r.only = kind; return r }

var wireRows = []wireRow{
	row("compact"), row("spaced"), row("pydefault"), row("pydefault+crlf").as("starlette"),
	row("pydefault+nodone"), row("spaced+nodone"), row("nospace+pydefault"),
	row("pretty"), row("pretty+noevent").as("no-event-lines+pretty").onlyFor("anthropic"),
	row("sortkeys"), row("shuffle"), row("escaped"), row("slashes"),
	row("crlf"), row("cr"), row("nospace"),
	// Keepalives every 300 ms during the stall, under the stall
	// deadline: they must not count as progress.
	row("comments+keepalive:300ms").as("comments"), row("pings:300ms").as("pings").onlyFor("anthropic"),
	row("idretry"), row("oaievent").as("oai-event").onlyFor("openai"),
	row("noevent").as("no-event-lines").onlyFor("anthropic"), row("noping").as("no-ping").onlyFor("anthropic"),
	row("nodone").as("no-done"), row("usagelast").as("usage-always").onlyFor("openai"),
	{name: "usageinline", enc: "compact", review: "usage-inline", only: "openai", inline: true},
	{name: "bytewise", enc: "compact", bytewise: true},
}

// The second table: hostile text, a malformed event and the client's
// own cut, in the encodings that matter most.
var wireExtraRows = []wireRow{row("compact"), row("spaced"), row("shuffle")}

var wireExtraCases = []wireCase{caseDoneText, caseErrorText, caseMalformed, caseClientCut, caseClientCutTool}

func (r wireRow) applies(d wireDialect) bool {
	return r.only == "" || (r.only == "anthropic") == d.provider
}

func mainCases(d wireDialect) []wireCase {
	if d.client {
		return []wireCase{caseNormal, caseCut, caseStall}
	}
	return []wireCase{caseNormal, caseCut, caseStall, caseNoUsage}
}

type wireCell struct {
	row wireRow
	d   wireDialect
	c   wireCase
}

func (c wireCell) name() string { return c.row.name + "/" + c.d.name + "/" + string(c.c) }

func TestWireMatrix(t *testing.T) {
	start := time.Now()
	sem := make(chan struct{}, 32)
	var mu sync.Mutex
	got := map[string]string{}
	// A cell starts its work before t.Parallel, bounded by sem rather
	// than by -parallel (GOMAXPROCS, 2 here): its time is sleeps, not
	// CPU. A cell -run leaves out costs nothing.
	cell := func(c wireCell) {
		t.Run(c.name(), func(t *testing.T) {
			done := make(chan wireResult, 1)
			go func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				done <- runWireCell(c)
			}()
			t.Parallel()
			r := <-done
			mu.Lock()
			got[c.name()] = r.verdict()
			mu.Unlock()
			for _, p := range r.problems {
				t.Error(p)
			}
		})
	}
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		t.Logf("wire matrix, %d cells in %s (codes: wirematrix_judge_test.go)\n%s\n%s", len(got), time.Since(start).Round(100*time.Millisecond),
			wireTable(got, wireRows, mainCases), wireTable(got, wireExtraRows, func(wireDialect) []wireCase { return wireExtraCases }))
	})
	for _, r := range wireRows {
		for _, d := range wireDialects {
			if r.applies(d) {
				for _, c := range mainCases(d) {
					cell(wireCell{r, d, c})
				}
			}
		}
	}
	for _, r := range wireExtraRows {
		for _, d := range wireDialects {
			for _, c := range wireExtraCases {
				cell(wireCell{r, d, c})
			}
		}
	}
}

// wireTable is the verdicts as a markdown table, a row per encoding and
// a column per dialect; "–" not applicable, "·" not run.
func wireTable(got map[string]string, rows []wireRow, cases func(wireDialect) []wireCase) string {
	var b strings.Builder
	b.WriteString("| encoding |")
	for _, d := range wireDialects {
		var names []string
		for _, c := range cases(d) {
			names = append(names, string(c))
		}
		fmt.Fprintf(&b, " %s %s |", d.head, strings.Join(names, " / "))
	}
	b.WriteString("\n|---|---|---|---|---|\n")
	for _, r := range rows {
		label := r.name
		if r.review != "" {
			label += " (" + r.review + ")"
		}
		fmt.Fprintf(&b, "| %s |", label)
		for _, d := range wireDialects {
			var vs []string
			for _, c := range cases(d) {
				v, ok := got[wireCell{r, d, c}.name()]
				switch {
				case !r.applies(d):
					v = "–"
				case !ok:
					v = "·"
				}
				vs = append(vs, v)
			}
			fmt.Fprintf(&b, " %s |", strings.Join(vs, " / "))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func wireGateway(fake, fallback string, logs io.Writer) (*gateway.Gateway, error) {
	y := fmt.Sprintf(`
listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
log: {format: json}
server:
  stream_stall_timeout: %[3]s
  stream_stall_floor: %[3]s
providers:
  - {name: wireoai, kind: openai, base_url: %[1]s}
  - {name: wireant, kind: anthropic, base_url: %[1]s}
  - {name: fallback, kind: openai, base_url: %[2]s, continuation: prefill}
models:
  - name: chat
    targets: [{provider: wireoai, model: up-model}, {provider: fallback, model: fb-model}]
  - name: chatant
    targets: [{provider: wireant, model: up-model}, {provider: fallback, model: fb-model}]
  - name: chatx
    targets: [{provider: wireant, model: up-model}, {provider: fallback, model: fb-model}]
  - name: chatantx
    targets: [{provider: wireoai, model: up-model}, {provider: fallback, model: fb-model}]
`, fake, fallback, wireStall)
	cfg, err := config.Parse([]byte(y), "wirematrix.yaml")
	if err != nil {
		return nil, err
	}
	return gateway.New(cfg, gateway.Options{Logger: gateway.NewLogger(logs, cfg.Log)})
}

// runWireCell runs one cell on its own gateway and judges it.
func runWireCell(c wireCell) (res wireResult) {
	base := c.c.base()
	tool := base == caseClientCutTool
	deltas := wireAnswer(c.c.hostile())
	if tool {
		deltas = wireToolArgs()
	}
	fake := newWireFake(c.row, base, deltas)
	fb := newWireFallback(deltas)
	defer fb.close()
	defer fake.close()
	var logs strings.Builder
	lw := &syncWriter{w: &logs}
	g, err := wireGateway(fake.srv.URL, fb.srv.URL, lw)
	if err != nil {
		res.fail("SETUP", "%v", err)
		return res
	}
	srv := httptest.NewServer(g.Handler())
	defer g.Close()
	defer srv.Close()
	stopAfter := 0
	if base == caseClientCut || base == caseClientCutTool {
		stopAfter = wireBreakAt
	}
	got := wireRequest(srv.URL, c.d.model, c.d.client, base != caseNoUsage, tool, stopAfter)
	var lg wireLog
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		lw.mu.Lock()
		lg = readWireLog(logs.String())
		lw.mu.Unlock()
		if lg.found {
			break
		}
	}
	if stopAfter > 0 {
		judgeClientCut(&res, got, lg, fake)
	} else {
		judgeWhole(&res, c, got, lg, fake, fb)
	}
	if len(res.problems) > 0 {
		res.problems = append(res.problems, fmt.Sprintf("took %s; %s\nclient got:\n%s", got.took.Round(time.Millisecond), lg, clip(got.raw)))
	}
	return res
}

func clip(b []byte) string {
	const most = 2400
	if len(b) > most {
		return string(b[:most/2]) + "\n[…]\n" + string(b[len(b)-most/2:])
	}
	return string(b)
}
