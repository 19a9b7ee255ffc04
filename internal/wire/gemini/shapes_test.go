package gemini

import (
	"testing"

	"github.com/sluice-gw/sluice/internal/wire/tokens/tokenstest"
	"github.com/sluice-gw/sluice/internal/wire/translate"
)

// maxRequestBytesPerByte bounds what writing the vendor's request from a
// hub body allocates per byte of it, whatever the body is made of
// (messages, content blocks, tool use, tool results, tools, nesting);
// twice as much under the race detector.
const maxRequestBytesPerByte = 48

// The request codec allocates within a fixed multiple of the body.
func TestShapesRequestWithinBody(t *testing.T) {
	limit := float64(maxRequestBytesPerByte)
	if raceEnabled {
		limit *= 2
	}
	for _, s := range tokenstest.Shapes(256 << 10) {
		if s.Dialect != "anthropic" {
			continue
		}
		t.Run(s.Name, func(t *testing.T) {
			opts := translate.Options{Drop: []string{"*"}}
			Codec{}.Request(s.Body, "m", opts) // fills encoding/json's pools
			var err error
			per := tokenstest.AllocatedPerByte(len(s.Body), func() { _, err = Codec{}.Request(s.Body, "m", opts) })
			t.Logf("%s, %d bytes: %.2f bytes allocated a byte (%v)", s.Name, len(s.Body), per, err)
			if per > limit {
				t.Errorf("writing the request for %d bytes of %s allocated %.1f bytes a byte; want at most %v", len(s.Body), s.Name, per, limit)
			}
		})
	}
}
