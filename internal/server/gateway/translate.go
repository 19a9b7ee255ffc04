package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
	"github.com/sluice-gw/sluice/internal/wire/translate"
)

// Cross-dialect serving. A model's targets may speak either API; a
// client on /v1/chat/completions can be served by an Anthropic-kind
// provider, and one on /v1/messages by an OpenAI-kind one, so a failover
// chain may mix them and its clients see one schema throughout.
//
//   - The request is translated once, after the gateway's own edits
//     (degrade's max_tokens and trimmed history, the injected
//     include_usage), with the model name left as the client's; each call
//     to a translated target then rewrites only its model, as for any
//     target (outgoing.reader). It goes to the provider's own path
//     (/messages or /chat/completions) with the provider's own headers
//     (authorize, forwardList), which already follow the provider's kind.
//   - A request that cannot be translated (translate.Error) is not
//     routed to any target of the other kind: those targets are dropped
//     from this request's route, as if not routable. If none is left it
//     is answered 400 in the client's dialect, naming the parameter.
//     Why skip rather than refuse: the point of a mixed chain is that a
//     same-kind target serves whatever it can, and a request the backup
//     could never take should not lose the primary too.
//   - Answers come back translated: a whole 2xx answer with
//     translate.Response (an answer that cannot be put in the client's
//     dialect is the provider's failure, 502), an error answer with
//     translate.ErrorBody after the gateway's own status policy (the
//     provider-401 rule, the bounded Retry-After) has been applied, and a
//     stream event by event (the stream relay's translateFilter).
//   - A parameter the other API cannot carry is dropped or refused as
//     the model's on_unsupported says (translate.Unsupported; unset:
//     drop only what leaves the answer's shape alone, translate.Neutral,
//     and refuse the rest). defaultDrop's are dropped even under refuse.
//     What was dropped is named in X-Sluice-Dropped on the answer of a
//     translated target, and logged once, at info, with the model and
//     the target (the parameters' names, never their values).
//     Anthropic's required max_tokens, when an OpenAI client sets none,
//     is the model's default_max_tokens, or translate.DefaultMaxTokens.
//
// Only chat_completions and messages translate; a legacy completion or an
// embedding is never sent to the other kind.

// defaultDrop is what translation removes instead of refusing, whatever
// on_unsupported says: cache_control, the prompt-caching breakpoints
// Anthropic clients mark, which ask for a cheaper price and not a
// different answer. Neutral drops it too; this keeps it dropped under
// on_unsupported: refuse, as it always was.
var defaultDrop = []string{"cache_control"}

// maxTranslatedBody bounds a whole 2xx answer that is translated, which
// must be held whole.
const maxTranslatedBody = 4 << 20

// translates reports whether endpoint ep's requests can be translated.
func translates(ep protocol.Endpoint) bool {
	return ep.Name == "chat_completions" || ep.Name == "messages"
}

// chatPath is the upstream path (below the provider's base URL) of a
// chat request to a provider of dialect d.
func chatPath(d protocol.Dialect) string {
	if d == protocol.Anthropic {
		return "/messages"
	}
	return "/chat/completions"
}

func other(d protocol.Dialect) protocol.Dialect {
	if d == protocol.Anthropic {
		return protocol.OpenAI
	}
	return protocol.Anthropic
}

// translateBody translates the hop's request, with the gateway's edits,
// into out.cross for its model's targets of the other API, once. It
// returns why those targets cannot take it, when they cannot.
func (h *hop) translateBody() lifecycle.Fit {
	g, x, m, out := h.g, h.x, h.m, h.out
	d := x.endpoint.Dialect
	why := fmt.Sprintf("%s requests are not translated to another API", x.endpoint.Path)
	param := "" // the parameter at fault, when one is
	if translates(x.endpoint) {
		e := out.edit
		e.Model = out.body.Model // each call sets its target's
		// Read into a buffer of the exact size: ReadAll's growth would
		// cost twice the body again.
		br := out.body.Reader(e)
		raw := make([]byte, br.Len())
		_, _ = io.ReadFull(br, raw)
		tr, err := translate.Request(d, other(d), raw, translate.Options{Drop: defaultDrop, DefaultMaxTokens: m.route.DefaultOutput, Unsupported: m.unsupported})
		var body *protocol.Body
		if err == nil {
			body, err = protocol.ParseBody(tr.Body)
		}
		if err == nil {
			out.cross = &crossRequest{body: body, includeUsage: tr.IncludeUsage && !x.injectedUsage, dropped: strings.Join(tr.Dropped, ",")}
			return lifecycle.Fit{}
		}
		var te *translate.Error
		if !errors.As(err, &te) {
			// The translator's own output did not parse: a gateway bug,
			// never the client's; the other kind's targets are not used.
			g.log.Error("translated request body does not parse", "error", err.Error(), "model", m.name)
			why = "the request could not be translated: " + err.Error()
		} else {
			why = fmt.Sprintf("parameter %s (at %s) cannot be translated: %s", te.Param, te.Path, te.Reason)
			param = te.Path
		}
	}
	return lifecycle.Fit{Param: param,
		Why: fmt.Sprintf("model %q is served by an %s-style provider, and this request cannot be sent there: %s", m.name, other(d), why)}
}

// translateWhole reads the rest of a whole 2xx answer whose head is in
// data and puts it in the client's dialect. false: the client has its 502
// (or the request ended as the client's).
func (g *Gateway) translateWhole(ctx context.Context, w http.ResponseWriter, r *http.Request, x *exchange, a *attempt, data []byte) ([]byte, bool) {
	p := a.t.provider
	if len(data) > wholeBodyLimit {
		rest, err := io.ReadAll(io.LimitReader(a.resp.Body, maxTranslatedBody+1-int64(len(data))))
		x.upstreamDur = g.now().Sub(x.upstreamStart)
		if err != nil {
			g.upstreamFailed(w, r, x, ctx, err)
			return nil, false
		}
		data = append(data, rest...)
		if len(data) > maxTranslatedBody {
			x.fail(w, protocol.Upstream, outcomeUpstreamError, "upstream_too_large",
				fmt.Sprintf("provider %s sent an answer over %d bytes, too large to translate", p.name, maxTranslatedBody), 0)
			return nil, false
		}
	}
	out, err := translate.Response(p.dialect, x.endpoint.Dialect, data, g.now().Unix())
	if err != nil {
		x.fail(w, protocol.Upstream, outcomeUpstreamError, "upstream_untranslatable",
			fmt.Sprintf("provider %s sent an answer that cannot be translated to the %s API", p.name, x.endpoint.Dialect), 0)
		return nil, false
	}
	return out, true
}
