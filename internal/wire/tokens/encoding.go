package tokens

import (
	"strings"
	"sync"

	"github.com/tiktoken-go/tokenizer"
)

// Encoding names a BPE vocabulary and its pre-tokenizer, spelled as
// OpenAI's tiktoken spells it.
type Encoding string

const (
	// O200kBase is the encoding of GPT-4o, GPT-4.1, GPT-4.5, GPT-5 and
	// the o-series reasoning models.
	O200kBase Encoding = "o200k_base"
	// Cl100kBase is the encoding of GPT-4, GPT-3.5 and OpenAI's
	// text-embedding-3 and ada-002 embedding models.
	Cl100kBase Encoding = "cl100k_base"

	// Approximate is the encoding used for every model whose own
	// tokenizer is not embedded here (Claude, Llama, Mistral, Qwen,
	// Gemma, anything unknown). It is cl100k_base for two reasons.
	// First, Llama 3's tokenizer is built on it: Meta's tiktoken model
	// uses cl100k_base's exact pre-tokenizer pattern, and 100k of its
	// 128k tokens come from tiktoken. Second, of the two encodings
	// embedded here it is the one that splits text into more tokens:
	// o200k_base's larger vocabulary needs fewer tokens for most
	// non-English text (the tests hold examples), and for a budget or a
	// large-context threshold, counting a little high is the safer
	// error.
	Approximate = Cl100kBase
)

// family maps a model-name prefix to its encoding.
type family struct {
	prefix string
	enc    Encoding
}

// families is checked in order, so a longer prefix comes before a
// shorter one it extends ("gpt-4o" before "gpt-4"). The lists follow
// tiktoken's own model table.
var families = []family{
	{"gpt-4o", O200kBase},
	{"gpt-4.1", O200kBase},
	{"gpt-4.5", O200kBase},
	{"gpt-5", O200kBase},
	{"chatgpt-4o", O200kBase},
	{"o1", O200kBase},
	{"o3", O200kBase},
	{"o4", O200kBase},
	{"gpt-4", Cl100kBase},
	{"gpt-3.5", Cl100kBase},
	{"gpt-35", Cl100kBase}, // Azure's spelling of gpt-3.5
	{"text-embedding-3", Cl100kBase},
	{"text-embedding-ada-002", Cl100kBase},
}

// EncodingFor returns the encoding for an upstream model name, matched
// by family prefix without regard to case, and whether counts in it are
// exact for that model. A provider prefix ("openai/gpt-4o") and a
// fine-tune prefix ("ft:gpt-4o-mini:org::id") are looked through. Any
// other model gets Approximate with exact false: see the package
// comment for how far such a count can be trusted.
func EncodingFor(model string) (enc Encoding, exact bool) {
	if i := strings.LastIndexByte(model, '/'); i >= 0 {
		model = model[i+1:]
	}
	if hasPrefixFold(model, "ft:") {
		model = model[3:]
	}
	for _, f := range families {
		if hasPrefixFold(model, f.prefix) {
			return f.enc, true
		}
	}
	return Approximate, false
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// encIndex is an Encoding as a small number, for cache keys.
type encIndex uint8

const (
	encCl100k encIndex = iota
	encO200k
	numEncodings
)

// index returns e's number; an encoding not embedded here counts as
// Approximate.
func (e Encoding) index() encIndex {
	if e == O200kBase {
		return encO200k
	}
	return encCl100k
}

// codecs build each vocabulary on first use: a vocabulary is a Go map
// literal of 100k (cl100k_base) or 200k (o200k_base) entries, which takes
// tens of milliseconds and a few megabytes of heap to build, so a process
// that never counts in an encoding never pays for it. Preload moves that
// cost to startup.
var codecs = [numEncodings]func() tokenizer.Codec{
	encCl100k: sync.OnceValue(func() tokenizer.Codec { return mustCodec(tokenizer.Cl100kBase) }),
	encO200k:  sync.OnceValue(func() tokenizer.Codec { return mustCodec(tokenizer.O200kBase) }),
}

func mustCodec(e tokenizer.Encoding) tokenizer.Codec {
	c, err := tokenizer.Get(e)
	if err != nil {
		panic("tokens: embedded encoding " + string(e) + " is missing: " + err.Error())
	}
	return c
}

// Preload builds the vocabularies of encs now, so that the first
// request to count in one does not wait for it.
func Preload(encs ...Encoding) {
	for _, e := range encs {
		codecs[e.index()]()
	}
}

// countText tokenizes s. The codecs only fail on invalid UTF-8 in a
// strict mode Sluice does not set, or on a regexp timeout it does not
// set either; should one fail all the same, the byte length stands in,
// which a byte-level BPE never exceeds.
func countText(e encIndex, s string) int {
	n, err := codecs[e]().Count(s)
	if err != nil {
		return len(s)
	}
	return n
}
