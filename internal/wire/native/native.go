// Package native lets Sluice call providers whose own APIs are neither
// OpenAI's nor Anthropic's (Google's Gemini, AWS Bedrock's Converse), and
// lets the mock serve those APIs, without N×N translators.
//
// # The hub
//
// Every native API is spoken through one hub model: Anthropic's Messages
// API (a request body as POST /v1/messages takes it, a whole answer as it
// returns it, a stream as its server-sent events, an error as its error
// body). A client in OpenAI's dialect reaches a native target through the
// translate package's OpenAI→Anthropic translation, then the target's
// Codec; a client in Anthropic's dialect through the Codec alone. So each
// new API costs one translator to and from the hub, and everything the
// gateway already does with an Anthropic-speaking provider (usage, first
// token, stream checks, breakers, budgets, prices, hedging, continuation,
// evals) holds for it unchanged: the gateway sees hub bytes.
//
// The hub's request fields, beyond the usual ones (model, messages,
// system, max_tokens, stream, temperature, top_p, top_k, stop_sequences,
// tools, tool_choice, metadata.user_id), that a codec must carry or bend:
//
//   - output_config.format {"type":"json_schema","schema":{...}}:
//     structured output (OpenAI's response_format json_schema, and
//     json_object as the schema {"type":"object"}). A codec uses the
//     vendor's native structured output where it has one, and otherwise a
//     forced tool call whose input it turns back into the answer's text.
//   - thinking {"type":"enabled","budget_tokens":N}: a thinking budget
//     (OpenAI's reasoning_effort lands here).
//
// A parameter a codec cannot carry goes through a translate.Bender: it
// is dropped (and named in Call.Dropped) or refused with a
// *translate.Error, by the target's on_unsupported.
//
// # The two sides
//
//   - Codec is the gateway's side: hub request → vendor request, vendor
//     answer, stream and error → hub. Transport (transport.go) wraps it
//     into an http.RoundTripper that takes a hub request and returns a hub
//     response.
//   - Server is the mock's side: vendor request → hub request, hub answer,
//     stream and error → vendor's. Handler (handler.go) wraps it around
//     the mock's Anthropic handler, so every fault script works on every
//     API.
//
// Codecs and Servers are pure: no clock, no goroutines, no network. A
// stream is translated as it is read, holding at most MaxEvent bytes of
// one vendor event, never the answer.
package native

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/sluice-gw/sluice/internal/wire/translate"
)

// MaxEvent bounds one event of a vendor's stream (a Gemini SSE event, a
// Bedrock event-stream message) that a decoder holds: a larger one fails
// the stream (ErrEventTooLarge) instead of growing a buffer without end.
const MaxEvent = 1 << 20

// Codec speaks one vendor's API for the gateway. Safe for concurrent use.
type Codec interface {
	// Request turns a hub request body into the vendor's. model is the
	// vendor's model id (the target's upstream model, already in the
	// hub body's model too). A hub parameter the vendor cannot carry is
	// dropped or refused through a translate.Bender made from opts.
	// Errors are *translate.Error (the client's 400, or the target
	// skipped), or wrap translate.ErrInvalid.
	Request(hub []byte, model string, opts translate.Options) (*Call, error)
	// Failure turns a vendor's error answer (any non-2xx status, its
	// headers and body, which may be cut short or not JSON) into the
	// hub's.
	Failure(status int, h http.Header, body []byte) Failure
}

// Call is one request in the vendor's API, and what reads its answer.
type Call struct {
	// Path goes below the provider's base URL, with its query if any:
	// "/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
	// "/model/anthropic.claude-sonnet-4%3A0/converse-stream". Path
	// segments taken from the model id are escaped.
	Path string
	// Body is the vendor's request body (JSON).
	Body []byte
	// Stream: the answer is a stream (Reply.Stream reads it), else a
	// whole answer (Reply.Answer).
	Stream bool
	// Dropped names the hub parameters the codec left out (Bender's
	// Dropped), for X-Sluice-Dropped and the log.
	Dropped []string
	// Reply reads this call's answer: it may hold what the request
	// decided, such as the name of a forced tool to turn back into text.
	Reply Reply
}

// Reply reads one call's 2xx answer into the hub's.
type Reply interface {
	// Answer turns a whole answer into a hub answer (a Messages
	// response). An answer that is not the vendor's well-formed answer
	// is an error wrapping translate.ErrResponse (the upstream failed).
	Answer(body []byte) ([]byte, error)
	// Stream returns the hub's stream for the vendor's stream r, read as
	// it arrives.
	Stream(r io.Reader) Events
}

// Events yields a stream in the hub's server-sent events.
type Events interface {
	// Next returns the hub's next events (whole SSE events: "event: X\n
	// data: {...}\n\n", one or more), reading as much of the vendor's
	// stream as it needs for them. At the vendor stream's clean end it
	// returns io.EOF, after the hub's terminator (message_stop) has been
	// returned. A stream that ends early returns translate.ErrTruncated
	// with no made-up terminator; a vendor error event comes as the hub's
	// error event, and then translate.ErrStreamFailed. A read error from
	// r is returned as it is. A vendor event larger than MaxEvent, or one
	// that is not well-formed, wraps translate.ErrResponse.
	Next() ([]byte, error)
}

// Failure is a vendor's error answer in the hub's terms.
type Failure struct {
	// Status is the hub status: 400, 401, 403, 404 (a model the vendor
	// does not know, worded so that protocol.UnknownModel recognises
	// it), 408, 413, 429 (throttled or quota), 500, 502, 503 or 529
	// (overloaded, a model not ready), 504 (the vendor's deadline); see
	// StatusType for a status the vendor's own code says nothing more of.
	Status int
	// Body is the hub's error body:
	// {"type":"error","error":{"type":"...","message":"..."}}, whose
	// message keeps the vendor's own words.
	Body []byte
	// RetryAfter is the vendor's retry delay (Gemini's RetryInfo, a
	// Retry-After header), 0 when it gave none.
	RetryAfter time.Duration
}

// Server speaks one vendor's API for the mock: it serves the vendor's
// routes by handing the mock's Anthropic handler a hub request. Safe for
// concurrent use.
type Server interface {
	// Match reports whether a request path (below the mock's root, e.g.
	// "/v1beta/models/gemini-2.5-flash:generateContent" or
	// "/model/amazon.nova-pro-v1%3A0/converse") is one of the vendor's
	// generation routes, and reads its model and whether it streams.
	// rawPath is the escaped path (r.URL.EscapedPath()), query apart.
	Match(rawPath, query string) (model string, stream, ok bool)
	// HubRequest turns the vendor's request body into a hub request
	// body, with model and stream set. An error is the client's fault:
	// Failure renders it.
	HubRequest(model string, stream bool, body []byte) ([]byte, error)
	// Answer turns the hub's whole answer into the vendor's.
	Answer(hub []byte) ([]byte, error)
	// Failure turns the hub's error answer (status, headers, body) into
	// the vendor's: status, headers to set, body.
	Failure(status int, h http.Header, hub []byte) (int, http.Header, []byte)
	// StreamContentType is the content type of the vendor's streams:
	// "text/event-stream", "application/vnd.amazon.eventstream".
	StreamContentType() string
	// Stream returns a writer that takes the hub's stream (SSE bytes,
	// cut anywhere) and writes the vendor's to w, one vendor event per
	// whole hub event that has one, as soon as it is whole. Close ends
	// it: a stream that ended without its terminator writes nothing
	// more.
	Stream(w io.Writer) io.WriteCloser
}

// Signer sets a vendor request's credentials just before it is sent: an
// API key header, an OAuth2 bearer token, an AWS Signature V4. body is
// the request's body (SigV4 signs its hash). An error never carries a
// credential. Implementations live in internal/server/cloudauth.
//
// Before Sign returns, it tells the request's sink every credential it
// set on the request or signed it with (UsedCredentials): the key, the
// access token, the access key id, the signature, the session token and
// the secret that made it. The gateway scrubs those, in every form they
// can take, from whatever comes back from the call; one the signer does
// not report is scrubbed only if it has a known shape.
type Signer interface {
	Sign(req *http.Request, body []byte) error
}

// A CredentialSink hears the credentials a request is signed with, at
// the moment it is signed. The gateway gives each request one
// (WithCredentialSink); Credentials may be called from any goroutine.
type CredentialSink interface {
	Credentials(values ...string)
}

type sinkKey struct{}

// WithCredentialSink returns a context whose requests' signers report
// their credentials to s.
func WithCredentialSink(ctx context.Context, s CredentialSink) context.Context {
	return context.WithValue(ctx, sinkKey{}, s)
}

// UsedCredentials tells the sink of req's context, if it has one, that
// req was signed with values (an empty one is none). A signer reports a
// value made for this request alone (a signature) in a call of its own,
// apart from those it uses again (a key, a token): the sink can then
// keep what it makes of the others from one request to the next.
func UsedCredentials(req *http.Request, values ...string) {
	if s, _ := req.Context().Value(sinkKey{}).(CredentialSink); s != nil {
		s.Credentials(values...)
	}
}

// Kind is one native API as the config names it (providers[].kind).
type Kind struct {
	// Name is the config's kind: "gemini", "bedrock".
	Name string
	// Codec is the gateway's side, Server the mock's.
	Codec  Codec
	Server Server
}
