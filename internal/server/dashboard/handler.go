package dashboard

import (
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"strconv"
)

//go:embed static
var static embed.FS

// Handler serves the dashboard under prefix (e.g. "/dashboard/"): the
// page at prefix, its assets under prefix+"static/", and
// prefix+"data.json?since=UNIX_MS", r's samples and events after since
// (the whole window without it). The page and its assets come from the
// binary; the Content-Security-Policy lets it load nothing from
// elsewhere.
func Handler(prefix string, r *Recorder) http.Handler {
	sub, _ := fs.Sub(static, "static")
	files := http.StripPrefix(prefix+"static/", http.FileServerFS(sub))
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+prefix+"{$}", func(w http.ResponseWriter, req *http.Request) {
		secure(w)
		http.ServeFileFS(w, req, sub, "index.html")
	})
	mux.Handle("GET "+prefix+"static/", http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		secure(w)
		w.Header().Set("Cache-Control", "max-age=300")
		files.ServeHTTP(w, req)
	}))
	mux.HandleFunc("GET "+prefix+"data.json", func(w http.ResponseWriter, req *http.Request) {
		var since int64
		if s := req.URL.Query().Get("since"); s != "" {
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil || v < 0 {
				http.Error(w, "since: want Unix milliseconds, e.g. since=1700000000000\n", http.StatusBadRequest)
				return
			}
			since = v
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		json.NewEncoder(w).Encode(r.Since(since))
	})
	return mux
}

// secure forbids the page anything from outside the binary, and framing.
func secure(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
}
