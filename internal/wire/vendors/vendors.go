// Package vendors lists the native APIs (package native's Kinds) this
// build of Sluice speaks: the gateway finds a provider's codec here by
// its config kind, and the mock serves every one's routes.
package vendors

import (
	"slices"
	"sync"

	"github.com/sluice-gw/sluice/internal/wire/bedrock"
	"github.com/sluice-gw/sluice/internal/wire/gemini"
	"github.com/sluice-gw/sluice/internal/wire/native"
)

var (
	mu sync.RWMutex
	// kinds are the native APIs, one per config kind.
	kinds = []native.Kind{
		gemini.Kind(),
		bedrock.Kind(),
	}
)

// Lookup returns the native API of config kind name.
func Lookup(name string) (native.Kind, bool) {
	mu.RLock()
	defer mu.RUnlock()
	for _, k := range kinds {
		if k.Name == name {
			return k, true
		}
	}
	return native.Kind{}, false
}

// All lists the native APIs.
func All() []native.Kind {
	mu.RLock()
	defer mu.RUnlock()
	return slices.Clone(kinds)
}

// Servers lists the native APIs' mock sides.
func Servers() []native.Server {
	var out []native.Server
	for _, k := range All() {
		if k.Server != nil {
			out = append(out, k.Server)
		}
	}
	return out
}

// Register adds k, or replaces the kind of its name, until the returned
// function undoes it. It is for tests that need a vendor of their own
// (a toy API) where the real ones are not wanted.
func Register(k native.Kind) (undo func()) {
	mu.Lock()
	defer mu.Unlock()
	prev := slices.Clone(kinds)
	i := slices.IndexFunc(kinds, func(x native.Kind) bool { return x.Name == k.Name })
	if i >= 0 {
		kinds[i] = k
	} else {
		kinds = append(kinds, k)
	}
	return func() {
		mu.Lock()
		defer mu.Unlock()
		kinds = prev
	}
}
