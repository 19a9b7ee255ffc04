package lifecycle

import (
	"net/http"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/core/admission"
	"github.com/sluice-gw/sluice/internal/core/quota"
)

func TestDegrade(t *testing.T) {
	d := &Degradation{To: "small", MaxTokens: 128, TrimTo: 1000, BudgetBelow: 0.1}
	low := &[3]quota.Status{{Limit: 100, Burst: 100, Remaining: 9}}
	full := &[3]quota.Status{{Limit: 100, Burst: 100, Remaining: 100}}
	bg := Request{Priority: admission.Background, Model: "chat", MaxOutput: 1024, InputTokens: 4000}
	cases := []struct {
		name     string
		r        Request
		a        DegradeAsk
		pressure bool
		want     Degrading
	}{
		{"under pressure: all three", bg, DegradeAsk{Degrade: d}, true, Degrading{To: "small", MaxOutput: 128, TrimTo: 1000}},
		{"no pressure, no shared budget", bg, DegradeAsk{Degrade: d}, false, Degrading{}},
		{"no pressure, shared budget low", bg, DegradeAsk{Degrade: d, Shared: low}, false, Degrading{To: "small", MaxOutput: 128, TrimTo: 1000}},
		{"no pressure, shared budget full", bg, DegradeAsk{Degrade: d, Shared: full}, false, Degrading{}},
		{"interactive: never", Request{Priority: admission.Interactive, Model: "chat"}, DegradeAsk{Degrade: d, Shared: low}, true, Degrading{}},
		{"the key opts out", bg, DegradeAsk{Degrade: d, KeyOptsOut: true, Shared: low}, true, Degrading{}},
		{"no degrade: configured", bg, DegradeAsk{Shared: low}, true, Degrading{}},
		{"nothing to change: a smaller ask, a short prompt, the model itself",
			Request{Priority: admission.Background, Model: "small", MaxOutput: 64, InputTokens: 10}, DegradeAsk{Degrade: d}, true, Degrading{}},
		{"no max_tokens named: capped", Request{Priority: admission.Background, Model: "chat"}, DegradeAsk{Degrade: d}, true, Degrading{To: "small", MaxOutput: 128}},
		{"embeddings: no output to cap", Request{Priority: admission.Background, Model: "chat", MaxOutput: NoOutput}, DegradeAsk{Degrade: d}, true, Degrading{To: "small"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			asked := false
			c.a.Pressure = func(Request, Degradation) bool { asked = true; return c.pressure }
			if got := Degrade(c.r, c.a); got != c.want {
				t.Fatalf("Degrade = %+v, want %+v", got, c.want)
			}
			if asked && (c.a.Degrade == nil || c.a.KeyOptsOut || c.r.Priority != admission.Background) {
				t.Error("asked the engine about pressure for a request that may not be degraded")
			}
		})
	}
}

func TestDegradingApply(t *testing.T) {
	small := Route{Name: "small", Targets: []int{1}, Models: []string{"m-small"}, Timeout: 10 * time.Second}
	r := Request{Priority: admission.Background, Model: "chat", Targets: []int{0}, Key: 2, InputTokens: 500, MaxOutput: 1024, Stream: true, Deadline: at(60 * time.Second)}
	got := Degrading{To: "small", MaxOutput: 128}.Apply(r, small, at(0), 5*time.Second)
	want := Request{Priority: admission.Background, Model: "small", Targets: []int{1}, Models: []string{"m-small"}, Key: 2, InputTokens: 500, MaxOutput: 128, Stream: true, Deadline: at(5 * time.Second), Degraded: true}
	if got.Model != want.Model || got.Targets[0] != 1 || got.Key != 2 || got.InputTokens != 500 || got.MaxOutput != 128 || !got.Stream || !got.Deadline.Equal(want.Deadline) || !got.Degraded {
		t.Fatalf("Apply = %+v\nwant %+v", got, want)
	}
	if same := (Degrading{TrimTo: 100}).Apply(r, Route{}, at(0), 0); same.Degraded || same.Model != "chat" || same.MaxOutput != 1024 {
		t.Fatalf("a trim alone: %+v; the host trims, and marks it degraded if it dropped anything", same)
	}
}

func TestAnswer(t *testing.T) {
	cases := []struct {
		name string
		rej  admission.Rejection
		want Reply
	}{
		{"key budget: 429 with the exact wait", admission.Rejection{Reason: admission.ReasonKeyBudget, RetryAfter: 20 * time.Second}, Reply{Kind: ReplyRateLimited, RetryAfter: 20 * time.Second}},
		{"key budget, too large: 413", admission.Rejection{Reason: admission.ReasonKeyBudget, RetryAfter: time.Second, TooLarge: true}, Reply{Kind: ReplyTooLarge}},
		{"lane budget: everyone's, an overload", admission.Rejection{Reason: admission.ReasonLaneBudget, RetryAfter: 3 * time.Second}, Reply{Kind: ReplyOverloaded, RetryAfter: 3 * time.Second}},
		{"lane budget, too large: 413", admission.Rejection{Reason: admission.ReasonLaneBudget, TooLarge: true}, Reply{Kind: ReplyTooLarge}},
		{"queue full", admission.Rejection{Reason: admission.ReasonQueueFull, RetryAfter: time.Second}, Reply{Kind: ReplyOverloaded, RetryAfter: time.Second}},
		{"futile: do not retry", admission.Rejection{Reason: admission.ReasonQueueFull, RetryAfter: time.Second, Futile: true}, Reply{Kind: ReplyOverloaded, RetryAfter: time.Second, NoRetry: true}},
		{"deadline in the queue: 504", admission.Rejection{Reason: admission.ReasonDeadline, RetryAfter: time.Second}, Reply{Kind: ReplyTimedOut}},
		{"TooLarge means nothing without a budget", admission.Rejection{Reason: admission.ReasonUnavailable, TooLarge: true}, Reply{Kind: ReplyOverloaded}},
	}
	for _, c := range cases {
		if got := Answer(c.rej); got != c.want {
			t.Errorf("%s: Answer = %+v, want %+v", c.name, got, c.want)
		}
	}
}

// An arrival's Rejection carries its budget's verdict, and only a
// budget's.
func TestArrivalRejection(t *testing.T) {
	a := Arrival{Refusal: admission.Refusal{Reason: admission.ReasonKeyBudget, RetryAfter: time.Second}, Budget: quota.Verdict{Dimension: quota.InputTokens, Never: true}}
	if rej := a.Rejection(); !rej.TooLarge || rej.Dimension != "input_tokens" || rej.RetryAfter != time.Second {
		t.Fatalf("%+v", rej)
	}
	a.Refusal.Reason = admission.ReasonQueueFull
	if rej := a.Rejection(); rej.TooLarge || rej.Dimension != "" {
		t.Fatalf("a shed carries a budget's verdict: %+v", rej)
	}
}

func TestClassify(t *testing.T) {
	C, I, B := admission.Critical, admission.Interactive, admission.Background
	cases := []struct {
		name       string
		c          Claim
		want       admission.Priority
		downgraded bool
	}{
		{"key, no header: the key's class", Claim{Keyed: true, Key: B}, B, false},
		{"key, header lower: lowered", Claim{Keyed: true, Key: I, Asked: true, Header: B}, B, false},
		{"key, header higher: the key's ceiling", Claim{Keyed: true, Key: I, Asked: true, Header: C}, I, true},
		{"critical key, header critical", Claim{Keyed: true, Key: C, Asked: true, Header: C}, C, false},
		{"declared, no header: critical", Claim{Declared: true, Default: I}, C, false},
		{"declared, header lower", Claim{Declared: true, Asked: true, Header: B, Default: I}, B, false},
		{"declared, header critical", Claim{Declared: true, Asked: true, Header: C}, C, false},
		{"anyone asking critical: interactive", Claim{Asked: true, Header: C, Default: B}, I, true},
		{"anyone, no header: the default", Claim{Default: B}, B, false},
		{"a critical default is not earned", Claim{Default: C}, I, true},
	}
	for _, c := range cases {
		if p, down := Classify(c.c); p != c.want || down != c.downgraded {
			t.Errorf("%s: Classify = %v, %v; want %v, %v", c.name, p, down, c.want, c.downgraded)
		}
	}
}

func TestEndingOutcome(t *testing.T) {
	cases := []struct {
		name string
		e    Ending
		want Outcome
	}{
		{"an answer, with its usage", Ending{Kind: EndAnswered, Status: 200, OutputTokens: 7, InputTokens: 3, UsageKnown: true},
			Outcome{Kind: OK, Status: 200, OutputTokens: 7, InputTokens: 3, UsageKnown: true}},
		{"an answer passed on although invalid", Ending{Kind: EndAnswered, Status: 200, Invalid: true}, Outcome{Kind: OK, Status: 200, Invalid: true}},
		{"an invalid answer refused", Ending{Kind: EndInvalid, Status: 200}, Outcome{Kind: OK, Status: 200, Invalid: true}},
		{"429 with Retry-After", Ending{Kind: EndRefused, Status: 429, RetryAfter: time.Second}, Outcome{Kind: Overloaded, Status: 429, RetryAfter: time.Second}},
		{"529", Ending{Kind: EndRefused, Status: 529}, Outcome{Kind: Overloaded, Status: 529}},
		{"500", Ending{Kind: EndRefused, Status: 500}, Outcome{Kind: Failed, Status: 500}},
		{"404 from the Responses API: a missing endpoint", Ending{Kind: EndRefused, Status: http.StatusNotFound, Responses: true}, Outcome{Kind: Cancelled, Status: 404}},
		{"404 elsewhere: a failure", Ending{Kind: EndRefused, Status: http.StatusNotFound}, Outcome{Kind: Failed, Status: 404}},
		{"a broken stream", Ending{Kind: EndBroken, Status: 200}, Outcome{Kind: Failed, Status: 200}},
		{"a reset, after some tokens", Ending{Kind: EndUnreachable, OutputTokens: 4}, Outcome{Kind: ConnError, OutputTokens: 4}},
		{"the deadline", Ending{Kind: EndDeadline}, Outcome{Kind: TimedOut}},
		{"abandoned, with what was relayed", Ending{Kind: EndAbandoned, Status: 200, OutputTokens: 9}, Outcome{Kind: Cancelled, Status: 200, OutputTokens: 9}},
	}
	for _, c := range cases {
		if got := c.e.Outcome(); got != c.want {
			t.Errorf("%s: Outcome = %+v, want %+v", c.name, got, c.want)
		}
	}
}

// Engine.Retry alone decides when a request is retried: hosts ask for
// every failed call, and only a first call that failed alone gets one.
func TestRetryOnlyTheFirstCallFailingAlone(t *testing.T) {
	e := New(Config{
		Admission: admission.Config{Global: admission.Fixed(100)},
		Scopes:    []ScopeConfig{{Fixed: 10}, {Fixed: 10}},
		Hedge:     HedgeConfig{Budget: 1, Burst: 1},
		Retry:     RetryConfig{Budget: 1, Burst: 2},
	})
	fail := Outcome{Kind: ConnError}
	two := Request{Targets: []int{0, 1}, HedgeAfter: time.Second}

	a, _ := e.Arrive(at(0), two)
	rd := e.Tick(at(time.Second)) // the hedge goes
	if len(rd.Second) != 1 {
		t.Fatalf("no hedge: %+v", rd)
	}
	if _, _, ok := e.Retry(at(2*time.Second), a.ID, fail); ok {
		t.Fatal("the first call failed while its hedge is live: retried")
	}
	e.End(at(2*time.Second), a.ID, 0, fail)
	if _, _, ok := e.Retry(at(3*time.Second), a.ID, fail); ok {
		t.Fatal("the hedge failed after the first: a third call")
	}
	e.End(at(3*time.Second), a.ID, 1, fail)

	b, _ := e.Arrive(at(10*time.Second), two)
	if _, _, ok := e.Retry(at(10*time.Second), b.ID, fail); !ok {
		t.Fatal("the first call failed alone: not retried")
	}
}
