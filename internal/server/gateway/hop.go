package gateway

import (
	"context"
	"net/http"
	"time"

	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	"github.com/sluice-gw/sluice/internal/server/runner"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
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
