package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/harness/procs"
)

// The agent frameworks most applications reach an LLM through, at their
// defaults, against real sluice serve and sluice mock processes: the
// Vercel AI SDK (ai, @ai-sdk/openai, @ai-sdk/anthropic) and LangChain JS
// (@langchain/openai, @langchain/anthropic), pinned in
// sdk/package.json. Each client runs every case of its script
// (sdk/aisdk.mjs, sdk/langchain.mjs) on every path a request of its API
// can take through Sluice: to a target of its own API, translated to the
// other, across a failover from an OpenAI target to an Anthropic one and
// back, and, for the AI SDK's default OpenAI provider (which calls
// /v1/responses), to an OpenAI target that serves the Responses API and,
// through the Responses bridge, to an Anthropic and a Gemini target.
//
//	SLUICE_E2E_LONG=1 go test ./test/e2e -run Frameworks -v
//
// Recording. With SLUICE_RECORD_SDK_REQUESTS=1 the test instead runs
// each client (and the official SDKs' scripts, openai.mjs and
// anthropic.mjs) once, on its own API's target, through a recorder that
// keeps every distinct request body it sends, and writes them to
// internal/wire/translate/testdata/sdkrequests/<client>-<case>.json
// (then <client>-<case>-2.json for a case's second distinct body, and so
// on), indented, with the ids the mock made (call_..., toolu_...)
// numbered in order of appearance. Run it after upgrading a client, and
// read the diff: the translate package's TestSDKRequests translates every
// recording to the other API.
//
//	SLUICE_RECORD_SDK_REQUESTS=1 go test ./test/e2e -run Frameworks -v
func TestFrameworks(t *testing.T) {
	recording := os.Getenv(recordEnv) != ""
	if os.Getenv("SLUICE_E2E_LONG") == "" && !recording {
		t.Skip("runs the AI SDK and LangChain on 19 paths for about two minutes; set SLUICE_E2E_LONG=1 to run it (SLUICE_E2E_LONG=1 go test ./test/e2e -run Frameworks -v)")
	}
	needNode(t)
	bin := buildSluice(t)
	listen, admin, up := freeAddr(t), freeAddr(t), freeAddr(t)
	// Nothing listens there: every call to the failover chains' first
	// target is refused at once.
	dead := freeAddr(t)
	// An answer's words are the prompt's (words: prompt), not the next
	// draws of one seed shared by clients running at once, so the
	// conversations the clients send back, and the recordings, are the
	// same on every run.
	script := filepath.Join(t.TempDir(), "mock.yaml")
	if err := os.WriteFile(script, []byte("ttft: 5ms\ntpot: 1ms\noutput_tokens: 8\nwords: prompt\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	start(t, ready("http://"+up+"/stats"), bin, "mock", "--script", script, "--listen", up)

	cells := frameworkCells()
	if recording {
		cells = recordingCells()
	}
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	if err := os.WriteFile(path, []byte(frameworksConfig(listen, admin, up, dead, cells)), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SLUICE_SDK_GEMINI_KEY", "gemini-test-key")
	serve := start(t, ready("http://"+admin+"/readyz"), bin, "serve", "--config", path)
	base := "http://" + listen
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("sluice serve's log:\n%s", serve.Tail(200_000))
		}
	})

	// Four clients at a time: each is one node process that waits on
	// the gateway most of its life. Cells that are shed go first, since
	// LangChain retries a shed request for one to two minutes.
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for _, c := range cells {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			t.Run(c.name(), func(t *testing.T) {
				env := c.env(base)
				var rec *recorder
				if recording {
					rec = newRecorder(t, c.client, base)
					env = c.env(rec.url)
					env = append(env, "SLUICE_RECORD=1")
				}
				if c.shed {
					holdBusy(t, serve, base, admin, c)
				}
				out, err := runNode(t, c.script, env, c.timeout())
				if rec != nil {
					rec.write(t)
				}
				c.check(t, out, err)
			})
		}()
	}
	wg.Wait()
}

// recordEnv, set, makes TestFrameworks record the clients' requests.
const recordEnv = "SLUICE_RECORD_SDK_REQUESTS"

// A route is the way a request takes through the gateway: the models
// named <family>-<route> are served by its targets, and its API is the
// API of the target that answers.
type route struct {
	name, api string
	targets   string
	bridge    bool // reached through the Responses bridge
}

var (
	nativeRoute     = map[string]route{"openai": routes[0], "anthropic": routes[1]}
	translatedRoute = map[string]route{"openai": routes[1], "anthropic": routes[0]}
	routes          = []route{
		{"oai", "openai", "[{provider: oai, model: gpt-x}]", false},
		{"ant", "anthropic", "[{provider: ant, model: claude-x}]", false},
		{"oai-ant", "anthropic", "[{provider: dead-oai, model: gpt-x}, {provider: ant, model: claude-x}]", false},
		{"ant-oai", "openai", "[{provider: dead-ant, model: claude-x}, {provider: oai, model: gpt-x}]", false},
		{"gem", "anthropic", "[{provider: gem, model: gemini-x}]", false},
	}
)

// modelFamilies are the model names clients send: the frameworks decide
// what a model can do from its name (structured outputs, reasoning,
// default max_tokens), so each API's clients get names of its vendor's
// models. gpt-5 names a reasoning model, for the reasoning case:
// ChatOpenAI sends reasoning_effort for no other.
var modelFamilies = []string{"gpt-4.1", "gpt-5", "claude-sonnet-4-5"}

// A frameworkCell is one client on one route.
type frameworkCell struct {
	client   string // as in the recordings' names
	script   string
	provider string // SLUICE_PROVIDER
	api      string // the client's API: openai (chat or responses) or anthropic
	route    route
	shed     bool     // also run the shed case, on a model of its own
	embed    bool     // also run the embeddings case
	only     []string // run only these cases (SLUICE_CASES)
}

func (c frameworkCell) name() string {
	return c.client + "/" + c.pathName()
}

func (c frameworkCell) pathName() string {
	switch {
	case c.provider == "openai-responses" && c.route.api == "openai":
		return "responses-native"
	case c.provider == "openai-responses":
		return "responses-bridge-to-" + map[string]string{"ant": "anthropic", "gem": "gemini"}[c.route.name]
	case c.route.name == "oai-ant":
		return "failover-openai-to-anthropic"
	case c.route.name == "ant-oai":
		return "failover-anthropic-to-openai"
	case c.route.api == c.api:
		return "native"
	}
	return "translated-to-" + c.route.api
}

func (c frameworkCell) family() string {
	if c.api == "anthropic" {
		return "claude-sonnet-4-5"
	}
	return "gpt-4.1"
}

func (c frameworkCell) model() string { return c.family() + "-" + c.route.name }

func (c frameworkCell) shedModel() string { return "shed-" + strings.ReplaceAll(c.client, "/", "-") }

func (c frameworkCell) env(base string) []string {
	env := []string{"SLUICE_URL=" + base, "SLUICE_MODEL=" + c.model(), "SLUICE_PROVIDER=" + c.provider, "SLUICE_TARGET_API=" + c.route.api}
	if c.api == "openai" {
		env = append(env, "SLUICE_REASONING_MODEL=gpt-5-"+c.route.name)
	}
	if c.embed {
		env = append(env, "SLUICE_EMBED_MODEL=text-embedding-3-small")
	}
	if c.shed {
		env = append(env, "SLUICE_SHED_MODEL="+c.shedModel())
	}
	if c.only != nil {
		env = append(env, "SLUICE_CASES="+strings.Join(c.only, ","))
	}
	return env
}

// timeout bounds the script: a LangChain client retries a shed request
// six times, backing off 1 s doubling, times 1 to 2 (63 to 126 s).
func (c frameworkCell) timeout() time.Duration {
	if c.shed && c.script == "langchain.mjs" {
		return 200 * time.Second
	}
	return 60 * time.Second
}

// cases are the steps the script must pass on this cell, in its order.
func (c frameworkCell) cases() []string {
	if c.only != nil {
		return c.only
	}
	var cs []string
	if c.shed {
		cs = append(cs, "shed")
	}
	switch c.script {
	case "aisdk.mjs":
		cs = append(cs, "generate", "stream", "conversation", "tools", "tools streamed", "agent", "agent streamed",
			"structured", "structured streamed", "object", "object streamed", "reasoning")
	case "langchain.mjs":
		cs = append(cs, "generate", "stream", "tools", "tools streamed", "agent", "agent streamed",
			"structured", "structured streamed", "reasoning")
	}
	if c.embed {
		cs = append(cs, "embeddings")
	}
	return append(cs, "errors")
}

// check fails t for every case the script did not pass, naming the
// client, the path, the model and the case, with the script's own words.
func (c frameworkCell) check(t *testing.T, out string, err error) {
	t.Helper()
	passed := map[string]bool{}
	failed := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if name, ok := strings.CutPrefix(line, "ok "); ok {
			passed[name] = true
		} else if rest, ok := strings.CutPrefix(line, "fail "); ok {
			name, why, _ := strings.Cut(rest, ": ")
			failed[name] = why
		}
	}
	bad := false
	for _, cs := range c.cases() {
		if passed[cs] {
			continue
		}
		bad = true
		why := failed[cs]
		if why == "" {
			why = "not run"
		}
		hint := ""
		if c.route.bridge {
			hint = " (through the Responses bridge)"
		}
		t.Errorf("%s on %s (model %s, answered in %s's API): case %q failed: %s%s", c.client, c.pathName(), c.model(), c.route.api, cs, why, hint)
	}
	for name := range passed {
		if !slices.Contains(c.cases(), name) {
			bad = true
			t.Errorf("%s on %s: the script passed a case %q this test does not expect; add it to frameworkCell.cases", c.client, c.pathName(), name)
		}
	}
	if err != nil && !bad {
		t.Errorf("%s on %s: node %s: %v", c.client, c.pathName(), c.script, err)
		bad = true
	}
	if bad {
		t.Logf("node %s:\n%s", c.script, out)
	}
}

// frameworkCells are the clients on their paths.
func frameworkCells() []frameworkCell {
	type client struct {
		name, script, provider, api string
	}
	clients := []client{
		{"aisdk-openai-chat", "aisdk.mjs", "openai-chat", "openai"},
		{"aisdk-anthropic", "aisdk.mjs", "anthropic", "anthropic"},
		{"langchain-openai", "langchain.mjs", "openai", "openai"},
		{"langchain-anthropic", "langchain.mjs", "anthropic", "anthropic"},
	}
	var cells []frameworkCell
	for _, cl := range clients {
		for _, p := range []route{nativeRoute[cl.api], translatedRoute[cl.api], routes[2], routes[3]} {
			c := frameworkCell{client: cl.name, script: cl.script, provider: cl.provider, api: cl.api, route: p}
			if p == nativeRoute[cl.api] {
				c.shed, c.embed = true, cl.api == "openai"
			}
			cells = append(cells, c)
		}
	}
	// The AI SDK's default OpenAI provider, openai(model), calls the
	// Responses API: passed through to a target that serves it, bridged
	// to chat for the others.
	responses := frameworkCell{client: "aisdk-openai-responses", script: "aisdk.mjs", provider: "openai-responses", api: "openai"}
	for _, p := range []route{routes[0], routes[1], routes[4]} {
		c := responses
		c.route = p
		c.route.bridge = p.name != "oai"
		c.shed, c.embed = p.name == "oai", p.name == "oai"
		cells = append(cells, c)
	}
	// The official SDKs' scripts across both failovers: a streamed tool
	// round trip and a schema answer, each call failing over to a target
	// of the other API. (Their errors step expects what only translation
	// refuses, n: 2, which a chain with a target of the client's API
	// sends there instead.)
	for _, p := range []route{routes[2], routes[3]} {
		cells = append(cells,
			frameworkCell{client: "openai-node", script: "openai.mjs", api: "openai", route: p, only: officialCases},
			frameworkCell{client: "anthropic-node", script: "anthropic.mjs", api: "anthropic", route: p, only: officialCases})
	}
	// LangChain's shed cells take longest; start them first.
	slices.SortStableFunc(cells, func(a, b frameworkCell) int {
		return boolRank(b.shed && b.script == "langchain.mjs") - boolRank(a.shed && a.script == "langchain.mjs")
	})
	return cells
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// recordingCells run each client once on its own API's target, the
// official SDKs' scripts too, with neither shedding nor errors recorded.
func recordingCells() []frameworkCell {
	var cells []frameworkCell
	for _, c := range frameworkCells() {
		if c.route == nativeRoute[c.api] || (c.provider == "openai-responses" && c.route.name == "oai") {
			c.shed = false
			cells = append(cells, c)
		}
	}
	return append(cells,
		frameworkCell{client: "openai-node", script: "openai.mjs", api: "openai", route: nativeRoute["openai"], only: officialCases},
		frameworkCell{client: "anthropic-node", script: "anthropic.mjs", api: "anthropic", route: nativeRoute["anthropic"], only: officialCases})
}

// officialCases are the official SDKs' scripts' steps but errors, which
// expects what only translation refuses (n: 2).
var officialCases = []string{"chat", "stream", "tools", "tools streamed", "json schema", "reasoning"}

// frameworksConfig serves every family on every path, and gives each
// shed frameworkCell a model of its own on a provider of one slot with no queue.
func frameworksConfig(listen, admin, up, dead string, cells []frameworkCell) string {
	var b strings.Builder
	fmt.Fprintf(&b, `listen: %s
admin_listen: %s
# No queue: a request for a provider whose slots are all taken is shed
# at once, with Retry-After.
admission:
  queue: {max_depth: 0}
providers:
  - {name: oai, kind: openai, base_url: "http://%[3]s/v1", breaker: off, forward_headers: [X-Mock-Fail]}
  - {name: ant, kind: anthropic, base_url: "http://%[3]s/v1", breaker: off, forward_headers: [X-Mock-Fail]}
  - {name: gem, kind: gemini, base_url: "http://%[3]s/v1beta", api_key_env: SLUICE_SDK_GEMINI_KEY, breaker: off}
  # Refused connections: every call fails over to the next target (no
  # breaker, so every call tries them first).
  - {name: dead-oai, kind: openai, base_url: "http://%[4]s/v1", breaker: off}
  - {name: dead-ant, kind: anthropic, base_url: "http://%[4]s/v1", breaker: off}
`, listen, admin, up, dead)
	for _, c := range cells {
		if c.shed {
			// One slot, held by a call the mock never answers (X-Mock-Fail: hang).
			fmt.Fprintf(&b, "  - {name: %s, kind: openai, base_url: \"http://%s/v1\", max_in_flight: 1, timeout: 10m, breaker: off, forward_headers: [X-Mock-Fail]}\n", c.shedModel(), up)
		}
	}
	b.WriteString("models:\n  - {name: text-embedding-3-small, targets: [{provider: oai, model: embed-x}]}\n")
	for _, f := range modelFamilies {
		for _, p := range routes {
			fmt.Fprintf(&b, "  - {name: %s-%s, targets: %s}\n", f, p.name, p.targets)
		}
	}
	for _, c := range cells {
		if c.shed {
			fmt.Fprintf(&b, "  - {name: %s, targets: [{provider: %[1]s, model: gpt-x}]}\n", c.shedModel())
		}
	}
	return b.String()
}

// holdBusy takes the one slot of c's shed model with a call the mock
// never answers, until t ends, and returns once the gateway holds it.
func holdBusy(t *testing.T, serve *procs.Proc, base, admin string, c frameworkCell) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		body := `{"model":"` + c.shedModel() + `","messages":[{"role":"user","content":"hold"}]}`
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Mock-Fail", "hang")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	want := `sluice_in_flight_requests{scope="` + c.shedModel() + `"} 1`
	await(t, serve, 10*time.Second, func(ctx context.Context, _ *procs.Proc) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+admin+"/metrics", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if !bytes.Contains(b, []byte(want)) {
			return fmt.Errorf("the hold on %s is not in flight yet", c.shedModel())
		}
		return nil
	})
}

// A recorder stands between one client and the gateway and keeps every
// distinct request body the client sends, by the case the script says
// it is in (POST /__record, body: the case's name).
type recorder struct {
	client string
	url    string

	mu     sync.Mutex
	step   string
	order  []string          // file names, in the order recorded
	bodies map[string][]byte // file name -> indented body
	seen   map[string]bool   // bodies already kept
	ids    map[string]string // an id the mock made -> its number
	perID  map[string]int    // ids numbered so far, per prefix
	inStep map[string]int    // bodies kept so far, per case
}

// unrecorded are the cases whose requests are not kept: errors and shed
// test statuses (the official scripts' errors ask for n: 2 on purpose),
// and embeddings have no other API to be translated to.
var unrecorded = []string{"errors", "shed", "embeddings"}

// volatileID matches the ids the mock makes for answers and tool calls,
// which clients send back in the conversation.
var volatileID = regexp.MustCompile(`\b(call|toolu|msg|resp|fc|rs|chatcmpl)[_-][0-9A-Za-z_-]{8,}`)

func newRecorder(t *testing.T, client, gateway string) *recorder {
	target, err := url.Parse(gateway)
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{client: client, bodies: map[string][]byte{}, seen: map[string]bool{}, ids: map[string]string{}, perID: map[string]int{}, inStep: map[string]int{}}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1 // streams pass event by event
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if req.URL.Path == "/__record" {
			r.mu.Lock()
			r.step = string(body)
			r.mu.Unlock()
			return
		}
		if req.Method == http.MethodPost {
			r.keep(body)
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		proxy.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.url = srv.URL
	return r
}

func (r *recorder) keep(body []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.step == "" || slices.Contains(unrecorded, r.step) {
		return
	}
	norm := volatileID.ReplaceAllStringFunc(string(body), func(id string) string {
		if n, ok := r.ids[id]; ok {
			return n
		}
		prefix := id[:strings.IndexAny(id, "_-")]
		r.perID[prefix]++
		r.ids[id] = fmt.Sprintf("%s_%d", prefix, r.perID[prefix])
		return r.ids[id]
	})
	if r.seen[norm] {
		return
	}
	r.seen[norm] = true
	var out bytes.Buffer
	if err := jsonIndent(&out, []byte(norm)); err != nil {
		return // not JSON: nothing to translate
	}
	r.inStep[r.step]++
	name := r.client + "-" + strings.ReplaceAll(r.step, " ", "-")
	if n := r.inStep[r.step]; n > 1 {
		name += fmt.Sprintf("-%d", n)
	}
	name += ".json"
	r.order = append(r.order, name)
	r.bodies[name] = out.Bytes()
}

// write replaces the client's recordings with those of this run.
func (r *recorder) write(t *testing.T) {
	t.Helper()
	dir := filepath.Join("..", "..", "internal", "wire", "translate", "testdata", "sdkrequests")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	old, _ := filepath.Glob(filepath.Join(dir, r.client+"-*.json"))
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, name := range r.order {
		if err := os.WriteFile(filepath.Join(dir, name), r.bodies[name], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("recorded %d request bodies of %s in %s", len(r.order), r.client, dir)
}

// jsonIndent writes src indented by two spaces, with a final newline.
func jsonIndent(dst *bytes.Buffer, src []byte) error {
	if err := json.Indent(dst, src, "", "  "); err != nil {
		return err
	}
	dst.WriteByte('\n')
	return nil
}
