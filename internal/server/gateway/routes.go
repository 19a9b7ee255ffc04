package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// Handler serves the client API: the inference endpoints, the model list,
// and /healthz, which bypasses admission so probes are never shed.
func (g *Gateway) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, ep := range protocol.Endpoints {
		mux.HandleFunc("POST "+ep.Path, func(w http.ResponseWriter, r *http.Request) { g.serveInference(w, r, ep) })
	}
	mux.HandleFunc("GET /v1/models", g.serveModels)
	mux.HandleFunc("GET /v1/models/{id}", g.serveModels)
	mux.HandleFunc("POST /v1/messages/count_tokens", g.serveCountTokens)
	mux.HandleFunc("GET /healthz", serveOK)
	notFound := func(w http.ResponseWriter, r *http.Request) {
		dialectOf(r).WriteError(w, protocol.NotFound, "no route for "+r.Method+" "+r.URL.Path+
			"; Sluice serves POST /v1/chat/completions, /v1/completions, /v1/embeddings, /v1/responses, /v1/messages, /v1/messages/count_tokens and GET /v1/models[/{id}]", 0)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		for _, ep := range protocol.Endpoints {
			if r.URL.Path == ep.Path {
				w.Header().Set("Allow", "POST")
				ep.Dialect.WriteError(w, protocol.MethodNotAllowed, r.Method+" is not allowed on "+ep.Path+"; use POST", 0)
				return
			}
		}
		notFound(w, r)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Every answer, an error or the last flush after the handler
		// returns included, has server.write_timeout to be accepted: the
		// relays (and fail) set it before each write, and this before
		// net/http's final flush. A client that never reads cannot pin
		// its connection.
		defer func() { _ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(g.writeTimeout)) }()
		// A path that is not in clean form gets the API's 404, not the
		// mux's redirect, which no API client follows for a POST.
		if p := r.URL.Path; p == "" || p[0] != '/' || path.Clean(p) != p {
			notFound(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// AdminHandler serves /metrics, /healthz, /readyz, /admin/evals and
// /admin/usage (the usage export, usage.go) on the admin listener.
func (g *Gateway) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(g.metrics.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", serveOK)
	mux.HandleFunc("GET /admin/evals", g.evals.serve)
	mux.Handle("/admin/usage", g.usage.rec)
	mux.HandleFunc("/admin/cache", g.serveCacheAdmin)
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if !g.ready.Load() {
			http.Error(w, "draining\n", http.StatusServiceUnavailable)
			return
		}
		if !g.fleet.ready() {
			http.Error(w, "joining the fleet\n", http.StatusServiceUnavailable)
			return
		}
		serveReady(w, g.fleet)
	})
	return mux
}

func serveOK(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write([]byte("ok\n"))
}

// dialectOf tells which API a client speaks on routes shared by both:
// Anthropic's API requires anthropic-version on every request, and its
// SDKs always send it; no OpenAI client does.
func dialectOf(r *http.Request) protocol.Dialect {
	if r.Header.Get("anthropic-version") != "" {
		return protocol.Anthropic
	}
	return protocol.OpenAI
}

// serveModels lists, in the caller's dialect, every model its key may
// use, or with an id (GET /v1/models/{id}) answers that one model's
// entry, or 404 when the list would not hold it. Every model is listed
// under both APIs: with translation (translate.go), a chat request in
// either API reaches any model. Each entry says, under "sluice", which
// client endpoints serve the model and which of those only through
// translation (modelEndpoints), so a client can pick a model that serves
// what it needs as is.
func (g *Gateway) serveModels(w http.ResponseWriter, r *http.Request) {
	d := dialectOf(r)
	x := &exchange{start: g.now(), writeTimeout: g.writeTimeout, endpoint: protocol.Endpoint{Name: "models", Path: r.URL.Path, Dialect: d}}
	if !g.keys.authenticate(w, r, x) {
		return
	}
	id := r.PathValue("id")
	var names []string
	for _, n := range g.modelNames {
		if (id == "" || n == id) && (x.key == nil || x.key.models == nil || x.key.models[n]) {
			names = append(names, n)
		}
	}
	entry := func(n string) map[string]any {
		all, translated := g.models[n].endpoints()
		ext := map[string]any{"endpoints": all, "translated": translated}
		if nat := g.models[n].natives(); len(nat) > 0 {
			ext["native"] = nat
		}
		if d == protocol.Anthropic {
			return map[string]any{"type": "model", "id": n, "display_name": n, "created_at": "1970-01-01T00:00:00Z", "sluice": ext}
		}
		return map[string]any{"id": n, "object": "model", "created": 0, "owned_by": "sluice", "sluice": ext}
	}
	w.Header().Set("Content-Type", "application/json")
	if id != "" {
		if len(names) == 0 {
			d.WriteError(w, protocol.NotFound, fmt.Sprintf("model %q does not exist or you do not have access to it; GET /v1/models lists the models you can call", id), 0)
			return
		}
		json.NewEncoder(w).Encode(entry(id))
		return
	}
	data := make([]map[string]any, 0, len(names))
	for _, n := range names {
		data = append(data, entry(n))
	}
	var body any
	if d == protocol.Anthropic {
		var first, last any
		if len(names) > 0 {
			first, last = names[0], names[len(names)-1]
		}
		body = map[string]any{"data": data, "has_more": false, "first_id": first, "last_id": last}
	} else {
		body = map[string]any{"object": "list", "data": data}
	}
	json.NewEncoder(w).Encode(body)
}

// endpoints lists the client paths that serve m, and those of them that
// reach no target in their own API, only ones served by translation:
// chat in both APIs (translated when no target speaks it), legacy
// completions and embeddings when a target speaks OpenAI's API (they are
// never translated), the Responses API (bridged through chat unless
// every target serves it: responses_bridge.go), and count_tokens, which
// Sluice answers itself.
func (m *model) endpoints() (all, translated []string) {
	oai, ant, responses := m.speaks(protocol.OpenAI), false, true
	for _, t := range m.targets {
		responses = responses && t.provider.responses.Load()
		// A native provider speaks Anthropic's API only through its
		// codec: translated too.
		ant = ant || t.provider.dialect == protocol.Anthropic && t.provider.native == nil
	}
	translated = []string{}
	all = append(all, "/v1/chat/completions")
	if !oai {
		translated = append(translated, "/v1/chat/completions")
	}
	if oai {
		all = append(all, "/v1/completions", "/v1/embeddings")
	}
	all = append(all, protocol.Responses.Path)
	if !responses {
		translated = append(translated, protocol.Responses.Path)
	}
	all = append(all, "/v1/messages")
	if !ant {
		translated = append(translated, "/v1/messages")
	}
	return append(all, "/v1/messages/count_tokens"), translated
}

// natives names m's targets on native API providers, as kind/provider
// (gemini/vertex-eu), in target order without repeats: their answers
// are translated from the vendor's API, whichever endpoint asks.
func (m *model) natives() []string {
	var out []string
	for _, t := range m.targets {
		if p := t.provider; p.native != nil && !slices.Contains(out, p.native.kind+"/"+p.name) {
			out = append(out, p.native.kind+"/"+p.name)
		}
	}
	return out
}

// speaks reports whether one of m's targets speaks dialect d.
func (m *model) speaks(d protocol.Dialect) bool {
	for _, t := range m.targets {
		if t.provider.dialect == d {
			return true
		}
	}
	return false
}
