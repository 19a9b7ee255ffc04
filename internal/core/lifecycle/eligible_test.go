package lifecycle

import "testing"

func TestEligible(t *testing.T) {
	r := Route{Targets: []int{3, 1, 2}, Models: []string{"a", "b", "c"}, Continue: []ContinueCaps{{}, {}, {}}}
	cases := []struct {
		name    string
		fits    []Fit
		targets []int
		first   string
		ok      bool
	}{
		{"all fit", []Fit{{}, {}, {}}, []int{3, 1, 2}, "", true},
		{"the primary cannot", []Fit{{Why: "no tools"}, {}, {}}, []int{1, 2}, "no tools", true},
		{"order kept", []Fit{{}, {Why: "x"}, {}}, []int{3, 2}, "x", true},
		{"none left names the first", []Fit{{Why: "first"}, {Why: "second"}, {Why: "third"}}, nil, "first", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			kept, first, ok := r.Eligible(c.fits)
			if ok != c.ok || first.Why != c.first {
				t.Fatalf("ok %v first %q, want %v %q", ok, first.Why, c.ok, c.first)
			}
			if len(kept.Targets) != len(c.targets) || len(kept.Models) != len(c.targets) || len(kept.Continue) != len(c.targets) {
				t.Fatalf("kept %v %v %d caps, want targets %v", kept.Targets, kept.Models, len(kept.Continue), c.targets)
			}
			for i := range c.targets {
				if kept.Targets[i] != c.targets[i] {
					t.Fatalf("kept %v, want %v", kept.Targets, c.targets)
				}
			}
		})
	}
	// Narrowing never writes into the route's own slices.
	r.Eligible([]Fit{{Why: "x"}, {}, {}})
	if r.Targets[0] != 3 || r.Models[0] != "a" {
		t.Fatalf("the route changed: %v %v", r.Targets, r.Models)
	}
}
