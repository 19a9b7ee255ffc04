package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sluice-gw/sluice/protocol"
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
			"; Sluice serves POST /v1/chat/completions, /v1/completions, /v1/embeddings, /v1/messages, /v1/messages/count_tokens and GET /v1/models[/{id}]", 0)
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

// AdminHandler serves /metrics, /healthz, /readyz and /admin/evals on
// the admin listener.
func (g *Gateway) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(g.metrics.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", serveOK)
	mux.HandleFunc("GET /admin/evals", g.serveEvals)
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if !g.ready.Load() {
			http.Error(w, "draining\n", http.StatusServiceUnavailable)
			return
		}
		serveOK(w, r)
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

// serveModels lists, in the caller's dialect, the models the caller can
// call natively, or with an id (GET /v1/models/{id}) answers that one
// model's entry, or 404 when the list would not hold it: those with a target whose provider speaks its API (a
// mixed failover chain is listed under both), and that its key may use.
// A model whose providers all speak the other API can still be called
// for chat through translation (translate.go), but is not listed: a
// model list is read as "what this API serves as is", and a client
// picking from it should not meet a translation refusal.
func (g *Gateway) serveModels(w http.ResponseWriter, r *http.Request) {
	d := dialectOf(r)
	x := &exchange{start: g.now(), endpoint: protocol.Endpoint{Name: "models", Path: r.URL.Path, Dialect: d}}
	if !g.authenticate(w, r, x) {
		return
	}
	id := r.PathValue("id")
	var names []string
	for _, n := range g.modelNames {
		if (id == "" || n == id) && g.models[n].speaks(d) && (x.key == nil || x.key.models == nil || x.key.models[n]) {
			names = append(names, n)
		}
	}
	entry := func(n string) map[string]any {
		if d == protocol.Anthropic {
			return map[string]any{"type": "model", "id": n, "display_name": n, "created_at": "1970-01-01T00:00:00Z"}
		}
		return map[string]any{"id": n, "object": "model", "created": 0, "owned_by": "sluice"}
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
	var body any
	if d == protocol.Anthropic {
		data := make([]map[string]any, 0, len(names))
		for _, n := range names {
			data = append(data, entry(n))
		}
		var first, last any
		if len(names) > 0 {
			first, last = names[0], names[len(names)-1]
		}
		body = map[string]any{"data": data, "has_more": false, "first_id": first, "last_id": last}
	} else {
		data := make([]map[string]any, 0, len(names))
		for _, n := range names {
			data = append(data, entry(n))
		}
		body = map[string]any{"object": "list", "data": data}
	}
	json.NewEncoder(w).Encode(body)
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

// serveCountTokens answers Anthropic's POST /v1/messages/count_tokens
// from Sluice's own tokenizer, in the encoding of the model's first
// target (see countInput), without calling a provider: the count is what
// the gateway itself charges against budgets. X-Sluice-Token-Count says
// whether it is exact or an estimate (Claude's tokenizer is not public,
// so a Claude model's count is always an estimate).
func (g *Gateway) serveCountTokens(w http.ResponseWriter, r *http.Request) {
	x := &exchange{start: g.now(), priority: g.defaultPri,
		endpoint: protocol.Endpoint{Name: "count_tokens", Path: r.URL.Path, Dialect: protocol.Anthropic}}
	defer g.finish(x)
	if !g.authenticate(w, r, x) {
		return
	}
	m, _, raw, held, ok := g.readRequest(w, r, x)
	defer g.bodies.give(held)
	if !ok {
		return
	}
	n, exact := g.countInput(m, protocol.Anthropic, raw)
	x.outcome, x.status = outcomeOK, http.StatusOK
	x.borrowed = true // a count spends no tokens: nothing to account
	count := "estimated"
	if exact {
		count = "exact"
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Sluice-Token-Count", count)
	json.NewEncoder(w).Encode(map[string]int64{"input_tokens": n})
}
