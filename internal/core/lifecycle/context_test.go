package lifecycle

import "testing"

func TestContextOverflowRouting(t *testing.T) {
	rt := Route{Name: "small", ContextFallback: "big", ContextWindow: 1000}
	for _, c := range []struct {
		name       string
		rt         Route
		in, out    int64
		wantBefore bool
	}{
		{"fits", rt, 900, 0, false},
		{"input over", rt, 1001, 0, true},
		{"input fits, with its output over", rt, 900, 200, true},
		{"exactly the window", rt, 800, 200, false},
		{"not counted", rt, 0, 5000, false},
		{"no window", Route{ContextFallback: "big"}, 1 << 30, 0, false},
		{"no fallback", Route{ContextWindow: 1000}, 5000, 0, false},
	} {
		fb, got := c.rt.Overflows(Request{InputTokens: c.in, MaxOutput: c.out})
		if got != c.wantBefore || (got && fb != "big") {
			t.Errorf("%s: Overflows = %q, %v; want %v", c.name, fb, got, c.wantBefore)
		}
	}
	for _, c := range []struct {
		name string
		rt   Route
		e    Ending
		want bool
	}{
		{"exceeded, with a fallback", rt, Ending{Kind: EndRefused, Status: 400, ContextExceeded: true}, true},
		{"exceeded, no fallback: relayed", Route{}, Ending{Kind: EndRefused, Status: 400, ContextExceeded: true}, false},
		{"another 400 (a content filter): relayed", rt, Ending{Kind: EndRefused, Status: 400}, false},
		{"a 500", rt, Ending{Kind: EndRefused, Status: 500}, false},
	} {
		if _, got := c.rt.ContextReroute(c.e); got != c.want {
			t.Errorf("%s: ContextReroute = %v, want %v", c.name, got, c.want)
		}
	}
	// Neither a context-length 400 nor a content-filter 400 is retried on
	// the same target or any other: the prompt is the request's own.
	for _, e := range []Ending{{Kind: EndRefused, Status: 400, ContextExceeded: true}, {Kind: EndRefused, Status: 400}} {
		if retryable(e.Outcome()) {
			t.Errorf("%+v is retryable; a 400 must not be resent", e)
		}
	}
}
