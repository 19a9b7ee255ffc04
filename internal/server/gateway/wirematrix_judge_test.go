package gateway_test

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The wire matrix's verdicts. A cell that is not "ok" lists codes:
//
//	DUP+k, MISS-k   k of the 60 words repeated, or missing
//	TEXT            every word once, but the text altered
//	FALSECUT        a whole stream continued (N, U; or S waited out)
//	NOSTALL(t)      a stall waited out, not cut at the deadline; t the answer's time
//	STALLAT(ms)     the stall cut, but that long after it began
//	NOCONT(+err)    a break not continued (with an error event)
//	CAUSE, PREFILL  continued, but the log's cause is wrong, or the
//	                prefill is not exactly the text the client had
//	ERR, BADJSON    an error event; data the client could not parse
//	FINISH          the wrong finish reason, or none
//	USAGE(c/l)      usage c in the client (-1: none) or l in the log, not 60
//	UCHUNK          a usage chunk a client did not ask for
//	NOEND, kxEND    no terminator, or k of them
//	OUTCOME, NOLOG  the log's outcome not ok, or no log line
//	TTFT            the log's TTFT under the first delta's delay: the head taken for a token
//	NOCANCEL        the stalled call was not cancelled upstream
//	SHORT(n)        a client cut that got n deltas, not 20
//	BILL(l/r)       l output tokens logged for r deltas relayed, off by more than 5 %

// wireResult is a cell's verdict: codes for the table, problems for the
// test's log.
type wireResult struct {
	codes, problems []string
}

func (r *wireResult) fail(code, format string, args ...any) {
	r.codes = append(r.codes, code)
	r.problems = append(r.problems, code+": "+fmt.Sprintf(format, args...))
}

func (r wireResult) verdict() string {
	if len(r.codes) == 0 {
		return "ok"
	}
	return strings.Join(r.codes, ",")
}

var wordNum = regexp.MustCompile(`w(\d+)`)

// duplicates counts the answer's words in text: repeated, missing.
func duplicates(text, hostile string) (dup, miss int) {
	seen := make([]int, wireDeltas+1)
	for _, m := range wordNum.FindAllStringSubmatch(text, -1) {
		if n, _ := strconv.Atoi(m[1]); n >= 1 && n <= wireDeltas {
			seen[n]++
		}
	}
	if hostile != "" {
		seen[wireHostileAt+1] = strings.Count(text, hostile)
	}
	for _, n := range seen[1:] {
		dup += max(0, n-1)
		if n == 0 {
			miss++
		}
	}
	return dup, miss
}

func judgeWhole(res *wireResult, c wireCell, got wireRead, lg wireLog, fake *wireFake, fb *wireFallback) {
	want := strings.Join(wireAnswer(c.c.hostile()), "")
	base := c.c.base()
	broken := base == caseCut || base == caseStall || base == caseMalformed
	_, _, stallStart, resumed, _ := fake.snapshot()
	prefills, at := fb.snapshot()
	if got.status != 200 {
		res.fail("STATUS", "status %d", got.status)
		return
	}
	if got.text != want {
		dup, miss := duplicates(got.text, c.c.hostile())
		switch {
		case dup > 0 || miss > 0:
			if dup > 0 {
				res.fail(fmt.Sprintf("DUP+%d", dup), "%d words duplicated", dup)
			}
			if miss > 0 {
				res.fail(fmt.Sprintf("MISS-%d", miss), "%d words missing", miss)
			}
		default:
			res.fail("TEXT", "text %q, want %q", got.text, want)
		}
	}
	if (base == caseNormal || base == caseNoUsage) && (lg.continued != "" || len(at) > 0) {
		res.fail("FALSECUT", "a whole stream was continued (%q, %d fallback calls)", lg.continued, len(at))
	}
	if base == caseStall && resumed {
		res.fail(fmt.Sprintf("NOSTALL(%.1fs)", got.took.Seconds()), "the stall was waited out, not cut at the %s stall deadline", wireStall)
	}
	if broken && !resumed && len(at) == 0 {
		code := "NOCONT"
		if len(got.errors) > 0 {
			code += "+err"
		}
		res.fail(code, "the break was not continued")
	}
	if base == caseStall && resumed && len(at) > 0 {
		res.fail("FALSECUT", "the stream, whole after its stall, was continued (%q)", lg.continued)
	}
	if broken && !resumed && len(at) > 0 {
		want := map[wireCase]string{caseCut: "cause=cut", caseStall: "cause=stall", caseMalformed: "cause=malformed"}[base]
		if !strings.Contains(lg.continued, want) {
			res.fail("CAUSE", "log continued=%q, want %s", lg.continued, want)
		}
		if sofar := strings.Join(fake.deltas[:wireBreakAt], ""); len(prefills) == 0 || prefills[0] != sofar {
			res.fail("PREFILL", "the fallback was asked to continue from %q, want exactly the text the client had, %q", prefills, sofar)
		}
		if base == caseStall && !stallStart.IsZero() {
			if d := at[0].Sub(stallStart); d > wireStall+2*time.Second || d < wireStall*8/10 {
				res.fail(fmt.Sprintf("STALLAT(%dms)", d.Milliseconds()), "the stall was cut %s after it began, want at the %s stall deadline", d, wireStall)
			}
		}
	}
	if len(at) > 1 {
		res.fail(fmt.Sprintf("%dxFALLBACK", len(at)), "the fallback was called %d times", len(at))
	}
	if base == caseStall && !resumed && len(at) > 0 {
		if !waitUntil(2*time.Second, func() bool { _, _, _, _, x := fake.snapshot(); return x }) {
			res.fail("NOCANCEL", "the stalled call was not cancelled upstream")
		}
	}
	if len(got.errors) > 0 && !strings.HasPrefix(strings.Join(res.codes, ","), "NOCONT") {
		res.fail("ERR", "error events %q", got.errors)
	}
	if len(got.badJSON) > 0 {
		res.fail("BADJSON", "the client got data that is not JSON: %q", got.badJSON)
	}
	wantFinish := map[bool]string{false: "stop", true: "end_turn"}[c.d.client]
	if got.finish != wantFinish {
		res.fail("FINISH", "finish %q, want %q", got.finish, wantFinish)
	}
	clientUsage := got.usage
	if base == caseNoUsage {
		clientUsage = wireDeltas // not asked for: not judged
	}
	if clientUsage != wireDeltas || lg.outputTokens != wireDeltas {
		res.fail(fmt.Sprintf("USAGE(%d/%d)", got.usage, lg.outputTokens), "usage %d in the client, output_tokens %d in the log; want %d", got.usage, lg.outputTokens, wireDeltas)
	}
	if base == caseNoUsage && got.usageChunks > 0 {
		res.fail("UCHUNK", "a client that did not ask for usage got %d usage chunks", got.usageChunks)
	}
	switch {
	case got.terminators == 0:
		res.fail("NOEND", "no terminator")
	case got.terminators > 1:
		res.fail(fmt.Sprintf("%dxEND", got.terminators), "%d terminators", got.terminators)
	}
	if !lg.found {
		res.fail("NOLOG", "no request log line")
		return
	}
	if lg.outcome != "ok" {
		res.fail("OUTCOME", "log outcome %s reason %s, want ok", lg.outcome, lg.reason)
	}
	if lg.ttft < wireFirstToken {
		res.fail("TTFT", "log ttft %s, below the %s before the first delta: the head was counted as a token", lg.ttft, wireFirstToken)
	}
}

// judgeClientCut: a stream the client left after 20 deltas, with no
// usage from the provider, is logged as what was relayed, within 5 %.
func judgeClientCut(res *wireResult, got wireRead, lg wireLog, fake *wireFake) {
	relayed := got.deltas + got.argDeltas
	_, sent, _, _, _ := fake.snapshot()
	if got.status != 200 {
		res.fail("STATUS", "status %d", got.status)
		return
	}
	if relayed != wireBreakAt || sent != wireBreakAt {
		res.fail(fmt.Sprintf("SHORT(%d)", relayed), "the client got %d deltas of the %d sent, want %d", relayed, sent, wireBreakAt)
	}
	if !lg.found {
		res.fail("NOLOG", "no request log line")
		return
	}
	if abs(lg.outputTokens-relayed) > max(1, relayed*5/100) {
		res.fail(fmt.Sprintf("BILL(%d/%d)", lg.outputTokens, relayed), "log output_tokens %d for %d deltas relayed; want within 5 %%", lg.outputTokens, relayed)
	}
}

func abs(n int) int { return max(n, -n) }

func waitUntil(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}
