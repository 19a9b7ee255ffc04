package lifecycle

// Which of a route's targets a request may use. A host finds, target by
// target, whether the target can take the request as it is: its API is
// the client's, or the request translates to the target's API, or the
// target's native codec can carry it, each as the model's or provider's
// on_unsupported allows. The rule for what follows is this one, for
// every kind of target and both hosts:
//
//   - A target that cannot take the request is left out of the
//     request's route, as if it were not routable, and the others keep
//     their failover order. The point of a mixed chain is that a
//     target serves whatever it can: a request the backup could never
//     take does not lose the primary too.
//   - Only when no target is left is the request refused, as the
//     client's error (400), naming why the first target that could not
//     take it could not.

// Fit is whether one target can take a request: Why is empty when it
// can, else why not (for the client's 400), and Param the request's
// parameter at fault, when one is.
type Fit struct {
	Why, Param string
}

// Eligible narrows r to the targets whose fits are empty (fits in
// Targets' order). It returns r itself when every target fits, and the
// first misfit when none does (ok false).
func (r Route) Eligible(fits []Fit) (kept Route, first Fit, ok bool) {
	all := true
	for _, f := range fits {
		if f.Why != "" {
			all = false
			if first.Why == "" {
				first = f
			}
		}
	}
	if all {
		return r, Fit{}, true
	}
	kept = r
	kept.Targets, kept.Models, kept.Continue = nil, nil, nil
	for i, f := range fits {
		if f.Why != "" {
			continue
		}
		kept.Targets = append(kept.Targets, r.Targets[i])
		kept.Models = append(kept.Models, r.Models[i])
		if i < len(r.Continue) {
			kept.Continue = append(kept.Continue, r.Continue[i])
		}
	}
	return kept, first, len(kept.Targets) > 0
}
