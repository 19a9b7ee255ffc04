package contract

import (
	"context"
	"crypto/sha256"
	"runtime"
	"sync"
)

// Compiling a schema costs far more than checking an answer against it
// (a few hundred microseconds for a small one, most of it the compiler
// setting itself up), and clients send the same schemas request after
// request. Compiled schemas are therefore kept, by the hash of their
// bytes, up to cacheEntries of them; past that an arbitrary one is
// dropped, so clients sending ever new schemas cost themselves a compile
// each and everyone else at most a recompile.
const cacheEntries = 1024

var cache = struct {
	sync.Mutex
	m map[[32]byte]*Schema
}{m: make(map[[32]byte]*Schema)}

// compileSlots bounds the compiles running at once to half the CPUs
// (at least one). A schema's compile time grows faster than its size
// (up to about 170 ms for MaxSchemaBytes of properties on a busy 2-core
// machine), so however many costly schemas arrive at once, the other
// half of the CPUs keeps serving everyone else; a request that waits
// for a slot waits only on compiles, never on other requests' answers.
var compileSlots = make(chan struct{}, max(1, runtime.GOMAXPROCS(0)/2))

// compileCached is Compile, sharing compiled schemas between requests
// that send the same bytes. Failures are not kept. A request waits for a
// compile slot no longer than its context lets it: a burst of costly
// schemas queues its own requests, and each gives up at its deadline
// (ctx.Err()) instead of holding its connection past it.
func compileCached(ctx context.Context, raw []byte) (*Schema, error) {
	key := sha256.Sum256(raw)
	cache.Lock()
	s, ok := cache.m[key]
	cache.Unlock()
	if ok {
		return s, nil
	}
	select {
	case compileSlots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	s, err := Compile(raw)
	<-compileSlots
	if err != nil {
		return nil, err
	}
	cache.Lock()
	if len(cache.m) >= cacheEntries {
		for k := range cache.m {
			delete(cache.m, k)
			break
		}
	}
	cache.m[key] = s
	cache.Unlock()
	return s, nil
}
