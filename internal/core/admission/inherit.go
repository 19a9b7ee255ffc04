package admission

// Inherit changes the count of calls in flight that this Core did not
// admit: a replaced configuration's, still running upstream after a
// reload. They hold room like this Core's own calls (globally, and in
// scoped[s] for scope s) until a later Inherit takes them back, so the
// limits hold in sum while two configurations run side by side. The
// deltas are signed: the replaced configuration's waiters may still
// start, and its calls end. A count never goes below zero. After a
// decrease the host should Pump.
func (c *Core) Inherit(global int, scoped []int) {
	next := max(0, c.inheritedIn+global)
	c.inFlight += next - c.inheritedIn
	c.inheritedIn = next
	if len(c.inheritedScope) < len(c.scopeIn) {
		c.inheritedScope = append(c.inheritedScope, make([]int, len(c.scopeIn)-len(c.inheritedScope))...)
	}
	for s, d := range scoped {
		if s >= len(c.scopeIn) || d == 0 {
			continue
		}
		next := max(0, c.inheritedScope[s]+d)
		c.scopeIn[s] += next - c.inheritedScope[s]
		c.inheritedScope[s] = next
	}
}

// Inherited is how many calls in flight Inherit counts, globally.
func (c *Core) Inherited() int { return c.inheritedIn }
