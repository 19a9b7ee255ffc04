package gateway

import (
	"context"
	"net/http"
	"time"

	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	"github.com/sluice-gw/sluice/internal/server/runner"
	"github.com/sluice-gw/sluice/internal/wire/contract"
	"github.com/sluice-gw/sluice/internal/wire/native"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
	"github.com/sluice-gw/sluice/internal/wire/translate"
)

// hop is one pass of a request through the request stages (stages.go)
// on one model. A context fallback sends the request on as a new hop
// (contextroute.go): what a hop took is released (each stage's end)
// before the next begins.
type hop struct {
	g    *Gateway
	w    http.ResponseWriter
	r    *http.Request
	x    *exchange
	body *protocol.Body
	// clientTimeout is how long the client said it waits (zero: it did
	// not say).
	clientTimeout time.Duration

	// m and req are the model and the engine's request; a stage may
	// change them (degrade, translate, native), and the stages after it
	// see the change.
	m   *model
	req lifecycle.Request
	// out is what the upstream calls will send.
	out *outgoing
	// ctx ends at the request's deadline (acquire); call is its
	// admission (nil until acquired).
	ctx  context.Context
	call *runner.Call
	// next is the model the request goes on to, when a stage found its
	// prompt too long for m (overflow, or the provider's refusal).
	next *model
	// cancel ends ctx (acquire).
	cancel context.CancelFunc
	// outBuf is out's storage: one allocation for the hop and its
	// outgoing.
	outBuf outgoing
}

// outgoing is what a request's upstream calls send: the client's body,
// with the edits degradation made (the model is set per target).
type outgoing struct {
	body *protocol.Body
	edit protocol.Edit
	// client is the client's API; cross, the body translated for
	// targets of the other one, edits applied (translate.go).
	client protocol.Dialect
	cross  *crossRequest
	// contract is the structured output the request declared, checked
	// in every whole answer before it is committed (validation.go);
	// onInvalid its model's action, model its name for the metric.
	contract         *contract.Contract
	onInvalid, model string
	// unsupported is the model's on_unsupported, for native providers
	// that set none of their own (nativeOptions).
	unsupported translate.Unsupported
	// crossTried: the body was translated for the targets of the other
	// API, into cross, or could not be (crossMisfit says why).
	crossTried  bool
	crossMisfit lifecycle.Fit
	// nativeCalls are the native targets' requests, coded once by their
	// adapter and sent as they are by every attempt (native.WithCall).
	nativeCalls []nativeCall
}

// nativeCall is one native target's request, coded once.
type nativeCall struct {
	p     *provider
	model string
	call  *native.Call // nil when the codec refused it
	fit   lifecycle.Fit
}
