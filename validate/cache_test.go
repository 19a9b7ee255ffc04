package validate

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/protocol"
)

// A request whose schema waits for a compile slot gives up at its
// deadline: compiles ahead of it hold every slot, and it neither waits
// past its context nor takes a slot it no longer needs.
func TestCompileWaitEndsWithTheContext(t *testing.T) {
	for range cap(compileSlots) {
		compileSlots <- struct{}{}
	}
	defer func() {
		for range cap(compileSlots) {
			<-compileSlots
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	rf := []byte(`{"type":"json_schema","json_schema":{"schema":{"type":"object","properties":{"never-compiled-before":{"type":"integer"}}}}}`)
	_, err := ForRequest(ctx, protocol.OpenAI, rf, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v; want the context's deadline", err)
	}
	if n := len(compileSlots); n != cap(compileSlots) {
		t.Fatalf("%d of %d slots held after giving up; the request took one", n, cap(compileSlots))
	}
}
