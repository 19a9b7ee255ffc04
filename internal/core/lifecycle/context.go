package lifecycle

// Context overflow routing. A prompt too long for a model's context
// window fails the same way on every try, so it is never resent
// unchanged to the target that refused it (Retry takes a 400 as the
// request's own fault). A model may name a larger-context fallback
// (Route.ContextFallback): the request goes there, as a request for that
// model, admitted and routed anew, instead of failing. Without one, the
// provider's own error goes back to the client.
//
// Two moments decide it:
//
//   - before the call, when the model's context window is known
//     (Route.ContextWindow) and the host has counted the prompt: a
//     request whose input, plus the output it asks room for, does not fit
//     goes to the fallback without a call to the model that cannot take
//     it (Route.Overflows);
//   - after a call, when its provider answered that the prompt is too
//     long (Ending.ContextExceeded, which the host reads from the
//     provider's error, package protocol): the request goes to the
//     fallback if nothing has reached the client (Route.ContextReroute).
//
// A hop is a new request, so a fallback may name its own; the host
// bounds the chain (a loop in the config is refused at load, but a
// chain is not).

// Overflows reports whether r, as counted, does not fit the route's
// context window, and the fallback it then goes to. Without a window,
// a count, or a fallback, nothing is decided before the call.
func (rt Route) Overflows(r Request) (string, bool) {
	if rt.ContextFallback == "" || rt.ContextWindow <= 0 || r.InputTokens <= 0 {
		return "", false
	}
	need := r.InputTokens
	if r.MaxOutput > 0 {
		need += r.MaxOutput
	}
	return rt.ContextFallback, need > rt.ContextWindow
}

// ContextReroute reports whether a call that ended with e sends its
// request to the route's context fallback: only when the provider said
// the prompt is too long, and the route names one.
func (rt Route) ContextReroute(e Ending) (string, bool) {
	if !e.ContextExceeded || rt.ContextFallback == "" {
		return "", false
	}
	return rt.ContextFallback, true
}
