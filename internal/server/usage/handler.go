package usage

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// IncompleteHeader names, on an export, the spans of its days that may
// lack records (Export's incomplete): "2026-03-01..2026-03-04, ...".
const IncompleteHeader = "X-Sluice-Usage-Incomplete"

// ServeHTTP serves GET /admin/usage: the export of ParseQuery's query,
// streamed as Export writes it. A query it cannot answer gets 400 with
// what to write instead; a store it cannot read before the answer has
// begun, 503. This replica's records not yet flushed are flushed first
// (for up to 2 s), so the export includes its last second. Days the
// store says may lack records (Export's incomplete) are named in
// IncompleteHeader as well as in the body. An error once the answer has
// begun aborts the connection, so that a client cannot take a short
// export for a whole one.
func (r *Recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "the usage export is read with GET\n", http.StatusMethodNotAllowed)
		return
	}
	q, err := ParseQuery(req.URL.Query(), time.Now())
	if err != nil {
		http.Error(w, "usage export: "+err.Error()+"\n", http.StatusBadRequest)
		return
	}
	fctx, cancel := context.WithTimeout(req.Context(), 2*time.Second)
	r.Flush(fctx) // best effort: a store that is down is reported below
	cancel()
	begun := false
	begin := func(incomplete []Window) {
		begun = true
		h := w.Header()
		h.Set("Cache-Control", "no-store")
		h.Set("X-Content-Type-Options", "nosniff")
		if len(incomplete) > 0 {
			spans := make([]string, len(incomplete))
			for i, x := range incomplete {
				spans[i] = x.From + ".." + x.To
			}
			h.Set(IncompleteHeader, strings.Join(spans, ", "))
		}
		name := fmt.Sprintf("usage-%s-%s", q.From.Format(time.DateOnly), q.To.Format(time.DateOnly))
		if q.Group != "" {
			name += "-by-" + q.Group
		}
		if q.Format == "csv" {
			h.Set("Content-Type", "text/csv; charset=utf-8")
			h.Set("Content-Disposition", `attachment; filename="`+name+`.csv"`)
		} else {
			h.Set("Content-Type", "application/json")
		}
		w.WriteHeader(http.StatusOK)
	}
	st, err := Export(req.Context(), w, r.o.Store, q, begin)
	switch {
	case err == nil:
		r.o.Log.Debug("usage export", "from", q.From.Format(time.DateOnly), "to", q.To.Format(time.DateOnly), "group", q.Group, "days", st.Days, "rows", st.Rows, "max_held", st.MaxHeld, "incomplete", len(st.Incomplete))
	case !begun:
		// The store's error names socket addresses and paths (dial tcp
		// 127.0.0.1:6379: ...): the log has it, the answer does not.
		if r.o.Log != nil {
			r.o.Log.Warn("usage export: the usage store cannot be read", "store", r.o.Store.Where(), "cause", err.Error())
		}
		http.Error(w, "usage export: the usage store ("+r.o.Store.Where()+") cannot be read; retry when it is back (the gateway's log has the cause)\n", http.StatusServiceUnavailable)
	default:
		if !errors.Is(err, context.Canceled) {
			r.o.Log.Warn("usage export cut short", "store", r.o.Store.Where(), "days", st.Days, "err", err)
		}
		panic(http.ErrAbortHandler)
	}
}
