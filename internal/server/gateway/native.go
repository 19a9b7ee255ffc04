package gateway

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/server/cloudauth"
	"github.com/sluice-gw/sluice/internal/wire/native"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
	"github.com/sluice-gw/sluice/internal/wire/translate"
	"github.com/sluice-gw/sluice/internal/wire/vendors"
)

// Native providers (kind gemini, kind bedrock). To the gateway a native
// provider is an Anthropic-speaking one: its calls are built as for any
// (POST {base_url}/messages, the body's model rewritten to the target's,
// usage, first token, stream checks, breakers, budgets, prices, hedging,
// continuation and evals unchanged), and its transport, a
// native.Transport made once per configuration, turns each into the
// vendor's call, signed with the provider's credentials, and the
// vendor's answer back into Anthropic's bytes.
//
//   - Every upstream call of the gateway's (generations, continuations,
//     probes, evals, counts) goes through roundTripper, so a native
//     provider's never leaves unsigned or in Anthropic's API.
//   - A request the provider's codec cannot carry is found before
//     routing (the nativeCodec adapter, adapter.go): that provider's
//     targets are dropped from the request's route, or, when none is
//     left, the client has a 400 naming the parameter. The Transport
//     refuses one that slips through with a 400 invalid_request_error,
//     which, as any 400, does not count against the provider's health.
//   - What the codec dropped reaches the client in X-Sluice-Dropped,
//     with what translation dropped, and the request log.
//   - count_tokens is never forwarded to a native provider: the
//     gateway's own count answers.
//   - The signer is built when the configuration loads; a failure is a
//     load error naming the provider and what to set, never a secret.
//   - Each call's signer reports the credentials it signed with to the
//     request's set (credentials, redact_secrets.go), which scrubs them
//     from whatever comes back, as a provider's key is.

// nativeProvider is what a native provider has beyond other providers.
type nativeProvider struct {
	kind  string
	codec native.Codec
	// opts are the codec's request options, as its Transport has them.
	opts translate.Options
}

// signerFor builds a native provider's signer from its config. This is
// the one place that maps config to credentials; each kind's line calls
// package cloudauth, and a kind added to the build registers its own
// (RegisterSigner).
func signerFor(ctx context.Context, pc *config.Provider) (native.Signer, error) {
	if sign, ok := registeredSigner(pc.Kind); ok {
		return sign(ctx, pc)
	}
	switch {
	case pc.Kind == config.KindGemini && pc.Vertex == nil:
		if pc.APIKey() == "" {
			return nil, fmt.Errorf("%s is empty", pc.APIKeyEnv)
		}
		return cloudauth.APIKey("x-goog-api-key", pc.APIKey()), nil
	case pc.Kind == config.KindGemini:
		return cloudauth.Google(ctx, pc.Vertex.CredentialsFile)
	case pc.Kind == config.KindBedrock:
		return cloudauth.AWS(ctx, pc.Region, pc.AWSProfile)
	}
	return nil, fmt.Errorf("this build of Sluice cannot sign %s calls", pc.Kind)
}

// whatToSet tells the operator what a native provider's credentials
// come from, for a load error.
func whatToSet(pc *config.Provider) string {
	switch {
	case pc.Kind == config.KindGemini && pc.Vertex == nil:
		return fmt.Sprintf("export the Gemini API key in %s", pc.APIKeyEnv)
	case pc.Kind == config.KindGemini && pc.Vertex.CredentialsFile != "":
		return "check that vertex.credentials_file is a readable service account or external account JSON file"
	case pc.Kind == config.KindGemini:
		return "set Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS, or run on Google Cloud), or write vertex.credentials_file"
	}
	if pc.AWSProfile != "" {
		return fmt.Sprintf("check that AWS profile %s exists in the shared AWS config and has credentials", pc.AWSProfile)
	}
	return "set AWS credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a web identity, or an instance role), or write aws_profile"
}

// setUpNative makes provider p, of config pc (i-th), a native one: its
// dialect is the hub's, its calls go through a native.Transport over
// base.
func setUpNative(p *provider, i int, pc *config.Provider, base http.RoundTripper, sign func(context.Context, *config.Provider) (native.Signer, error)) error {
	k, ok := vendors.Lookup(pc.Kind)
	if !ok || k.Codec == nil {
		return fmt.Errorf("providers[%d] (%s): kind %s is not built into this Sluice", i, pc.Name, pc.Kind)
	}
	if sign == nil {
		sign = signerFor
	}
	// Not a context that ends: a signer may keep it for the life of its
	// token source (Google's OAuth2 refreshes with it). A signer bounds
	// its own work at load.
	signer, err := sign(context.Background(), pc)
	if err != nil {
		// The error is the signer's, which never carries a credential;
		// scrubbed all the same.
		return fmt.Errorf("providers[%d] (%s): cannot sign %s calls: %s; %s", i, pc.Name, pc.Kind, p.scrub.text([]byte(err.Error())), whatToSet(pc))
	}
	p.native = &nativeProvider{kind: pc.Kind, codec: k.Codec, opts: translate.Options{
		Drop: defaultDrop,
		// providers[].on_unsupported: what the codec does with a
		// parameter the vendor's API cannot carry.
		Unsupported: p.unsupported,
	}}
	// The client headers the provider hears are forward_headers alone
	// (none of Anthropic's API's).
	p.forward = nil
	for _, h := range pc.ForwardHeaders {
		p.forward = append(p.forward, http.CanonicalHeaderKey(h))
	}
	p.rt = &native.Transport{Base: base, Codec: k.Codec, Signer: signer, Options: p.native.opts, Header: p.headers, Forward: p.forward}
	p.dialect = protocol.Anthropic
	// The hub's own credentials and headers never go out: the
	// Transport sends only its passHeaders, the operator's headers and
	// the signer's (belt and braces: authorize skips them too).
	p.keyHeader, p.headers = nil, http.Header{}
	return nil
}

// nativeOptions are the translation options of a native provider's
// calls for a request whose model says modelSays: on_unsupported is the
// provider's when it sets one, else the model's.
func (p *provider) nativeOptions(modelSays translate.Unsupported) translate.Options {
	o := p.native.opts
	if o.Unsupported == translate.UnsupportedDefault {
		o.Unsupported = modelSays
	}
	return o
}

// sayNativeDropped adds what a native provider's codec dropped (its
// Transport's X-Sluice-Dropped) to what translation dropped
// (sayDropped), on the answer and in the request log.
func sayNativeDropped(w http.ResponseWriter, x *exchange, a *attempt) {
	var parts []string
	if d := w.Header().Get("X-Sluice-Dropped"); d != "" {
		parts = append(parts, d)
	}
	if a.t.provider.native != nil && a.resp != nil {
		for _, d := range strings.Split(a.resp.Header.Get(native.DroppedHeader), ",") {
			if d = strings.TrimSpace(d); d != "" && !containsItem(parts, d) {
				parts = append(parts, d)
			}
		}
	}
	if len(parts) > 0 {
		x.dropped = strings.Join(parts, ",")
		w.Header().Set("X-Sluice-Dropped", x.dropped)
	}
}

// containsItem reports whether one of the comma-separated lists in
// lists names item.
func containsItem(lists []string, item string) bool {
	for _, l := range lists {
		for _, v := range strings.Split(l, ",") {
			if v == item {
				return true
			}
		}
	}
	return false
}
