package native

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strings"
)

// HubPath is the path of the hub request Handler hands its hub handler.
const HubPath = "/v1/messages"

// Handler serves the native APIs of servers by calling hub, an
// Anthropic Messages handler (the mock's), in process: a vendor request
// whose path a Server matches becomes a hub request (POST /v1/messages,
// with the same context and headers, so per-request fault headers and
// credentials reach hub), and hub's answer is written back in the
// vendor's API as hub writes it. A stream is translated and flushed
// event by event, so its timing (first token, token gaps, stalls, cuts)
// is hub's own; a connection hub takes over (a reset) is the client's
// too. A request no Server matches is answered 404 in JSON.
func Handler(servers []Server, hub http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, s := range servers {
			if model, stream, ok := s.Match(r.URL.EscapedPath(), r.URL.RawQuery); ok {
				serve(s, hub, w, r, model, stream)
				return
			}
		}
		writeVendor(w, http.StatusNotFound, nil, ErrorBody("not_found_error", "no such endpoint: "+r.URL.Path))
	})
}

// Matches reports whether one of servers serves r's path.
func Matches(servers []Server, r *http.Request) bool {
	for _, s := range servers {
		if _, _, ok := s.Match(r.URL.EscapedPath(), r.URL.RawQuery); ok {
			return true
		}
	}
	return false
}

func serve(s Server, hub http.Handler, w http.ResponseWriter, r *http.Request, model string, stream bool) {
	fail := func(status int, typ, msg string) {
		st, h, b := s.Failure(status, nil, ErrorBody(typ, msg))
		writeVendor(w, st, h, b)
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		fail(http.StatusMethodNotAllowed, "invalid_request_error", r.Method+" not allowed; use POST")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxRequest+1))
	if err != nil {
		fail(http.StatusBadRequest, "invalid_request_error", "reading the body: "+err.Error())
		return
	}
	if len(body) > MaxRequest {
		fail(http.StatusRequestEntityTooLarge, "request_too_large", fmt.Sprintf("the body is over %d bytes", MaxRequest))
		return
	}
	hb, err := s.HubRequest(model, stream, body)
	if err != nil {
		fail(http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	hr, err := http.NewRequestWithContext(r.Context(), http.MethodPost, HubPath, bytes.NewReader(hb))
	if err != nil {
		fail(http.StatusInternalServerError, "api_error", err.Error())
		return
	}
	hr.Header = r.Header.Clone()
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Del("Content-Length")
	hr.ContentLength = int64(len(hb))
	hr.Host, hr.RemoteAddr, hr.RequestURI = r.Host, r.RemoteAddr, HubPath
	a := &adapter{s: s, w: w, h: http.Header{}}
	hub.ServeHTTP(a, hr)
	a.finish()
}

// adapter is the ResponseWriter hub writes its answer to: it holds an
// error or a whole answer until hub returns, and passes a stream on as
// the vendor's, flushing as hub flushes.
type adapter struct {
	s      Server
	w      http.ResponseWriter
	h      http.Header
	status int
	// mode: what the answer is, decided at WriteHeader.
	mode int
	buf  bytes.Buffer
	// committed: the vendor's headers went out.
	committed bool
	hijacked  bool
	stream    io.WriteCloser
}

const (
	modeNone = iota
	modeFailure
	modeWhole
	modeStream
)

func (a *adapter) Header() http.Header { return a.h }

func (a *adapter) WriteHeader(status int) {
	if a.mode != modeNone || status < 200 {
		return
	}
	a.status = status
	switch {
	case status/100 != 2:
		a.mode = modeFailure
	case isEventStream(a.h.Get("Content-Type")):
		a.mode = modeStream
		a.commit(a.s.StreamContentType())
		a.stream = a.s.Stream(flushWriter{a.w})
	default:
		a.mode = modeWhole
	}
}

func (a *adapter) Write(p []byte) (int, error) {
	if a.mode == modeNone {
		if a.h.Get("Content-Type") == "" {
			a.h.Set("Content-Type", http.DetectContentType(p))
		}
		a.WriteHeader(http.StatusOK)
	}
	if a.mode == modeStream {
		return a.stream.Write(p)
	}
	if a.buf.Len()+len(p) > MaxAnswer {
		return 0, fmt.Errorf("native: an answer over %d bytes", MaxAnswer)
	}
	return a.buf.Write(p)
}

// FlushError passes a flush on: a stream's events, or, for a whole 2xx
// answer, its headers (a stall after the headers stays one).
func (a *adapter) FlushError() error {
	switch a.mode {
	case modeNone:
		a.WriteHeader(http.StatusOK)
		return a.FlushError()
	case modeWhole:
		a.commit("application/json")
	case modeFailure:
		return nil
	}
	return http.NewResponseController(a.w).Flush()
}

// Hijack lets hub take over the connection (a reset, a cut): nothing
// more is written once it has.
func (a *adapter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(a.w).Hijack()
	if err == nil {
		a.hijacked = true
	}
	return c, rw, err
}

// Unwrap gives hub the connection's other controls (deadlines).
func (a *adapter) Unwrap() http.ResponseWriter { return a.w }

// commit writes the vendor's 200 headers: hub's own, less its API's.
func (a *adapter) commit(contentType string) {
	if a.committed {
		return
	}
	a.committed = true
	for k, vv := range a.h {
		if passHub(k) {
			a.w.Header()[k] = vv
		}
	}
	a.w.Header().Set("Content-Type", contentType)
	a.w.WriteHeader(http.StatusOK)
}

// finish writes what hub left to write once it returned.
func (a *adapter) finish() {
	if a.hijacked {
		return
	}
	switch a.mode {
	case modeNone:
		a.mode, a.status = modeWhole, http.StatusOK
		fallthrough
	case modeWhole:
		out, err := a.s.Answer(a.buf.Bytes())
		if err != nil {
			// Hub's answer is not whole (a malformed or cut answer by
			// design): the client gets it as it is, not the vendor's.
			out = a.buf.Bytes()
		}
		a.commit("application/json")
		_, _ = a.w.Write(out)
	case modeFailure:
		status, h, body := a.s.Failure(a.status, a.h, a.buf.Bytes())
		for k, vv := range h {
			a.w.Header()[k] = vv
		}
		writeVendor(a.w, status, nil, body)
	case modeStream:
		_ = a.stream.Close()
	}
}

// passHub reports whether hub's response header k is passed to the
// vendor's client: not its API's own.
func passHub(k string) bool {
	k = http.CanonicalHeaderKey(k)
	switch {
	case k == "Content-Type", k == "Content-Length", k == "Request-Id",
		strings.HasPrefix(k, "Anthropic-"):
		return false
	}
	return true
}

// flushWriter flushes after every write, so each vendor event leaves as
// soon as it is whole.
type flushWriter struct{ w http.ResponseWriter }

func (f flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err == nil {
		err = http.NewResponseController(f.w).Flush()
	}
	return n, err
}

func writeVendor(w http.ResponseWriter, status int, h http.Header, body []byte) {
	for k, vv := range h {
		w.Header()[k] = vv
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func isEventStream(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "text/event-stream"
}
