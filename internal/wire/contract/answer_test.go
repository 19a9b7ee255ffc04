package contract

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// A data line longer than maxLine is judged the same whether it arrives
// in one write or in two: the property FuzzCollector checks, at a size
// its mutator does not reach.
func TestCollectorLongLineAnyCut(t *testing.T) {
	line := []byte(`data: {"choices":[{"delta":{"content":"` + strings.Repeat("x", maxLine) + `"}}]}` + "\n\n")
	whole, werr := collect(protocol.OpenAI, line)
	split, serr := collect(protocol.OpenAI, line, 10, len(line)-2)
	if fmt.Sprint(werr) != fmt.Sprint(serr) || !sameAnswer(whole, split) {
		t.Fatalf("whole: %d choices, %v; cut: %d choices, %v", len(whole.Choices), werr, len(split.Choices), serr)
	}
}
