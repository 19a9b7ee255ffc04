package runner

import "github.com/sluice-gw/sluice/internal/core/lifecycle"

// Continue asks whether the request's committed stream, broken by cause,
// is continued, and where (see Engine.Continue).
func (c *Call) Continue(cause lifecycle.BreakCause, caps []lifecycle.ContinueCaps, done int, tool bool) lifecycle.Continuation {
	r := c.r
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.e.Continue(r.now(), c.id, cause, caps, done, tool)
}
