package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	"github.com/sluice-gw/sluice/internal/wire/native"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
	"github.com/sluice-gw/sluice/internal/wire/translate"
)

// The provider seam. An adapter is how the gateway reaches one kind of
// target from a client's API; every target has one per client API
// (provider.adapters), chosen when the configuration loads:
//
//   - passAdapter: the target speaks the client's API; the body goes as
//     it came, with its model (and the gateway's edits) rewritten.
//   - translateAdapter: the target speaks the other API (translate.go); the
//     body is translated once per request, answers come back translated.
//   - nativeAdapter: the target is a vendor's native API (native.go),
//     reached through the hub's Anthropic API: the inner adapter (pass
//     through or translate) makes the hub's request, the provider's
//     codec carries it, once per provider and request, and its
//     Transport signs the call and turns the answer back into the hub's.
//
// Which targets a request may use is the core's rule
// (lifecycle.Route.Eligible): the adapt stage asks each target's
// adapter whether it can take the request, and the route keeps those
// that can.
//
// Adding a provider kind (docs/ARCHITECTURE.md has the recipe): a codec
// package under internal/wire with its native.Kind registered in
// internal/wire/vendors, the config kind's fields in internal/config,
// and its signer registered with RegisterSigner. Its targets take the
// nativeAdapter adapter; nothing else in this package changes.
type adapter interface {
	// fit readies the hop's request for target t (translating or coding
	// it once, for every target that shares the work) and says whether
	// t can take it.
	fit(h *hop, t target) lifecycle.Fit
	// body is the body of a call to t.
	body(out *outgoing, t target) *protocol.BodyReader
	// call is the upstream path of a call to t for endpoint ep, and its
	// context with what the provider's transport reads.
	call(ctx context.Context, out *outgoing, t target, ep protocol.Endpoint) (context.Context, string)
	// translates reports whether answers come back in another API than
	// the client's, and are translated into it.
	translates() bool
}

// adaptersFor are provider p's adapters, for a client of each API.
func adaptersFor(p *provider) [2]adapter {
	var by [2]adapter
	for _, client := range []protocol.Dialect{protocol.OpenAI, protocol.Anthropic} {
		var a adapter = passAdapter{}
		if p.dialect != client {
			a = translateAdapter{}
		}
		if p.native != nil {
			a = nativeAdapter{inner: a}
		}
		by[dialectIndex(client)] = a
	}
	return by
}

func dialectIndex(d protocol.Dialect) int {
	if d == protocol.Anthropic {
		return 1
	}
	return 0
}

// adapterOf is how a client of API d reaches target t.
func adapterOf(d protocol.Dialect, t target) adapter { return t.provider.adapters[dialectIndex(d)] }

// adapt readies the request for each target's adapter, and leaves out
// of the route the targets that cannot take it (lifecycle's rule). When
// none is left the client has its 400, naming the parameter at fault. A
// model whose targets all pass through costs a loop here.
func (h *hop) adapt() bool {
	m, d := h.m, h.x.endpoint.Dialect
	h.out.unsupported = m.unsupported
	plain := true
	for _, t := range m.targets {
		_, pass := adapterOf(d, t).(passAdapter)
		plain = plain && pass
	}
	if plain {
		return true
	}
	fits := make([]lifecycle.Fit, len(m.targets))
	for i, t := range m.targets {
		fits[i] = adapterOf(d, t).fit(h, t)
	}
	route, first, ok := m.route.Eligible(fits)
	if !ok {
		h.x.failParam(h.w, protocol.InvalidRequest, outcomeClientError, "untranslatable", first.Why, first.Param, 0)
		return false
	}
	if len(route.Targets) < len(m.targets) {
		h.m = m.narrowed(route, fits)
		h.req.Targets, h.req.Models = route.Targets, route.Models
	}
	h.x.cross = h.out.cross
	return true
}

// passAdapter reaches a target of the client's own API.
type passAdapter struct{}

func (passAdapter) fit(*hop, target) lifecycle.Fit { return lifecycle.Fit{} }
func (passAdapter) translates() bool               { return false }

func (passAdapter) body(out *outgoing, t target) *protocol.BodyReader {
	e := out.edit
	e.Model = t.model
	return out.body.Reader(e)
}

func (passAdapter) call(ctx context.Context, _ *outgoing, _ target, ep protocol.Endpoint) (context.Context, string) {
	return ctx, ep.UpstreamPath()
}

// translateAdapter reaches a target of the other API (translate.go).
type translateAdapter struct{}

func (translateAdapter) translates() bool { return true }

func (translateAdapter) body(out *outgoing, t target) *protocol.BodyReader {
	if out.cross == nil { // not translated: the target left the route
		return passAdapter{}.body(out, t)
	}
	return out.cross.body.Reader(protocol.Edit{Model: t.model})
}

func (translateAdapter) call(ctx context.Context, _ *outgoing, t target, _ protocol.Endpoint) (context.Context, string) {
	return ctx, chatPath(t.provider.dialect)
}

// fit translates the request once, for every target of the other API.
func (translateAdapter) fit(h *hop, t target) lifecycle.Fit {
	out := h.out
	if !out.crossTried {
		out.crossTried = true
		out.crossMisfit = h.translateBody()
	}
	return out.crossMisfit
}

// nativeAdapter reaches a vendor's native API through the hub's (native.go).
type nativeAdapter struct{ inner adapter }

func (n nativeAdapter) translates() bool { return n.inner.translates() }

func (n nativeAdapter) body(out *outgoing, t target) *protocol.BodyReader {
	return n.inner.body(out, t)
}

func (n nativeAdapter) call(ctx context.Context, out *outgoing, t target, ep protocol.Endpoint) (context.Context, string) {
	ctx, path := n.inner.call(ctx, out, t, ep)
	p := t.provider
	if call := out.nativeCallFor(t); call != nil {
		// Coded once, before routing, from this same body.
		ctx = native.WithCall(ctx, call)
	} else if o := p.nativeOptions(out.unsupported); o.Unsupported != p.native.opts.Unsupported {
		// The model's on_unsupported, where the provider sets none.
		ctx = native.WithOptions(ctx, o)
	}
	return ctx, path
}

// fit makes the hub's request (the inner adapter's) and runs the
// provider's codec on it, once per provider and upstream model.
func (n nativeAdapter) fit(h *hop, t target) lifecycle.Fit {
	if f := n.inner.fit(h, t); f.Why != "" {
		return f
	}
	out, p := h.out, t.provider
	for _, c := range out.nativeCalls {
		if c.p == p && c.model == t.model {
			return c.fit
		}
	}
	br := n.inner.body(out, t)
	raw := make([]byte, br.Len())
	_, _ = io.ReadFull(br, raw)
	call, err := p.native.codec.Request(raw, t.model, p.nativeOptions(out.unsupported))
	c := nativeCall{p: p, model: t.model, call: call}
	if err != nil {
		c.call = nil
		why := fmt.Sprintf("the request cannot be sent to %s's API: %v", p.native.kind, err)
		if te, ok := errors.AsType[*translate.Error](err); ok {
			why = fmt.Sprintf("parameter %s (at %s) cannot be sent to %s's API: %s", te.Param, te.Path, p.native.kind, te.Reason)
			c.fit.Param = te.Path
		}
		c.fit.Why = fmt.Sprintf("model %q is served by a native API provider, and this request cannot be sent there: %s", h.m.name, why)
	}
	out.nativeCalls = append(out.nativeCalls, c)
	return c.fit
}

// nativeCallFor is target t's request as its adapter coded it, nil when
// it did not (another model of the same provider).
func (o *outgoing) nativeCallFor(t target) *native.Call {
	for _, c := range o.nativeCalls {
		if c.p == t.provider && c.model == t.model {
			return c.call
		}
	}
	return nil
}

// narrowed is a copy of m whose targets are those that fit (route is
// m.route narrowed by lifecycle.Route.Eligible to the same targets).
func (m *model) narrowed(route lifecycle.Route, fits []lifecycle.Fit) *model {
	c := *m
	c.route, c.targets = route, nil
	for i, t := range m.targets {
		if fits[i].Why == "" {
			c.targets = append(c.targets, t)
		}
	}
	// The continuation caps are indexed as the request's targets are.
	c.caps = c.route.Continue
	return &c
}

// reader returns the body for a call to t.
func (o *outgoing) reader(t target) *protocol.BodyReader { return adapterOf(o.client, t).body(o, t) }

// crossed reports whether attempt a's provider speaks another API than
// the client.
func crossed(x *exchange, a *attempt) bool { return adapterOf(x.endpoint.Dialect, a.t).translates() }
