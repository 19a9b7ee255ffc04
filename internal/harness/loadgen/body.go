package loadgen

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"

	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/model/workload"
	"github.com/sluice-gw/sluice/internal/sim/report"
	"github.com/sluice-gw/sluice/internal/sim/scenario"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// anthropicMaxTokens fills max_tokens, which the Messages API requires.
const anthropicMaxTokens = 256

// promptSlack is how far apart two prompts of the same length may start
// in the shared text, so that requests do not all carry identical bytes.
const promptSlack = 4096

// bodies builds request bodies. Prompts are windows into one text made
// from the seed, mock.CharsPerToken characters per token, the rule the
// mock counts a prompt's tokens by (for its usage and its prefill time),
// so a prompt costs a slice, not a generator run.
type bodies struct {
	dialect   protocol.Dialect
	model     string
	maxTokens int
	stream    bool
	tokens    workload.Sizes
	text      string
	// criticalKey authorises critical requests as critical, for a
	// stream with no key of its own.
	criticalKey string
	// key is the stream's virtual key, sent with every request.
	key string
}

func newBodies(d protocol.Dialect, c scenario.Clients, seed uint64, criticalKey string) *bodies {
	b := &bodies{dialect: d, model: c.Model, maxTokens: c.MaxTokens, stream: c.Stream, tokens: c.Prompt(), criticalKey: criticalKey}
	if d == protocol.Anthropic && b.maxTokens <= 0 {
		b.maxTokens = anthropicMaxTokens
	}
	b.text = promptText(seed, mock.CharsPerToken*b.tokens.Max+promptSlack)
	return b
}

// promptText is n characters of lowercase words and spaces: nothing a JSON
// encoder has to escape, and nothing a cache could collapse.
func promptText(seed uint64, n int) string {
	const letters = "etaoinshrdlucmfwypvbgk"
	rng := rand.New(rand.NewPCG(seed, 0x9407))
	buf := make([]byte, 0, n+16)
	for len(buf) < n {
		for range 2 + rng.IntN(7) {
			buf = append(buf, letters[rng.IntN(len(letters))])
		}
		buf = append(buf, ' ')
	}
	return string(buf[:n])
}

// promptTokens draws a request's prompt length.
func (b *bodies) promptTokens(rng *rand.Rand) int { return b.tokens.Draw(rng) }

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatRequest struct {
	Model     string    `json:"model"`
	Messages  []message `json:"messages"`
	MaxTokens int       `json:"max_tokens,omitempty"`
	Stream    bool      `json:"stream,omitempty"`
}

// build returns a request body and the headers every attempt carries,
// drawing the prompt length and placement from rng.
func (b *bodies) build(rng *rand.Rand, priority int) ([]byte, http.Header) {
	n := b.promptTokens(rng)
	off := rng.IntN(promptSlack)
	body, err := json.Marshal(chatRequest{
		Model:     b.model,
		Messages:  []message{{Role: "user", Content: b.text[off : off+mock.CharsPerToken*n]}},
		MaxTokens: b.maxTokens,
		Stream:    b.stream,
	})
	if err != nil {
		panic("loadgen: marshalling a request: " + err.Error()) // strings and ints only
	}
	h := http.Header{
		"Content-Type":      {"application/json"},
		"X-Sluice-Priority": {report.Priorities[priority]},
	}
	if b.stream {
		h.Set("Accept", "text/event-stream")
	}
	switch {
	case b.key != "" && b.dialect == protocol.Anthropic:
		h.Set("X-Api-Key", b.key)
	case b.key != "":
		h.Set("Authorization", "Bearer "+b.key)
	case priority == 0 && b.criticalKey != "":
		h.Set("Authorization", "Bearer "+b.criticalKey)
	}
	if b.dialect == protocol.Anthropic {
		h.Set("Anthropic-Version", "2023-06-01")
	}
	return body, h
}
