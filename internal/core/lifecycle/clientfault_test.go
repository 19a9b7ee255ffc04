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
