package lifecycle

import (
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/core/admission"
)

// TickAhead fires the slow flags due of the requests admitted before the
// one named, and no others: settled call by call in arrival order, an
// earlier call's drop reaches the limit before a later call's answer,
// and a later call's after it.
func TestTickAhead(t *testing.T) {
	f := &fakeLimit{limit: 10}
	h := newHarness(t, oneScope(f, Total, time.Second, admission.Config{}))
	a, _ := h.arrive(req(admission.Interactive, 0), admission.Admitted)
	h.at(100 * time.Millisecond)
	b, _ := h.arrive(req(admission.Interactive, 0), admission.Admitted)
	h.at(200 * time.Millisecond)
	h.arrive(req(admission.Interactive, 0), admission.Admitted) // c
	h.at(1300 * time.Millisecond)                               // every one's slow flag is due
	if rd := h.e.TickAhead(h.now, a); len(f.samples) != 0 || len(rd.Expire) != 0 {
		t.Fatalf("TickAhead(first) fired %+v, want nothing", f.samples)
	}
	h.e.TickAhead(h.now, b)
	// b answered at 1.05 s, in 950 ms, and is reported at the instant's
	// settling, 1.3 s, as a tick simulation reports it.
	h.finish(b, Outcome{Kind: OK, Ended: t0.Add(1050 * time.Millisecond)})
	h.e.Tick(h.now)
	var got []bool
	for _, s := range f.samples {
		got = append(got, s.Dropped)
	}
	if len(got) != 3 || !got[0] || got[1] || !got[2] {
		t.Fatalf("the limit heard dropped = %v, want a's drop, b's answer, then c's drop", got)
	}
}
