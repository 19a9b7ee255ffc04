package e2e

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config/upstreamscript"
	"github.com/sluice-gw/sluice/internal/model/upstream"
)

// The single-request faults of issue 21, each proven in real processes
// (docs/FAULTS.md has the table and the measured figures). Every row
// runs on the plain config (testdata/faults/sluice.yaml: one primary
// per model, a healthy fallback, every default), twice, each time on
// fresh processes:
//
//   - single: a few requests a few seconds apart, the traffic at which
//     no breaker trips on counts and no budget is deep;
//   - brownout: seed 000's brownout rate, 20 req/s (seed 000 is the
//     article "LLM API Slows to 30s, Your Server Holds 600 Requests",
//     docs/GLOSSARY.md), for 5 s, every request meeting the fault.
//
// The requests alternate between an OpenAI client and an Anthropic one
// (raw HTTP, server-sent events parsed here). The mocks answer 60 words
// that follow from the prompt (words: prompt), so mock.ExpectedAnswer
// gives the whole text each client must end with, exactly once,
// however the gateway splits it over calls.
//
// A row whose feature is not merged yet names it in pending and is
// skipped; SLUICE_E2E_PENDING=1 runs it anyway.
//
// Every streamed row also runs under other encodings: both mocks write
// their streams in a legal form other than compact JSON (sluice mock
// --encoding, package sseenc), and the client must get the same whole
// answer. A whole (unstreamed) row is the same bytes under every
// encoding, so it runs once, compact. Which encodings, where:
//
//   - TestFaultsQuick (the normal suite): the quick rows under three
//     hostile encodings, spaced (json.dumps), shuffle+crlf (random key
//     order, CRLF) and pretty (multi-line data:), instead of compact:
//     every encoding there would make the test command minutes longer,
//     and compact is what every other test already writes.
//   - TestFaultsOneAtATime (SLUICE_E2E_LONG): every row's single run
//     under compact, pydefault (spaced with \u escapes), shuffle,
//     pretty+crlf and comments+keepalive (comment lines, and keepalive
//     comments every second while a stream stalls, under the 5 s stall
//     floor);
//   - TestFaultsAtBrownoutRate (SLUICE_E2E_LONG): compact only. The
//     brownout run is about load, not spelling, and 100 requests per row
//     per encoding would take the long suite past twelve minutes.
//
// A subtest is row/encoding: -run 'Fault/cut-eof-40/pretty' runs one.
type faultRow struct {
	name   string
	fault  string // how it is caused, for the log and the docs
	header map[string]string
	stream bool
	// cfg is the gateway's config file under testdata/faults (default
	// sluice.yaml); primary and fallback the mocks' scripts (default
	// mock.yaml); vars fills a primary script's ${...} per run.
	cfg, primary, fallback string
	vars                   func(t *testing.T, run string) []string
	// warm: send three healthy requests first, so the primary has a
	// recent time to first token (see warmUp).
	warm bool
	// single: how many requests (default 4), how far apart (default
	// 1.5 s).
	n   int
	gap time.Duration
	// client judges one answer against the whole expected text.
	client func(a faultAnswer, want string) error
	// providers judges what the mocks saw over a run.
	providers func(f faultFigures, single bool) error
	// pending names the feature the row waits for (skipped until then).
	pending string
	// quick: part of the normal suite's subset (single run, 2 requests).
	quick bool
}

// Features being merged; a row waiting for one names it.
const (
	pendingCompleteness  = "stream completeness by content"
	pendingContinuation  = "mid-stream continuation"
	pendingWholeMidBody  = "whole answers that fail mid-body retried"
	silenceAnswerWithin  = 6 * time.Second  // the 2 s floor, the fallback's answer, a busy machine
	stallAnswerWithin    = 12 * time.Second // a stall deadline well under the idle timeout
	clientTimeout        = 40 * time.Second
	brownoutRate         = 20 // req/s: seed 000's
	brownoutWindow       = 5 * time.Second
	faultsParallel       = 2
	longSuiteMessage     = "the fault suite runs real processes for several minutes; set SLUICE_E2E_LONG=1 to run it (SLUICE_E2E_LONG=1 go test ./test/e2e -run Fault -v)"
	pendingRowsEnvToggle = "SLUICE_E2E_PENDING"
)

// The encodings of the doc comment above, as sluice mock --encoding
// words.
var (
	quickEncodings = []string{"spaced", "shuffle+crlf", "pretty"}
	longEncodings  = []string{"compact", "pydefault", "shuffle", "pretty+crlf", "comments+keepalive"}
)

// faultRun is one row under one encoding.
type faultRun struct {
	faultRow
	encoding string // sluice mock --encoding; "compact" writes as the mock always did
}

// underEncodings: each streamed row under every encoding, each whole
// row once, compact.
func underEncodings(rows []faultRow, encodings []string) []faultRun {
	var out []faultRun
	for _, r := range rows {
		if !r.stream {
			out = append(out, faultRun{r, "compact"})
			continue
		}
		for _, e := range encodings {
			out = append(out, faultRun{r, e})
		}
	}
	return out
}

func fail(k string) map[string]string { return map[string]string{"X-Mock-Fail": k} }

// wholeOnce: the whole answer, exactly once.
func wholeOnce(a faultAnswer, want string) error { return a.complete(want) }

// within: the whole answer, within d.
func within(d time.Duration) func(faultAnswer, string) error {
	return func(a faultAnswer, want string) error {
		if err := a.complete(want); err != nil {
			return err
		}
		if a.took > d {
			return fmt.Errorf("answered whole, but after %v (want within %v)", a.took.Round(time.Millisecond), d)
		}
		return nil
	}
}

// calls checks each mock's call count on a single run: -1 is any.
func calls(primaryPerRequest, fallbackPerRequest int) func(faultFigures, bool) error {
	return func(f faultFigures, single bool) error {
		n := f.requests
		if !single {
			return nil
		}
		if primaryPerRequest >= 0 && f.primary.Total != int64(primaryPerRequest*n) {
			return fmt.Errorf("the primary saw %d calls, want %d", f.primary.Total, primaryPerRequest*n)
		}
		if fallbackPerRequest >= 0 && f.fallback.Total != int64(fallbackPerRequest*n) {
			return fmt.Errorf("the fallback saw %d calls, want %d", f.fallback.Total, fallbackPerRequest*n)
		}
		return nil
	}
}

// rescuedSilence: the silent primary call was cancelled upstream once
// the fallback answered, and the fallback answered every request.
func rescuedSilence() func(faultFigures, bool) error {
	return func(f faultFigures, single bool) error {
		n := f.requests
		if f.primary.CancelledByClient == 0 {
			return fmt.Errorf("no silent primary call was cancelled upstream (primary: %+v)", f.primary)
		}
		if single && f.fallback.Total != int64(n) {
			return fmt.Errorf("the fallback saw %d calls, want %d (one per request)", f.fallback.Total, n)
		}
		return nil
	}
}

// continued: every request's answer took two calls in all, the broken
// one and its continuation (on the fallback or the same target).
func continued() func(faultFigures, bool) error {
	return func(f faultFigures, single bool) error {
		n := f.requests
		if single && f.primary.Total+f.fallback.Total != int64(2*n) {
			return fmt.Errorf("%d primary and %d fallback calls; want %d in all (each broken call continued once)", f.primary.Total, f.fallback.Total, 2*n)
		}
		return nil
	}
}

// restarted: a whole answer broken mid-body is restarted, since
// nothing reached the client: on the same target first while its
// breaker holds that a lone failure is brief (retry_same), then on the
// fallback, which answers each request once.
func restarted() func(faultFigures, bool) error {
	return func(f faultFigures, single bool) error {
		n := int64(f.requests)
		if single && (f.fallback.Total != n || f.primary.Total < n || f.primary.Total > 2*n) {
			return fmt.Errorf("%d primary and %d fallback calls; want %d to %d primary (a same-target retry at most once each) and %d fallback", f.primary.Total, f.fallback.Total, n, 2*n, n)
		}
		return nil
	}
}

// loneVars fills mock-lone.yaml: on the single run a seed whose calls
// fail and succeed by turns (each request's first call fails, its next
// succeeds) at rate 0.5; under the brownout rate a fixed seed at 0.1,
// so failures are scattered.
func loneVars(status int, retryAfter string, n int) func(*testing.T, string) []string {
	return func(t *testing.T, run string) []string {
		vars := []string{"${STATUS}", strconv.Itoa(status), "${RETRY_AFTER}", retryAfter}
		if run != "single" {
			return append(vars, "${SEED}", "7", "${RATE}", "0.1")
		}
		return append(vars, "${SEED}", strconv.FormatUint(alternatingSeed(t, status, n), 10), "${RATE}", "0.5")
	}
}

// alternatingSeed finds the first seed under which mock-lone.yaml's
// first 2n calls fail and succeed by turns, replaying the mock's own
// draws (package upstream's Planner).
func alternatingSeed(t *testing.T, status, n int) uint64 {
	t.Helper()
	raw, err := os.ReadFile("testdata/faults/mock-lone.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for seed := uint64(1); seed < 1<<20; seed++ {
		text := strings.NewReplacer("${SEED}", strconv.FormatUint(seed, 10), "${STATUS}", strconv.Itoa(status),
			"${RETRY_AFTER}", "0s", "${RATE}", "0.5").Replace(string(raw))
		cfg, err := upstreamscript.ParseScript([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		pl, ok := upstream.NewPlanner(cfg), true
		for i := 0; i < 2*n && ok; i++ {
			ok = (pl.Next(0).Fail != nil) == (i%2 == 0)
		}
		if ok {
			return seed
		}
	}
	t.Fatal("no seed alternates failures")
	return 0
}

func faultRows() []faultRow {
	const n = 4
	return []faultRow{
		{
			name: "hard-down", fault: "primary script: every call 503 (mock-down.yaml)",
			n: 15, gap: 3 * time.Second, // as the issue found it: fewer than 10 calls in any 12 s, so the breaker's minimum call count is never met
			client: wholeOnce,
			providers: func(f faultFigures, single bool) error {
				if single && f.fallback.Total != int64(f.requests) {
					return fmt.Errorf("the fallback saw %d calls, want %d (it answered every request)", f.fallback.Total, f.requests)
				}
				return nil
			},
			primary: "mock-down.yaml",
		},
		{
			name: "silent-before-headers", fault: "X-Mock-Fail: hang", header: fail("hang"),
			warm: true, client: within(silenceAnswerWithin), providers: rescuedSilence(),
		},
		{
			name: "silent-before-headers-stream", fault: "X-Mock-Fail: hang (stream)", header: fail("hang"), stream: true,
			warm: true, client: within(silenceAnswerWithin), providers: rescuedSilence(),
		},
		{
			name: "silent-before-first-token", fault: "X-Mock-Fail: stall:0:30s (stream)", header: fail("stall:0:30s"), stream: true,
			warm: true, client: within(silenceAnswerWithin), providers: rescuedSilence(), quick: true,
		},
		{
			name: "cut-eof-40", fault: "X-Mock-Fail: eof:40 (stream of 60)", header: fail("eof:40"), stream: true,
			client: wholeOnce, providers: continued(),
		},
		{
			name: "cut-reset-40", fault: "X-Mock-Fail: reset:40 (stream of 60)", header: fail("reset:40"), stream: true,
			client: wholeOnce, providers: continued(),
		},
		{
			name: "stall-after-40", fault: "X-Mock-Fail: stall:40:30s (stream of 60)", header: fail("stall:40:30s"), stream: true,
			client: within(stallAnswerWithin), providers: continued(),
		},
		{
			name: "malformed-40", fault: "X-Mock-Fail: malformed:40 (stream of 60)", header: fail("malformed:40"), stream: true,
			client: wholeOnce, providers: continued(),
		},
		{
			name: "no-done", fault: "X-Mock-Fail: no_done (complete stream, no [DONE] / message_stop)", header: fail("no_done"), stream: true,
			client: wholeOnce, providers: calls(1, 0),
		},
		{
			name: "context-length-fallback", fault: "X-Mock-Fail: context_length, chat has context_fallback: big", header: fail("context_length"),
			cfg: "sluice-context.yaml", client: wholeOnce, providers: calls(1, 1), quick: true,
		},
		{
			name: "context-length-no-fallback", fault: "X-Mock-Fail: context_length, no context_fallback", header: fail("context_length"),
			client: func(a faultAnswer, _ string) error {
				return a.refused(400, "context_length_exceeded", "maximum context length", "too long")
			},
			providers: calls(1, 0),
		},
		{
			name: "content-filter", fault: "X-Mock-Fail: content_filter", header: fail("content_filter"),
			client: func(a faultAnswer, _ string) error {
				return a.refused(400, "content_filter", "content management policy", "content filtering")
			},
			providers: calls(1, 0), quick: true,
		},
		{
			name: "lone-500", fault: "primary script: 500 at rate 0.5, a seed whose calls fail and succeed by turns (0.1 under load)",
			primary: "mock-lone.yaml", vars: loneVars(500, "0s", n),
			client: wholeOnce, providers: sameTarget(),
		},
		{
			name: "429-retry-after-2s", fault: "primary script: 429 with Retry-After: 2 at rate 0.5, alternating seed (0.1 under load)",
			primary: "mock-lone.yaml", vars: loneVars(429, "2s", n),
			// 3 s apart: past the Retry-After, so a provider paused for
			// it is open again by the next request.
			gap:    3 * time.Second,
			client: wholeOnce,
			providers: func(f faultFigures, single bool) error {
				// Under load only every answer counts: a 429 with
				// Retry-After may pause the whole provider (a rate limit
				// is the account's), so its other requests go on to the
				// fallback meanwhile.
				if !single {
					return nil
				}
				if err := sameTarget()(f, single); err != nil {
					return err
				}
				if f.p50 < 1900*time.Millisecond {
					return fmt.Errorf("median time to answer %v: the 2 s Retry-After was not waited out", f.p50)
				}
				return nil
			},
		},
		{
			name: "prefill-refused", fault: "X-Mock-Fail: truncate:40 on the primary; the fallback refuses prefill (mock-refuse-prefill.yaml)",
			header: fail("truncate:40"), stream: true, fallback: "mock-refuse-prefill.yaml",
			client: prefillRefusal,
		},
		{
			name: "events-before-failure", fault: "X-Mock-Fail: malformed:60, no time between tokens (mock-burst.yaml)",
			header: fail("malformed:60"), stream: true, primary: "mock-burst.yaml", quick: true,
			client: func(a faultAnswer, want string) error {
				if a.transport != nil || a.status != 200 {
					return fmt.Errorf("status %d, %v: %.200s", a.status, a.transport, a.body)
				}
				if a.text != want {
					return fmt.Errorf("got %d words before the failure's event, want all %d exactly once (fewer: events lost; more: a whole answer continued)", len(strings.Fields(a.text)), 60)
				}
				if a.errEvent == "" {
					return a.complete(want)
				}
				return nil
			},
		},
		{
			name: "whole-cut-mid-body", fault: "X-Mock-Fail: truncate:40 (whole answer)", header: fail("truncate:40"),
			client: wholeOnce, providers: restarted(),
		},
	}
}

// sameTarget: the client's model kept. One request at a time, every
// request's failed call was retried on the primary (2 calls each), the
// answer names that choice in X-Sluice-Second-Call, and the fallback
// saw none; under load at most 5% of requests reached it
// (a retry that failed again, at rate 0.1: 1%).
func sameTarget() func(faultFigures, bool) error {
	return func(f faultFigures, single bool) error {
		if single {
			if n := f.secondCalls[""]; n > 0 {
				return fmt.Errorf("%d answers did not name their second call in X-Sluice-Second-Call (%v)", n, f.secondCalls)
			}
			return calls(2, 0)(f, single)
		}
		if f.fallback.Total*20 > int64(f.requests) {
			return fmt.Errorf("the fallback saw %d calls for %d requests; a lone failure should be retried on the primary", f.fallback.Total, f.requests)
		}
		return nil
	}
}

// prefillRefusal: a stream cut after 40 words whose only fallback
// refuses prefill. Either the answer is continued another way (a
// continuation prompt) and ends finished with no error, or it ends with
// an error event that carries the original cause: never the fallback's
// prefill refusal, and never a finish reason that says it is complete.
// The 40 words sent come first, once, either way.
func prefillRefusal(a faultAnswer, want string) error {
	if a.transport != nil || a.status != 200 {
		return fmt.Errorf("status %d, %v: %.200s", a.status, a.transport, a.body)
	}
	head := strings.Join(strings.SplitAfter(want, " ")[:41], "")
	head = strings.TrimSuffix(head, " ")
	if !strings.HasPrefix(a.text, head) {
		return fmt.Errorf("the first 40 words did not come first, once: %.120q", a.text)
	}
	if strings.Contains(strings.ToLower(a.errEvent), "prefill") || strings.Contains(strings.ToLower(a.errEvent), "continue_final_message") {
		return fmt.Errorf("the error event names the fallback's prefill refusal: %.300s", a.errEvent)
	}
	if a.errEvent != "" && a.finish != "" {
		return fmt.Errorf("an error event and a finish reason %q: the answer claims to be complete", a.finish)
	}
	if a.errEvent == "" && (a.finish == "" || (a.stream && !a.done)) {
		return fmt.Errorf("no error event, and no finish (finish %q, end marker %v): the cut was hidden", a.finish, a.done)
	}
	return nil
}

// runRows runs each selected row as a subtest, row/encoding, at most
// faultsParallel at once (two cores are shared with the processes).
func runRows(t *testing.T, rows []faultRun, run func(t *testing.T, r faultRun)) {
	sem := make(chan struct{}, faultsParallel)
	for _, r := range rows {
		t.Run(r.name+"/"+r.encoding, func(t *testing.T) {
			if r.pending != "" && os.Getenv(pendingRowsEnvToggle) == "" {
				t.Skipf("pending: %s (not merged yet); set %s=1 to run it anyway, or clear the row's pending field once merged", r.pending, pendingRowsEnvToggle)
			}
			t.Parallel()
			sem <- struct{}{}
			defer func() { <-sem }()
			run(t, r)
		})
	}
}

// singleRun: r.n requests r.gap apart.
func singleRun(t *testing.T, r faultRun) faultFigures {
	s := startFaultStack(t, r, "single")
	if r.warm {
		warmUp(t, s, r)
	}
	n, gap := r.n, r.gap
	if n == 0 {
		n = 4
	}
	if gap == 0 {
		gap = 1500 * time.Millisecond
	}
	return judge(t, r, "single", sendAll(t, s, r, "single", n, gap, clientTimeout), s)
}

// brownoutRun: 20 req/s for 5 s, every request meeting the fault.
func brownoutRun(t *testing.T, r faultRun) faultFigures {
	s := startFaultStack(t, r, "brownout")
	if r.warm {
		warmUp(t, s, r)
	}
	n := int(brownoutWindow.Seconds() * brownoutRate)
	return judge(t, r, "brownout", sendAll(t, s, r, "brownout", n, time.Second/brownoutRate, clientTimeout), s)
}

// TestFaultsOneAtATime: every row, single requests a few seconds apart,
// each streamed row under every long encoding.
//
//	SLUICE_E2E_LONG=1 go test ./test/e2e -run FaultsOneAtATime -v
func TestFaultsOneAtATime(t *testing.T) {
	if os.Getenv("SLUICE_E2E_LONG") == "" {
		t.Skip(longSuiteMessage)
	}
	runRows(t, underEncodings(faultRows(), longEncodings), func(t *testing.T, r faultRun) { singleRun(t, r) })
}

// TestFaultsAtBrownoutRate: every row at seed 000's 20 req/s for 5 s.
//
//	SLUICE_E2E_LONG=1 go test ./test/e2e -run FaultsAtBrownoutRate -v
func TestFaultsAtBrownoutRate(t *testing.T) {
	if os.Getenv("SLUICE_E2E_LONG") == "" {
		t.Skip(longSuiteMessage)
	}
	runRows(t, underEncodings(faultRows(), []string{"compact"}), func(t *testing.T, r faultRun) { brownoutRun(t, r) })
}

// TestFaultsQuick: the quick rows, two single requests each, streamed
// ones under the quick encodings, in the normal suite (about 30 s).
func TestFaultsQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes for about 30 s")
	}
	var quick []faultRow
	for _, r := range faultRows() {
		if r.quick {
			r.n, r.gap = 2, time.Second
			quick = append(quick, r)
		}
	}
	runRows(t, underEncodings(quick, quickEncodings), func(t *testing.T, r faultRun) { singleRun(t, r) })
}
