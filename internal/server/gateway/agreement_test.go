package gateway

import (
	"crypto/sha256"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	"github.com/sluice-gw/sluice/internal/core/lifecycle/lifecycletest"
	"github.com/sluice-gw/sluice/internal/core/quota"
	"github.com/sluice-gw/sluice/internal/server/metrics"
	"github.com/sluice-gw/sluice/internal/server/runner"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// The agreement tests feed lifecycletest's cases to the gateway's side
// of each rule that the simulator once kept a copy of; the simulator's
// tests of the same name feed it the same cases (sim/agreement_test.go),
// so both hosts decide every case alike.

// TestAgreementClassify: X-Sluice-Priority, the key and the credential
// of each case, through classify.
func TestAgreementClassify(t *testing.T) {
	const declared = "sk-declared"
	for _, c := range lifecycletest.Classify {
		t.Run(c.Name, func(t *testing.T) {
			g := &Gateway{keys: &keyring{critical: map[[sha256.Size]byte]struct{}{sha256.Sum256([]byte(declared)): {}}}}
			x := &exchange{who: who{priority: c.Claim.Default}}
			r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
			if c.Claim.Asked {
				r.Header.Set("X-Sluice-Priority", c.Claim.Header.String())
			}
			switch {
			case c.Claim.Keyed:
				x.key = &virtualKey{name: "k", priority: c.Claim.Key}
			case c.Claim.Declared:
				r.Header.Set("Authorization", "Bearer "+declared)
			default:
				r.Header.Set("Authorization", "Bearer sk-anyone")
			}
			if err := g.classify(r, x); err != nil {
				t.Fatal(err)
			}
			if x.priority != c.Want || x.downgraded != c.Downgraded {
				t.Fatalf("classify: %v, downgraded %v; want %v, %v", x.priority, x.downgraded, c.Want, c.Downgraded)
			}
		})
	}
}

// TestAgreementAnswer: each case's refusal, answered on OpenAI's API.
func TestAgreementAnswer(t *testing.T) {
	for _, c := range lifecycletest.Answers {
		t.Run(c.Name, func(t *testing.T) {
			g := &Gateway{metrics: metrics.New()}
			x := &exchange{endpoint: protocol.Endpoints[0], start: time.Unix(0, 0), who: who{priority: c.Rejection.Priority}}
			w := httptest.NewRecorder()
			refuse(g.metrics, w, x, &c.Rejection, x.start.Add(30*time.Second))
			ra, _ := strconv.Atoi(w.Header().Get("Retry-After"))
			noRetry := w.Header().Get("X-Should-Retry") == "false"
			if w.Code != c.Status || ra != c.RetryAfter || noRetry != c.Want.NoRetry {
				t.Fatalf("answered %d, Retry-After %d, no retry %v; want %d, %d, %v", w.Code, ra, noRetry, c.Status, c.RetryAfter, c.Want.NoRetry)
			}
		})
	}
}

// TestAgreementDegrade: each case's key, its shared budget as the
// store's last answer left it, and the engine's pressure, through
// degradeAsk.
func TestAgreementDegrade(t *testing.T) {
	d := lifecycletest.Degradation
	for _, c := range lifecycletest.Degrades {
		t.Run(c.Name, func(t *testing.T) {
			g := &Gateway{}
			x := &exchange{who: who{priority: c.Priority, key: &virtualKey{name: "k", mayDegrade: !c.KeyOptsOut}}}
			if c.Remaining >= 0 {
				g.fleet = &fleet{}
				x.key.limits = quota.Limits{quota.Requests: {PerMinute: 100}}
				g.fleet.status.Store("k", [3]quota.Status{{Limit: 100, Burst: 100, Remaining: c.Remaining}})
			}
			ask := g.degradeAsk(x, &d)
			ask.Pressure = func(lifecycle.Request, lifecycle.Degradation) bool { return c.Pressure }
			got := lifecycle.Degrade(lifecycle.Request{Priority: c.Priority, Model: lifecycletest.Model, MaxOutput: c.MaxOutput, Key: 1}, ask)
			if got != c.Want {
				t.Fatalf("Degrade = %+v, want %+v", got, c.Want)
			}
		})
	}
}

// TestAgreementEnding: each case's ending, as the gateway records the
// call whose answer the client got (endingOf) and a call it discards
// (attempt.ending).
func TestAgreementEnding(t *testing.T) {
	for _, c := range lifecycletest.Endings {
		t.Run(c.Name, func(t *testing.T) {
			e := c.Ending
			x := &exchange{endpoint: protocol.Endpoints[0], upstreamState: upstreamState{upstreamStatus: e.Status, retryAfter: e.RetryAfter}, record: record{outcome: outcomeUpstreamError}}
			a := &attempt{ctx: t.Context(), ep: protocol.Endpoints[0]}
			switch e.Kind {
			case lifecycle.EndAnswered:
				x.outcome = outcomeOK
				a.resp = &http.Response{StatusCode: e.Status, Header: http.Header{}}
			case lifecycle.EndRefused:
				h := http.Header{}
				if e.RetryAfter > 0 {
					h.Set("Retry-After", strconv.Itoa(int(e.RetryAfter/time.Second)))
				}
				a.resp = &http.Response{StatusCode: e.Status, Header: h}
			case lifecycle.EndUnreachable:
				x.reason, x.upstreamStatus = reasonConnect, 0
				a.err = errOrEOF(http.ErrHandlerTimeout)
			case lifecycle.EndBroken:
				x.reason = "upstream_malformed"
				a = nil // a broken answer is relayed: a discarded call never gets one
			}
			if got := outcomeOf(x); got != c.Want {
				t.Errorf("outcomeOf = %+v, want %+v", got, c.Want)
			}
			if a != nil {
				if got := a.outcome(t.Context()); got != c.Want {
					t.Errorf("attempt.outcome = %+v, want %+v", got, c.Want)
				}
			}
		})
	}
}

// TestAgreementRetry: each case's calls fail in turn, and the gateway
// asks for a retry after each (retry), through the Runner, as forward
// does; the engine alone decides.
func TestAgreementRetry(t *testing.T) {
	for _, c := range lifecycletest.Retries {
		t.Run(c.Name, func(t *testing.T) {
			cfg := lifecycletest.RetryConfig()
			rn := runner.NewRunner(cfg, nil)
			defer rn.Close()
			g := &Gateway{metrics: metrics.New()}
			m := &model{name: "chat", targets: []target{{provider: &provider{name: "a"}}, {provider: &provider{name: "b"}}}}
			req := lifecycle.Request{Targets: []int{0, 1}, Deadline: time.Now().Add(time.Minute)}
			if c.Hedge {
				req.HedgeAfter = time.Millisecond
			}
			call, err := rn.Acquire(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			attempts := [2]*attempt{newAttempt(g.metrics, call, 0, m.targets[0])}
			if c.Hedge {
				select {
				case hs := <-call.Seconds():
					attempts[1] = newAttempt(g.metrics, call, 1, m.targets[hs.Target])
				case <-time.After(5 * time.Second):
					t.Fatal("no hedge")
				}
			}
			for i, s := range c.Steps {
				a := attempts[s.Attempt]
				if s.Status > 0 {
					h := http.Header{}
					if s.RetryAfter > 0 {
						h.Set("Retry-After-Ms", strconv.FormatInt(s.RetryAfter.Milliseconds(), 10))
					}
					a.resp = &http.Response{StatusCode: s.Status, Header: h, Body: http.NoBody}
				} else {
					a.err = errOrEOF(io.EOF)
				}
				next := (&calls{g: g, call: call, m: m}).retry(a)
				if (next != nil) != s.Retried {
					t.Fatalf("step %d: retried %v, want %v", i, next != nil, s.Retried)
				}
				if next != nil {
					if want := m.targets[s.Target].provider.name; next.t.provider.name != want || next.second != saidRetry[s.Why] {
						t.Fatalf("step %d: retry to %s (%s), want %s (%s)", i, next.t.provider.name, next.second, want, saidRetry[s.Why])
					}
					attempts[1] = next
					continue
				}
				a.discard(&calls{g: g, call: call, m: m}, a.outcome(call.Context()), false)
			}
		})
	}
}
