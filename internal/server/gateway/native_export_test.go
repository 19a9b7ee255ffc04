package gateway

import (
	"context"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/wire/native"
)

// WithSigner makes a gateway build native providers' signers with f, in
// place of the built-in ones (signerFor), for tests.
func WithSigner(f func(context.Context, *config.Provider) (native.Signer, error)) func(*Options) {
	return func(o *Options) { o.signer = f }
}
