package tokens

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sluice-gw/sluice/internal/wire/tokens/tokenstest"
)

// An exact Output's prefix is the longest run of whole pieces within
// most, counted as the library counts it: its count is the reference's
// count of the prefix, the next piece would pass most, and a text that
// fits is itself with its whole count.
func TestOutputPrefixExact(t *testing.T) {
	c := NewCounter(0)
	r := rand.New(rand.NewPCG(7, 7))
	texts := append([]string{tokenstest.Prose(3, 400), "日本語のテキスト。中文文本。" + strings.Repeat("語", 700),
		strings.Repeat(" ", 3000) + "x", "func main() {\n\tfmt.Println(\"hi\")\n}\n"}, specialTexts...)
	for range 40 {
		texts = append(texts, randomText(r, 1+r.IntN(200)))
	}
	for _, model := range []string{"gpt-4o", "gpt-4"} {
		enc, _ := EncodingFor(model)
		for _, text := range texts {
			whole := c.Count(enc, text)
			for _, most := range []int{0, 1, 2, 7, whole / 2, whole - 1, whole, whole + 5} {
				o := c.Output(model, 32)
				if !o.Exact() {
					t.Fatalf("%s is not counted exactly", model)
				}
				p, n := o.Prefix(text, most)
				o.Close()
				switch {
				case !utf8.ValidString(p) || !strings.HasPrefix(validUTF8(text), p):
					t.Fatalf("%s: prefix %q of %q is not a valid prefix", model, p, text)
				case n > max(most, 0) || n != inContext(c, enc, text, p):
					t.Fatalf("%s, most %d: prefix %q counts %d, said %d", model, most, p, inContext(c, enc, text, p), n)
				case most >= whole && (p != validUTF8(text) || n != whole):
					t.Fatalf("%s, most %d: a text of %d tokens was cut to %q", model, most, whole, p)
				case most < whole && len(p) < len(validUTF8(text)) && nextFits(c, enc, text, p, most):
					t.Fatalf("%s, most %d: prefix %q stops short of a piece that fits", model, most, p)
				}
			}
		}
	}
}

// inContext is the count of prefix p of text as its pieces stand in
// the whole text (what was generated): the prefix split on its own can
// differ at its end (a run of spaces before a word is split by what
// follows it).
func inContext(c *Counter, enc Encoding, text, p string) int {
	s, n := validUTF8(text), 0
	for i := 0; ; {
		start, end := nextPiece(s, i, enc.index() == encO200k)
		if start == end {
			return n
		}
		for at := start; at < end; {
			chunk := s[at:end]
			if len(chunk) > maxPiece {
				cut := maxPiece
				for !utf8.RuneStart(chunk[cut]) {
					cut--
				}
				chunk = chunk[:cut]
			}
			if at+len(chunk) > len(p) {
				return n
			}
			n += c.Count(enc, chunk)
			at += len(chunk)
		}
		i = end
	}
}

// nextFits reports whether the piece (or chunk) after prefix p of text
// would still have fitted in most.
func nextFits(c *Counter, enc Encoding, text, p string, most int) bool {
	s := validUTF8(text)
	start, end := nextPiece(s, len(p), enc.index() == encO200k)
	if start == end {
		return false
	}
	if end-len(p) > maxPiece {
		return false // a long piece's chunks: checked by the count alone
	}
	return inContext(c, enc, text, p)+c.Count(enc, s[start:end]) <= most
}

// A model whose tokenizer is not embedded is counted by the floor: a
// token a piece, or one for each floorBytes bytes when that is more.
// One word a token (the mock's vocabulary, and a floor of any subword
// tokenizer) counts as many as its words, where cl100k_base counts
// more; a long run of one class counts by its bytes and is cut inside,
// at a rune boundary.
func TestOutputPrefixFloor(t *testing.T) {
	c := NewCounter(0)
	words := strings.Repeat(" consectetur adipiscing reprehenderit", 100) // 300 pieces
	o := c.Output("mock-claude-sonnet", 32)
	defer o.Close()
	if o.Exact() {
		t.Fatal("an unknown model is counted exactly")
	}
	if p, n := o.Prefix(words, 1000); p != words || n != 300 {
		t.Fatalf("the floor of 300 words is %d (cl100k_base: %d)", n, c.Count(Cl100kBase, words))
	}
	if c.Count(Cl100kBase, words) <= 300 {
		t.Fatal("the test needs words cl100k_base splits")
	}
	if p, n := o.Prefix(words, 7); n != 7 || p != strings.Repeat(" consectetur adipiscing reprehenderit", 2)+" consectetur" {
		t.Fatalf("cut at 7: %q, %d", p, n)
	}
	han := strings.Repeat("語", 1000) // one piece of 3,000 bytes
	if _, n := o.Prefix(han, 1<<20); n != 94 {
		t.Errorf("3,000 bytes of one piece count %d, want 94", n)
	}
	p, n := o.Prefix(han, 10)
	if n != 10 || len(p) != 318 || !utf8.ValidString(p) {
		t.Errorf("cut at 10: %d bytes, %d, valid %v; want 318 bytes (320 at a rune boundary)", len(p), n, utf8.ValidString(p))
	}
	// "a" and "\ufffdb": cl100k_base's pieces of the text read as runes.
	if p, n := o.Prefix("a\xffb", 5); p != "a\ufffdb" || n != 2 {
		t.Errorf("invalid UTF-8: %q, %d", p, n)
	}
}

// Past MaxExactBytes of one answer's text, an exact Output counts by the
// floor: counting an answer costs at most what 1 MiB of text costs.
func TestOutputExactBound(t *testing.T) {
	c := NewCounter(0)
	o := c.Output("gpt-4o", 32)
	defer o.Close()
	big := strings.Repeat(" consectetur", MaxExactBytes/12+1)
	if _, n := o.Prefix(big, 1<<30); n != MaxExactBytes/12+1 {
		t.Errorf("a text past the bound counts %d, want its %d pieces", n, MaxExactBytes/12+1)
	}
	small := " consectetur adipiscing"
	if _, n := o.Prefix(small, 100); n != c.Count(O200kBase, small) {
		t.Errorf("a small text after it counts %d, want its exact %d", n, c.Count(O200kBase, small))
	}
}
