package gateway

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/sluice-gw/sluice/internal/config"
)

// An answer that could not be judged in time (validate.ErrCostly) goes
// out as it came, marked unchecked, under every on_invalid: it is not
// the provider's fault, so it is neither refused nor retried.
func TestUncheckedAnswerIsRelayedMarked(t *testing.T) {
	for _, onInvalid := range []string{config.OnInvalidAnnotate, config.OnInvalidRetry, config.OnInvalidRefuse} {
		x := &exchange{}
		a := &attempt{checked: true, unchecked: "checking took over 250ms"}
		if judged(x, a, onInvalid) {
			t.Errorf("on_invalid %s: an unjudged answer is refused", onInvalid)
		}
		if x.invalid {
			t.Errorf("on_invalid %s: an unjudged answer counts as invalid", onInvalid)
		}
		h := http.Header{}
		markVerdict(h, x)
		if h.Get(headerVerdict) != "unchecked" || h.Get(headerReason) != a.unchecked {
			t.Errorf("on_invalid %s: headers %v", onInvalid, h)
		}
	}
	if got := resultOf(true, true); got != "unchecked" {
		t.Errorf("metric result %q", got)
	}
	// A stream's trailer says valid: null.
	data, _ := json.Marshal(trailer{Type: trailerEvent, Reason: "too costly"})
	if string(data) != `{"type":"sluice.validation","valid":null,"reason":"too costly"}` {
		t.Errorf("trailer %s", data)
	}
}
