package gateway_test

import (
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/internal/config"
)

// cannedKeyStream is cannedStream with text a key scrub must read: words
// that end in the key's first byte (the next event is then read, to see
// whether the key follows), \n and \u escapes, and a false start.
func cannedKeyStream(n int) string {
	var b strings.Builder
	b.WriteString("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n")
	for i := range n {
		content := []string{"words", `a\nb`, `caf\u00e9 `, "sk-no ", "word "}[i%5]
		b.WriteString("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" + content + "\"}}]}\n\n")
	}
	b.WriteString("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
	b.WriteString("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":40,\"total_tokens\":41}}\n\n")
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

// With a provider key to scrub, an untranslated stream still allocates
// nothing per event: plain text passes unread, and text the scrub must
// read (escapes, a word that ends as the key begins) is read with the
// stream's one tokenizer and buffers.
func TestStreamAllocsWithKey(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	t.Setenv("SLUICE_TEST_ALLOCS_KEY", "sk-allocs-secret-0123456789abcdef")
	withKey := func(c *config.Config) {
		for i := range c.Providers {
			c.Providers[i].APIKeyEnv = "SLUICE_TEST_ALLOCS_KEY"
		}
	}
	plain0, plain := streamAllocs(t, withKey, cannedStream(0)), streamAllocs(t, withKey, cannedStream(200))
	read := streamAllocs(t, withKey, cannedKeyStream(200))
	t.Logf("with a key: %.1f allocations for a stream of no content events, %.1f for 200 plain ones, %.1f for 200 the scrub reads", plain0, plain, read)
	if plain > plain0+1 || read > plain0+1 {
		t.Errorf("a stream of 200 events allocates %.1f times (plain) and %.1f (read by the scrub), one of none %.1f; want nothing per event or per stream", plain, read, plain0)
	}
}
