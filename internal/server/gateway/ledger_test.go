package gateway_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/server/gateway"
	"github.com/sluice-gw/sluice/internal/server/spendstore"
	"github.com/sluice-gw/sluice/internal/server/usage"
)

// ledgerUpstream is one fake provider on 127.0.0.1 serving two
// providers of a gateway, /p (primary, model up-a) and /b (backup,
// model up-b), each call answered as its prompt says:
//
//   - "plain": a whole answer with its usage (100 in, 20 of them
//     cached; 30 out);
//   - "retry": a 503 from the primary; the backup answers (90 in, 12
//     out);
//   - "hedge": the primary stays silent until the gateway cancels it
//     (the hedge's loser, billed its input); the backup answers (80 in,
//     9 out);
//   - "cut": the primary streams ten words and breaks off, without its
//     usage; the backup continues it from a prefill, with its usage (60
//     in, 8 out).
//
// Probes are answered and not counted.
type ledgerUpstream struct {
	srv       *httptest.Server
	mu        sync.Mutex
	calls     map[string]int // by provider and prompt: "p hedge"
	cancelled chan struct{}  // the hedge's loser saw its cancel
	once      sync.Once
}

func newLedgerUpstream(t *testing.T) *ledgerUpstream {
	u := &ledgerUpstream{calls: map[string]int{}, cancelled: make(chan struct{})}
	u.srv = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *ledgerUpstream) count(what string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.calls[what]
}

func wholeAnswer(w http.ResponseWriter, prompt, cached, completion int) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"c","object":"chat.completion","created":1,"model":"up","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":%d}}}`,
		prompt, completion, prompt+completion, cached)
}

func (u *ledgerUpstream) serve(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Sluice-Probe") != "" {
		wholeAnswer(w, 1, 0, 1)
		return
	}
	who := r.URL.Path[1:2] // "p" or "b"
	var body struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	raw, _ := io.ReadAll(r.Body)
	json.Unmarshal(raw, &body)
	last := body.Messages[len(body.Messages)-1]
	prompt := last.Content
	if last.Role == "assistant" {
		prompt = "continue"
	}
	u.mu.Lock()
	u.calls[who+" "+prompt]++
	u.mu.Unlock()
	switch who + " " + prompt {
	case "p plain":
		wholeAnswer(w, 100, 20, 30)
	case "p retry":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(503)
		io.WriteString(w, `{"error":{"message":"overloaded","type":"server_error"}}`)
	case "b retry":
		wholeAnswer(w, 90, 0, 12)
	case "p hedge":
		select {
		case <-r.Context().Done():
			u.once.Do(func() { close(u.cancelled) })
		case <-time.After(10 * time.Second):
		}
	case "b hedge":
		wholeAnswer(w, 80, 0, 9)
	case "p cut":
		s := startSSE(w, false)
		for i := range 10 {
			s.text(word(i))
		}
		// The handler returns: the stream ends without its finish
		// reason, its usage or its terminator.
	case "b continue":
		s := startSSE(w, false)
		for i := 10; i < 18; i++ {
			s.text(word(i))
		}
		s.raw("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"up\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
		s.raw("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"up\",\"choices\":[],\"usage\":{\"prompt_tokens\":60,\"completion_tokens\":8,\"total_tokens\":68}}\n\n")
		s.raw("data: [DONE]\n\n")
	default:
		w.WriteHeader(500)
	}
}

// ledgerStack is a gateway with a spend-limited key k in front of the
// ledger upstream: model m on the primary then the backup (which
// continues broken streams from a prefill), model h the same with a
// hedge after 40 ms.
func ledgerStack(t *testing.T, u *ledgerUpstream, rec *usage.Recorder) *stack {
	t.Helper()
	y := fmt.Sprintf(`
listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
state: {dir: %q}
log: {level: debug}
hedging: {budget: 1, burst: 10}
providers:
  - {name: primary, kind: openai, base_url: "%s/p/v1", continuation: none}
  - {name: backup, kind: openai, base_url: "%s/b/v1", continuation: prefill}
models:
  - name: m
    targets: [{provider: primary, model: up-a}, {provider: backup, model: up-b}]
  - name: h
    hedge_after: 40ms
    targets: [{provider: primary, model: up-a}, {provider: backup, model: up-b}]
keys:
  - {name: k, tenant: t, sha256: %s, spend: {daily: 100}}
prices:
  up-a: {input: 2.5, cached_input: 1.25, output: 10}
  up-b: {input: 3, output: 15}
`, t.TempDir(), u.srv.URL, u.srv.URL, config.KeyHash("sk-k"))
	cfg, err := config.Parse([]byte(y), "ledger.yaml")
	if err != nil {
		t.Fatal(err)
	}
	logs := &bytes.Buffer{}
	sw := &syncWriter{w: logs}
	g, err := gateway.New(cfg, gateway.Options{Logger: gateway.NewLogger(sw, cfg.Log), Usage: rec, SpendStore: spendstore.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(g.Close)
	s := &stack{t: t, url: srv.URL, gw: g, logs: logs, logMu: &sw.mu}
	t.Cleanup(s.assertDrained)
	return s
}

// books is what each view of the ledger adds up to over a run.
type books struct {
	costMicros            int64
	input, output         int64 // tokens; input with its cached part
	requests, calls       int64
	haveTokens, haveCalls bool
}

func (b books) String() string {
	s := fmt.Sprintf("$%.6f", float64(b.costMicros)/1e6)
	if b.haveTokens {
		s += fmt.Sprintf(", %d in, %d out", b.input, b.output)
	}
	if b.haveCalls {
		s += fmt.Sprintf(", %d requests, %d calls", b.requests, b.calls)
	}
	return s
}

func micros(dollars float64) int64 { return int64(math.Round(dollars * 1e6)) }

var (
	logField = regexp.MustCompile(`\b(cost_dollars|input_tokens|output_tokens|calls)=(\S+)`)
	callKind = regexp.MustCompile(`kind=(\S+)`)
	callCost = regexp.MustCompile(`cost_micros=(\d+)`)
)

// logBooks adds up the request log lines.
func logBooks(t *testing.T, text string) (b books, lines int) {
	t.Helper()
	b.haveTokens, b.haveCalls = true, true
	for _, l := range strings.Split(text, "\n") {
		if !strings.Contains(l, "msg=request ") {
			continue
		}
		lines++
		b.requests++
		for _, m := range logField.FindAllStringSubmatch(l, -1) {
			v, err := strconv.ParseFloat(m[2], 64)
			if err != nil {
				t.Fatalf("%s in %s: %v", m[0], l, err)
			}
			switch m[1] {
			case "cost_dollars":
				b.costMicros += micros(v)
			case "input_tokens":
				b.input += int64(v)
			case "output_tokens":
				b.output += int64(v)
			case "calls":
				b.calls += int64(v)
			}
		}
	}
	return b, lines
}

// metricBooks adds up sluice_cost_total and sluice_tokens_total for key.
func metricBooks(t *testing.T, s *stack, key string) books {
	b := books{haveTokens: true}
	for _, l := range strings.Split(httpGetAdmin(t, s, "/metrics"), "\n") {
		name, rest, ok := strings.Cut(l, "{")
		if !ok || !strings.Contains(rest, `key="`+key+`"`) {
			continue
		}
		v, err := strconv.ParseFloat(l[strings.LastIndexByte(l, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		switch {
		case name == "sluice_cost_total":
			b.costMicros += micros(v)
		case name == "sluice_tokens_total" && strings.Contains(rest, `direction="input"`):
			b.input += int64(v)
		case name == "sluice_tokens_total" && strings.Contains(rest, `direction="output"`):
			b.output += int64(v)
		}
	}
	return b
}

// exportBooks adds up the usage export's rows for key k.
func exportBooks(t *testing.T, s *stack) books {
	var out struct {
		Rows []struct {
			Key      string `json:"key"`
			Requests int64  `json:"requests"`
			Calls    *int64 `json:"calls"`
			Input    int64  `json:"input_tokens"`
			Cached   int64  `json:"cached_input_tokens"`
			Output   int64  `json:"output_tokens"`
			Cost     int64  `json:"cost_micros"`
		} `json:"rows"`
	}
	text := httpGetAdmin(t, s, "/admin/usage?group=key&format=json")
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		t.Fatalf("the usage export: %v\n%s", err, text)
	}
	b := books{haveTokens: true, haveCalls: true}
	for _, r := range out.Rows {
		if r.Key != "k" {
			continue
		}
		b.costMicros += r.Cost
		b.input += r.Input + r.Cached
		b.output += r.Output
		b.requests += r.Requests
		if r.Calls != nil {
			b.calls += *r.Calls
		}
	}
	return b
}

// One ledger: a run of every kind of upstream call (a plain answer; a
// retry after a 503; a hedge whose loser, cancelled in flight, is billed
// its input; a stream cut after ten words and continued on another
// target), and each view of what it cost (the spend counter, the usage
// export, the request log lines and sluice_cost_total) adds up to the
// same figure, to the micro-dollar; the tokens of the export, the log
// lines and sluice_tokens_total agree too. The log names each request's
// calls, the export counts the calls it billed, and the debug log's
// per-call lines name each call's kind.
func TestLedgerViewsAgree(t *testing.T) {
	u := newLedgerUpstream(t)
	rec := usage.NewRecorder(usage.Options{})
	s := ledgerStack(t, u, rec)
	hdr := bearer("sk-k")
	for _, c := range []struct{ model, prompt string }{{"m", "plain"}, {"m", "retry"}, {"h", "hedge"}, {"m", "cut"}} {
		stream := c.prompt == "cut"
		body := fmt.Sprintf(`{"model":%q,"max_tokens":50,"stream":%v,"messages":[{"role":"user","content":%q}]}`, c.model, stream, c.prompt)
		status, _, b := s.do("/v1/chat/completions", body, hdr)
		if status != 200 {
			t.Fatalf("%s: %d %s", c.prompt, status, b)
		}
		if stream && (!strings.Contains(string(b), word(17)) || !strings.HasSuffix(string(b), "data: [DONE]\n\n")) {
			t.Fatalf("cut: the stream was not continued to its end:\n%s", b)
		}
	}
	for what, want := range map[string]int{"p plain": 1, "p retry": 1, "b retry": 1, "p hedge": 1, "b hedge": 1, "p cut": 1, "b continue": 1} {
		if n := u.count(what); n != want {
			t.Fatalf("the upstream saw %d calls %q, want %d: the run did not make every kind of call", n, what, want)
		}
	}
	select {
	case <-u.cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the hedge's loser was never cancelled")
	}
	// Settled: every request logged, every call's slot given back (a
	// loser settles its spend before it gives its slot back).
	waitFor(t, "four request log lines and every call ended", func() bool {
		_, lines := logBooks(t, s.logText())
		snap := s.gw.Runner().Snapshot()
		return lines == 4 && snap.InFlight == 0
	})

	spend := books{costMicros: micros(seriesValue(t, s, `sluice_spend_dollars{name="k",scope="key",window="daily"}`))}
	logs, _ := logBooks(t, s.logText())
	views := []struct {
		name string
		b    books
	}{
		{"spend (sluice_spend_dollars)", spend},
		{"usage export (/admin/usage)", exportBooks(t, s)},
		{"request log lines", logs},
		{"sluice_cost_total, sluice_tokens_total", metricBooks(t, s, "k")},
	}
	var report strings.Builder
	for _, v := range views {
		fmt.Fprintf(&report, "\n  %-40s %s", v.name, v.b)
	}
	t.Logf("the books:%s", report.String())
	for _, v := range views[1:] {
		if v.b.costMicros != spend.costMicros {
			t.Errorf("%s adds up to %d µ$, spend to %d µ$; want one figure:%s", v.name, v.b.costMicros, spend.costMicros, report.String())
		}
	}
	exp, met := views[1].b, views[3].b
	if exp.input != logs.input || exp.output != logs.output || met.input != logs.input || met.output != logs.output {
		t.Errorf("tokens disagree:%s", report.String())
	}
	// 4 requests; the export bills 6 calls (the plain answer, the
	// retry's answer, the hedge and its loser, the cut stream and its
	// continuation), the log names 7 (the failed call the retry
	// followed too).
	if exp.requests != 4 || exp.calls != 6 || logs.calls != 7 {
		t.Errorf("export: %d requests, %d calls; log: %d calls; want 4, 6 and 7", exp.requests, exp.calls, logs.calls)
	}
	// At debug level each record is logged: its kind, and a cost that
	// adds up to the same figure.
	kinds := map[string]int{}
	var perCall int64
	for _, l := range strings.Split(s.logText(), "\n") {
		if !strings.Contains(l, "msg=call ") {
			continue
		}
		kinds[callKind.FindStringSubmatch(l)[1]]++
		c, _ := strconv.ParseInt(callCost.FindStringSubmatch(l)[1], 10, 64)
		perCall += c
	}
	if want := map[string]int{"attempt": 3, "retry": 1, "hedge": 1, "hedge_loser": 1, "continuation": 1}; fmt.Sprint(kinds) != fmt.Sprint(want) || perCall != spend.costMicros {
		t.Errorf("call records logged: %v, %d µ$; want %v and %d µ$", kinds, perCall, want, spend.costMicros)
	}
	// Every call's reported usage is in, at its own target's price; the
	// loser's and the continuation's inputs come on top.
	known := micros((80*2.5+20*1.25+30*10)/1e6) + micros((90*3+12*15)/1e6) + micros((80*3+9*15)/1e6) + micros((60*3+8*15)/1e6)
	if spend.costMicros <= known {
		t.Errorf("spend %d µ$, want more than the reported usage's %d µ$ (the loser's input and the cut stream's output come on top)", spend.costMicros, known)
	}
}

// loserTransport answers the backup's calls at once and holds the
// primary's, whatever their context, until release is closed: a race's
// loser that ends after its request has been answered.
type loserTransport struct{ release chan struct{} }

func (l loserTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	io.Copy(io.Discard, r.Body)
	r.Body.Close()
	if strings.HasPrefix(r.URL.Path, "/p/") && r.Header.Get("X-Sluice-Probe") == "" {
		<-l.release
		if err := r.Context().Err(); err != nil {
			return nil, err
		}
		return nil, errors.New("released")
	}
	body := `{"id":"c","object":"chat.completion","created":1,"model":"up","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":80,"completion_tokens":9,"total_tokens":89}}`
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
}

// A hedged request's log line waits for its loser: the answer goes out
// and the request is counted, but its line, which sums its calls, is
// written only once the loser (held here past the answer) is recorded,
// and then carries both calls and the loser's input.
func TestLogLineWaitsForTheLoser(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free)
	y := `
listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
hedging: {budget: 1, burst: 10}
providers:
  - {name: primary, kind: openai, base_url: "http://127.0.0.1:9/p/v1"}
  - {name: backup, kind: openai, base_url: "http://127.0.0.1:9/b/v1"}
models:
  - name: h
    hedge_after: 20ms
    targets: [{provider: primary, model: up-a}, {provider: backup, model: up-b}]
prices:
  up-a: {input: 2.5, output: 10}
  up-b: {input: 3, output: 15}
`
	cfg, err := config.Parse([]byte(y), "loser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	logs := &bytes.Buffer{}
	sw := &syncWriter{w: logs}
	g, err := gateway.New(cfg, gateway.Options{Logger: gateway.NewLogger(sw, cfg.Log), Transport: loserTransport{release: release}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(g.Close)
	s := &stack{t: t, url: srv.URL, gw: g, logs: logs, logMu: &sw.mu}
	t.Cleanup(s.assertDrained)

	if status, _, b := s.do("/v1/chat/completions", `{"model":"h","max_tokens":20,"messages":[{"role":"user","content":"hedge"}]}`, nil); status != 200 {
		t.Fatalf("%d %s", status, b)
	}
	counted := func() bool {
		for _, l := range strings.Split(httpGetAdmin(t, s, "/metrics"), "\n") {
			if strings.HasPrefix(l, "sluice_requests_total{") && strings.Contains(l, `outcome="ok"`) && strings.HasSuffix(l, " 1") {
				return true
			}
		}
		return false
	}
	waitFor(t, "the request to be counted (its handler done)", counted)
	if strings.Contains(s.logText(), "msg=request ") {
		t.Fatalf("the log line was written before the loser was recorded:\n%s", s.logText())
	}
	free()
	waitFor(t, "the request's log line", func() bool { return strings.Contains(s.logText(), "msg=request ") })
	b, _ := logBooks(t, s.logText())
	// The backup's answer: 80 in at $3, 9 out at $15 a million; the
	// loser adds its counted input at $2.50.
	if b.calls != 2 || b.costMicros <= 80*3+9*15 || !strings.Contains(s.logText(), "second_call=hedge") {
		t.Errorf("log line: %s; want calls=2 and more than the answer's 375 µ$\n%s", b, s.logText())
	}
	if m := metricBooks(t, s, "-"); m.costMicros != b.costMicros {
		t.Errorf("sluice_cost_total %d µ$, the log line %d µ$", m.costMicros, b.costMicros)
	}
}
