package native

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-gw/sluice/internal/wire/translate"
)

// Bounds on what Transport holds. A hub request is the gateway's own (it
// has already passed server.max_body_bytes); an error answer is read only
// for its message; a whole answer must be held to be translated.
const (
	// MaxRequest bounds the hub request body Transport reads.
	MaxRequest = 64 << 20
	// MaxFailure bounds the part of a vendor's error answer that Failure
	// sees; the rest is not read.
	MaxFailure = 64 << 10
	// MaxAnswer bounds a vendor's whole 2xx answer, as the gateway bounds
	// an answer it translates.
	MaxAnswer = 4 << 20
)

// DroppedHeader names, comma-separated, the hub parameters a codec left
// out of the vendor's request (Call.Dropped).
const DroppedHeader = "X-Sluice-Dropped"

// passHeaders are the hub request's headers a vendor call keeps: the
// deadline a downstream may read, and the trace context. Everything else
// the gateway set is the hub's (x-api-key, Authorization, anthropic-*,
// the operator's Anthropic-style headers) and stays behind; the Signer
// sets the vendor's credentials.
var passHeaders = []string{"X-Sluice-Timeout", "Traceparent", "Tracestate", "Baggage", "User-Agent"}

// Transport is an http.RoundTripper that takes a hub request (POST
// {base}/messages with a Messages body) and calls the vendor's API at
// base (the provider's base_url: the part of the hub URL before
// "/messages"), returning the vendor's answer as a hub response: a
// Messages answer, its server-sent events, or its error body. So a
// provider whose transport is a Transport is, to the gateway, an
// Anthropic-speaking one.
//
// A request the codec refuses (a *translate.Error, or a body that is not
// a hub request) never reaches the vendor: it is answered 400
// invalid_request_error, the client's fault. What the codec dropped is
// named in the response's X-Sluice-Dropped header.
type Transport struct {
	// Base sends the vendor's request. Nil means http.DefaultTransport.
	Base http.RoundTripper
	// Codec speaks the vendor's API; Signer sets its credentials (nil:
	// none, e.g. a test vendor).
	Codec  Codec
	Signer Signer
	// Options are the request translation's options.
	Options translate.Options
	// Header is set on every vendor call (the operator's own provider
	// headers), before the Signer signs it.
	Header http.Header
	// Forward names (canonical) the hub request's headers passed on to
	// the vendor beyond passHeaders: the client headers the operator
	// lets the provider hear (forward_headers).
	Forward []string
}

// RoundTrip calls the vendor for hub request req.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	call, _ := req.Context().Value(callKey{}).(*Call)
	if call != nil && req.Body != nil {
		// Translated already, from this very body (WithCall).
		req.Body.Close()
	}
	if !strings.HasSuffix(req.URL.Path, "/messages") || req.Method != http.MethodPost {
		if call == nil && req.Body != nil {
			req.Body.Close()
		}
		return hubError(req, http.StatusNotFound, "not_found_error", fmt.Sprintf("%s %s: a native provider serves only POST .../messages", req.Method, req.URL.Path), nil), nil
	}
	if call == nil {
		hub, err := readRequest(req)
		if err != nil {
			return nil, err
		}
		var head struct {
			Model string `json:"model"`
		}
		if err := json.Unmarshal(hub, &head); err != nil || head.Model == "" {
			return hubError(req, http.StatusBadRequest, "invalid_request_error", "the request body is not a Messages request with a model", nil), nil
		}
		opts := t.Options
		if o, ok := req.Context().Value(optionsKey{}).(translate.Options); ok {
			opts = o
		}
		if call, err = t.Codec.Request(hub, head.Model, opts); err != nil {
			return hubError(req, http.StatusBadRequest, "invalid_request_error", refusal(err), nil), nil
		}
	}
	root := *req.URL
	root.RawQuery, root.Fragment = "", ""
	u, err := url.Parse(strings.TrimSuffix(root.String(), "/messages") + call.Path)
	if err != nil {
		return nil, fmt.Errorf("native: call path %q: %w", call.Path, err)
	}
	out, err := http.NewRequestWithContext(req.Context(), http.MethodPost, u.String(), bytes.NewReader(call.Body))
	if err != nil {
		return nil, err
	}
	out.ContentLength = int64(len(call.Body))
	body := call.Body
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	for _, k := range passHeaders {
		if vv := req.Header.Values(k); len(vv) > 0 {
			out.Header[k] = vv
		}
	}
	for _, k := range t.Forward {
		if vv := req.Header.Values(k); len(vv) > 0 && !hubOnly(k) {
			out.Header[http.CanonicalHeaderKey(k)] = vv
		}
	}
	for k, vv := range t.Header {
		out.Header[k] = vv
	}
	out.Header.Set("Content-Type", "application/json")
	if call.Stream {
		out.Header.Set("Accept", "text/event-stream, application/vnd.amazon.eventstream")
	} else {
		out.Header.Set("Accept", "application/json")
	}
	if t.Signer != nil {
		if err := t.Signer.Sign(out, call.Body); err != nil {
			return nil, fmt.Errorf("signing the call: %w", err)
		}
	}
	base2 := t.Base
	if base2 == nil {
		base2 = http.DefaultTransport
	}
	resp, err := base2.RoundTrip(out)
	if err != nil {
		return nil, err
	}
	return t.answer(req, resp, call)
}

// answer turns the vendor's response into the hub's.
func (t *Transport) answer(req *http.Request, resp *http.Response, call *Call) (*http.Response, error) {
	h := http.Header{}
	if len(call.Dropped) > 0 {
		h.Set(DroppedHeader, strings.Join(call.Dropped, ","))
	}
	if resp.StatusCode/100 != 2 {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, MaxFailure))
		resp.Body.Close()
		f := t.Codec.Failure(resp.StatusCode, resp.Header, raw)
		if f.Status < 400 || f.Status > 599 {
			f.Status = http.StatusBadGateway
		}
		if len(f.Body) == 0 {
			f.Body = ErrorBody("api_error", fmt.Sprintf("the provider answered %d", resp.StatusCode))
		}
		if f.RetryAfter > 0 {
			h.Set("Retry-After", RetryAfterSeconds(f.RetryAfter))
		}
		return hubResponse(req, f.Status, h, f.Body), nil
	}
	if !call.Stream {
		raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswer+1))
		resp.Body.Close()
		if err != nil {
			// A whole answer cut short: the call failed on the wire.
			return nil, err
		}
		if len(raw) > MaxAnswer {
			return hubErrorH(req, h, http.StatusBadGateway, "api_error", fmt.Sprintf("the provider's answer is over %d bytes, too large to translate", MaxAnswer)), nil
		}
		out, err := call.Reply.Answer(raw)
		if err != nil {
			return hubErrorH(req, h, http.StatusBadGateway, "api_error", "the provider's answer could not be read: "+err.Error()), nil
		}
		return hubResponse(req, http.StatusOK, h, out), nil
	}
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	return &http.Response{
		Status:        "200 OK",
		StatusCode:    http.StatusOK,
		Proto:         resp.Proto,
		ProtoMajor:    resp.ProtoMajor,
		ProtoMinor:    resp.ProtoMinor,
		Header:        h,
		Body:          &eventBody{events: call.Reply.Stream(resp.Body), vendor: resp.Body},
		ContentLength: -1,
		Request:       req,
	}, nil
}

type optionsKey struct{}

type callKey struct{}

// WithCall returns a context whose request a Transport sends as call
// instead of translating its body again: for a caller that has already
// run the codec on that very body (the gateway, checking a request
// before routing it), so a request is translated once, not once more per
// attempt. The call's Reply reads each attempt's answer afresh.
func WithCall(ctx context.Context, call *Call) context.Context {
	return context.WithValue(ctx, callKey{}, call)
}

// WithOptions returns a context whose requests a Transport translates
// under opts instead of its own Options: for what one request's model
// says (its on_unsupported) where the provider's setting is not it.
func WithOptions(ctx context.Context, opts translate.Options) context.Context {
	return context.WithValue(ctx, optionsKey{}, opts)
}

// eventBody reads a hub stream from a vendor's, as the reader asks.
type eventBody struct {
	events Events
	vendor io.ReadCloser
	buf    []byte
	err    error
}

func (b *eventBody) Read(p []byte) (int, error) {
	for len(b.buf) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		ev, err := b.events.Next()
		b.buf = ev
		switch {
		case err == nil:
		case errors.Is(err, io.EOF), errors.Is(err, translate.ErrStreamFailed):
			// A clean end, or the vendor's error event, already sent as
			// the hub's: the stream is over.
			b.err = io.EOF
		case errors.Is(err, translate.ErrTruncated):
			// Cut before its terminator: the gateway sees a cut stream.
			b.err = io.ErrUnexpectedEOF
		default:
			b.err = err
		}
	}
	n := copy(p, b.buf)
	b.buf = b.buf[n:]
	return n, nil
}

func (b *eventBody) Close() error { return b.vendor.Close() }

// readRequest reads the hub request's body, at most MaxRequest bytes.
func readRequest(req *http.Request) ([]byte, error) {
	if req.Body == nil {
		return nil, nil
	}
	defer req.Body.Close()
	b, err := io.ReadAll(io.LimitReader(req.Body, MaxRequest+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxRequest {
		return nil, fmt.Errorf("native: the request body is over %d bytes", MaxRequest)
	}
	return b, nil
}

// hubOnly reports whether header k belongs to the hub's API or carries
// its credentials, and so never reaches a vendor.
func hubOnly(k string) bool {
	k = http.CanonicalHeaderKey(k)
	return k == "Authorization" || k == "X-Api-Key" || k == "Proxy-Authorization" || k == "Cookie" || strings.HasPrefix(k, "Anthropic-")
}

// refusal is the client's message for a request the codec refused.
func refusal(err error) string {
	var te *translate.Error
	if errors.As(err, &te) {
		return fmt.Sprintf("parameter %s (at %s) cannot be sent to this provider: %s", te.Param, te.Path, te.Reason)
	}
	return "the request cannot be sent to this provider: " + err.Error()
}

// hubError is a hub error answer.
func hubError(req *http.Request, status int, typ, msg string, h http.Header) *http.Response {
	if h == nil {
		h = http.Header{}
	}
	return hubErrorH(req, h, status, typ, msg)
}

func hubErrorH(req *http.Request, h http.Header, status int, typ, msg string) *http.Response {
	return hubResponse(req, status, h, ErrorBody(typ, msg))
}

// ErrorBody is a hub error body of type typ (invalid_request_error,
// api_error, ...) with message msg.
func ErrorBody(typ, msg string) []byte {
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}})
	return b
}

// hubResponse is a JSON hub response of status with body.
func hubResponse(req *http.Request, status int, h http.Header, body []byte) *http.Response {
	h.Set("Content-Type", "application/json")
	return &http.Response{
		Status:        strconv.Itoa(status) + " " + http.StatusText(status),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}

// RetryAfterSeconds is d as a Retry-After header's whole seconds,
// rounded up.
func RetryAfterSeconds(d time.Duration) string {
	return strconv.FormatInt(int64(math.Ceil(d.Seconds())), 10)
}
