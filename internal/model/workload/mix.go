package workload

// Mix is a priority mix: the shares of the traffic in each class, in
// class order (critical, interactive, background, the order of
// admission.Priority). Shares need not sum to 1; none may be negative.
type Mix [3]float64

// Interactive is the class a Mix with no shares at all draws: the
// default class, the one a scenario without priorities sends.
const Interactive = 1

// Class picks a class with u uniform in [0, 1): class i with probability
// share i / the sum of the shares. A mix whose shares sum to 0 is all
// Interactive. When rounding leaves u past the last share, the class is
// the last one with a share, never one the mix gives none (see
// "Semantics" in the package doc).
func (m Mix) Class(u float64) int {
	total := m[0] + m[1] + m[2]
	if total <= 0 {
		return Interactive
	}
	x := u * total
	for i, s := range m {
		if x < s {
			return i
		}
		x -= s
	}
	for i := len(m) - 1; i >= 0; i-- {
		if m[i] > 0 {
			return i
		}
	}
	return Interactive
}
