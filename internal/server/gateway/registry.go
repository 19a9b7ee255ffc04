package gateway

import (
	"context"
	"sync"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/wire/native"
)

// The adapter registry: what a provider kind added to the build
// registers beside its codec (package vendors), so that the gateway can
// sign its calls; adapter.go has the recipe.

// SignerFunc builds a native provider's signer from its config when the
// configuration loads. Its error names what to set, never a secret.
type SignerFunc func(ctx context.Context, pc *config.Provider) (native.Signer, error)

// signers are the signers of the native kinds added to the build
// (RegisterSigner); gemini's and bedrock's are signerFor's own.
var signers struct {
	mu sync.RWMutex
	by map[string]SignerFunc
}

// RegisterSigner makes sign the signer of native kind's providers (a
// kind whose codec is registered in package vendors). It returns a
// function that undoes the registration, for tests.
func RegisterSigner(kind string, sign SignerFunc) (undo func()) {
	signers.mu.Lock()
	defer signers.mu.Unlock()
	if signers.by == nil {
		signers.by = map[string]SignerFunc{}
	}
	prev, had := signers.by[kind]
	signers.by[kind] = sign
	return func() {
		signers.mu.Lock()
		defer signers.mu.Unlock()
		if had {
			signers.by[kind] = prev
		} else {
			delete(signers.by, kind)
		}
	}
}

func registeredSigner(kind string) (SignerFunc, bool) {
	signers.mu.RLock()
	defer signers.mu.RUnlock()
	sign, ok := signers.by[kind]
	return sign, ok
}
