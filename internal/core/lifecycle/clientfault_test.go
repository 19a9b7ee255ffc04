package lifecycle

import (
	"net/http"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/core/breaker"
)

// A 404 about something the request's body names (a stored response, a
// file, a tool's resource) is the client's own: however many one client
// sends, the provider's breaker stays closed and the other clients'
// traffic stays where it is. Only a 404 that says the model or the path
// is unknown at the provider (Ending.UnknownModel) counts against it.
func TestBodyCaused404DoesNotTripTheBreaker(t *testing.T) {
	for _, c := range []struct {
		name  string
		end   Ending
		trips bool
	}{
		{"a previous_response_id or file id not found", Ending{Kind: EndRefused, Status: http.StatusNotFound}, false},
		{"the model is unknown at the provider", Ending{Kind: EndRefused, Status: http.StatusNotFound, UnknownModel: true}, true},
		{"UnknownModel means nothing on another status", Ending{Kind: EndRefused, Status: http.StatusBadRequest, UnknownModel: true}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := routeEngine(t, 0) // trips at 4 counted calls
			for i := range 8 {
				now := at(time.Duration(i) * 200 * time.Millisecond)
				a, _ := e.Arrive(now, Request{Targets: []int{0, 1}})
				if i >= 4 && !c.trips && a.Target != 0 {
					t.Fatalf("request %d routed to target %d: a client's 404s moved traffic", i, a.Target)
				}
				e.Finish(now, a.ID, c.end.Outcome())
			}
			st := e.scopes[0].cfg.Breaker.Stats(at(2 * time.Second))
			if (st.State == breaker.Open) != c.trips {
				t.Errorf("breaker %v after 8 such answers (errors %d), want tripped %v", st.State, st.Errors, c.trips)
			}
			if !c.trips && st.Errors != 0 {
				t.Errorf("%d errors counted against the provider, want 0", st.Errors)
			}
		})
	}
}

// longAnswers runs warm such requests one at a time, then five requests
// a second for 12 s, against routeEngine's primary (a fixed 1 s slow
// threshold, trips at 4 calls), each a whole answer of out tokens taking
// took, with max_tokens maxOut, ticking the engine every 100 ms as a host
// would; it reports the primary's breaker trips and how many requests
// went elsewhere.
func longAnswers(t *testing.T, maxOut int64, out int, took time.Duration, warm int) (trips, moved int) {
	t.Helper()
	e := routeEngine(t, 0)
	type call struct {
		id  ID
		end time.Duration
	}
	var live []call
	flood := time.Duration(warm) * (took + time.Second)
	next := time.Duration(0)
	for now := time.Duration(0); now <= flood+45*time.Second; now += 100 * time.Millisecond {
		still := live[:0]
		for _, c := range live {
			if c.end <= now {
				e.Finish(at(now), c.id, Outcome{Kind: OK, OutputTokens: out, UsageKnown: true})
			} else {
				still = append(still, c)
			}
		}
		live = still
		e.Tick(at(now))
		if now < flood && now >= next && len(live) == 0 {
			a, _ := e.Arrive(at(now), Request{Targets: []int{0, 1}, MaxOutput: maxOut})
			live = append(live, call{a.ID, now + took})
			next = now + took + time.Second
			continue
		}
		if now >= flood && now < flood+12*time.Second && now%(200*time.Millisecond) == 0 {
			a, _ := e.Arrive(at(now), Request{Targets: []int{0, 1}, MaxOutput: maxOut})
			if a.Target != 0 {
				moved++
			}
			live = append(live, call{a.ID, now + took})
		}
	}
	return e.scopes[0].cfg.Breaker.Stats(at(flood + 45*time.Second)).Trips, moved
}

// One client asking for long whole answers (3 s of generation against a
// 1 s slow threshold) is the client's choice, whether it names a
// max_tokens or not: its provider generates at a healthy rate, so its
// breaker stays closed. The same time with almost
// no output is a slow provider, and trips it, whether or not the request
// named a max_tokens.
func TestLongWholeAnswersAreNotSlow(t *testing.T) {
	// Once the provider has answered (here, twice, one at a time), its
	// generation rate is known, and a flood of long answers is not slow.
	if trips, moved := longAnswers(t, 400, 300, 3*time.Second, 2); trips != 0 || moved != 0 {
		t.Errorf("300-token answers in 3 s, max_tokens 400, after two answers: %d trips, %d requests moved; want none", trips, moved)
	}
	// Cold, a whole answer shows nothing until it ends, and the first
	// wave is judged at the threshold, as a silent provider must be: at
	// most one trip, after which the rate its answers showed holds (the
	// old rule tripped for as long as the flood lasted).
	if trips, _ := longAnswers(t, 400, 300, 3*time.Second, 0); trips > 1 {
		t.Errorf("300-token answers in 3 s, max_tokens 400, cold: %d trips; want at most the first wave's one", trips)
	}
	// A request that names no max_tokens asks for its default cap
	// (DefaultMaxOutput), and is watched as long as that takes at the
	// rate the provider showed, as one naming it would be: leaving
	// max_tokens out trips nothing (it tripped every round, judged at the
	// bare threshold).
	if trips, moved := longAnswers(t, 0, 300, 3*time.Second, 2); trips != 0 || moved != 0 {
		t.Errorf("300-token answers in 3 s, no max_tokens, after two answers: %d trips, %d requests moved; want none", trips, moved)
	}
	if trips, _ := longAnswers(t, 0, 2, 3*time.Second, 2); trips == 0 {
		t.Error("2-token answers in 3 s, no max_tokens: no trip; a provider that slow must be caught")
	}
	if trips, _ := longAnswers(t, 400, 2, 30*time.Second, 0); trips == 0 {
		t.Error("2-token answers in 30 s, max_tokens 400: no trip; a brownout must be caught in flight")
	}

}
