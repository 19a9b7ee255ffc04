package contract

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/wire/protocol"
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

// hostileSchema's branches each recurse through the same $ref, so the
// checker tries every branch again at every level: on an answer nested
// depth deep it takes time exponential in depth.
func hostileSchema(branches int) []byte {
	var b strings.Builder
	b.WriteString(`{"$defs":{"a":{"anyOf":[`)
	for i := range branches {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"type":"object","properties":{"x":{"$ref":"#/$defs/a"}},"required":["x"],"minProperties":%d}`, i+1)
	}
	b.WriteString(`]}},"$ref":"#/$defs/a"}`)
	return []byte(b.String())
}

// An answer whose check would take seconds is given up at MaxCheckTime
// as ErrCostly, unjudged; the checker runs on in its slot and frees it
// when done, and a legitimate check that follows is judged as usual.
func TestCostlyCheckIsContained(t *testing.T) {
	schema := hostileSchema(4)
	rf := fmt.Appendf(nil, `{"type":"json_schema","json_schema":{"schema":%s}}`, schema)
	c, err := ForRequest(context.Background(), protocol.OpenAI, rf, nil)
	if err != nil || c == nil {
		t.Fatalf("a %d-byte schema: %v", len(schema), err)
	}
	// A budget of 50 ms against about a second of checking on a 2-core
	// machine (each level of nesting multiplies it by about four).
	defer func(b time.Duration) { checkBudget = b }(checkBudget)
	checkBudget = 50 * time.Millisecond
	deep := strings.Repeat(`{"x":`, 8) + `1` + strings.Repeat(`}`, 8)
	start := time.Now()
	err = c.Check(Answer{Choices: []Choice{{Text: []byte(deep)}}})
	took := time.Since(start)
	if !IsCostly(err) {
		t.Fatalf("check: %v; want ErrCostly", err)
	}
	// The wait is the budget, plus what a busy machine adds to waking up.
	if took > checkBudget+2*time.Second {
		t.Errorf("the request waited %v for an unjudged verdict; the budget is %s", took, checkBudget)
	}
	// Once the runaway check has freed its slot, a cheap one is judged.
	waitSlotsFree(t)
	shallow := `{"x":{"x":{"x":1}}}`
	if err := c.Check(Answer{Choices: []Choice{{Text: []byte(shallow)}}}); err == nil || IsCostly(err) {
		t.Errorf("a shallow answer: %v; want a verdict (invalid: the leaf is not an object)", err)
	}
}

// waitSlotsFree waits for every schema slot to be free: runaway checks
// end on their own.
func waitSlotsFree(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for len(compileSlots) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d schema slots still held after 2 minutes", len(compileSlots))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
