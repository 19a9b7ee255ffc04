package lifecycle

import "github.com/sluice-gw/sluice/internal/core/admission"

// Claim is what a request says about its class, and who says it.
type Claim struct {
	// Header is the class its X-Sluice-Priority asks for; Asked is
	// false when it sent none.
	Header admission.Priority
	Asked  bool
	// Keyed: it came with one of the gateway's keys (keys[]), whose
	// class is Key: the key's priority, or else Default.
	Keyed bool
	Key   admission.Priority
	// Declared: without such a key, its credential is a declared
	// critical key (admission.critical_keys_env).
	Declared bool
	// Default is admission.default_priority.
	Default admission.Priority
}

// Classify is a request's class. Priority is earned, not claimed:
//
//   - a keyed request's class is its key's, which is its ceiling: its
//     header may lower it, never raise it;
//   - without a key, a declared critical caller is critical unless its
//     header asks for less; anyone else is served as the header asks, or
//     as Default, but never as critical: that is interactive. With no
//     critical keys declared, nobody is critical.
//
// downgraded is true when the class is lower than the header asked.
func Classify(c Claim) (p admission.Priority, downgraded bool) {
	if c.Keyed {
		if !c.Asked || c.Header < c.Key {
			return c.Key, c.Asked
		}
		return c.Header, false
	}
	p = c.Default
	if c.Asked {
		p = c.Header
	}
	switch {
	case c.Declared && !c.Asked:
		return admission.Critical, false
	case !c.Declared && p == admission.Critical:
		return admission.Interactive, true
	}
	return p, false
}
