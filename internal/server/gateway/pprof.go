package gateway

import (
	"net/http"
	"net/http/pprof"
)

// mountProfiles serves Go's runtime profiles under /debug/pprof/ on the
// admin mux: heap (?gc=1 collects first), goroutine, allocs, block,
// mutex, a CPU profile (/debug/pprof/profile?seconds=N) and an execution
// trace. They are what a soak run compares at its start and its end
// (docs/SOAK.md), and what an operator reads when a replica's memory or
// goroutines grow. They live only on the admin listener, behind its
// token like /metrics, because a profile shows the process's insides
// and a CPU profile or trace costs the process while it is taken. The
// handlers are mounted on this mux by hand: net/http/pprof also
// registers itself on http.DefaultServeMux, which Sluice never serves.
func mountProfiles(mux *http.ServeMux) {
	mux.HandleFunc("GET /debug/pprof/", pprof.Index) // the index, and every named profile
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("POST /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
}
