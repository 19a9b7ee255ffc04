package tokens

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dlclark/regexp2/v2"
	"github.com/sluice-gw/sluice/internal/wire/tokens/tokenstest"
	"github.com/tiktoken-go/tokenizer"
)

// The library's split patterns. Compiled with the same options, they
// get the matcher the library compiled for them (regexp2 looks a pattern
// up among the generated matchers the codec package registers), so
// refSplit splits as the library's Count and Encode do; TestRefSplit
// checks that through the counts.
var refPatterns = map[Encoding]string{
	Cl100kBase: `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
	O200kBase:  `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
}

var refRegexps = map[Encoding]*regexp2.Regexp{
	Cl100kBase: regexp2.MustCompile(refPatterns[Cl100kBase], regexp2.None),
	O200kBase:  regexp2.MustCompile(refPatterns[O200kBase], regexp2.None),
}

// refSplit is the library's split of s into pieces.
func refSplit(enc Encoding, s string) []string {
	_ = refCodecs() // the codec package registers the matchers
	re := refRegexps[enc]
	var out []string
	m, err := re.FindStringMatch(s)
	for ; m != nil && err == nil; m, err = re.FindNextMatch(m) {
		out = append(out, m.String())
	}
	if err != nil {
		panic(err)
	}
	return out
}

// split is the pre-tokenizer's split of s into pieces.
func split(enc Encoding, s string) []string {
	s = validUTF8(s)
	var out []string
	for i := 0; ; {
		start, end := nextPiece(s, i, enc.index() == encO200k)
		if start == end {
			return out
		}
		out = append(out, s[start:end])
		i = end
	}
}

// alphabet is what the random texts are drawn from: every class the
// patterns tell apart, the runes on their edges, and invalid bytes.
var alphabet = []string{
	"a", "b", "s", "t", "e", "l", "m", "d", "r", "v", "x", "S", "T", "E", "L", "M", "D", "R", "V", "X",
	"'", "'", "'", "’", "0", "1", "7", "٣", "²", "Ⅻ", "½",
	" ", " ", " ", "  ", "\t", "\n", "\n", "\r", "\r\n", "\v", "\f", "\u0085", "\u00a0", "\u1680", "\u2000", "\u2028", "\u2029", "\u202f", "\u3000", "\u200b", "\ufeff", "\u180e",
	".", ",", "!", "?", "/", "//", "-", "_", "(", ")", "\"", "#", "@", "{", "}", "<|endoftext|>", "\x00", "\x1f", "\x7f", "\u00ad",
	"é", "É", "ß", "ſ", "ǅ", "ǈ", "ʰ", "ª", "Ω", "ω", "Ж", "ж", "日", "本", "語", "の", "ア", "한", "ㄱ", "ع", "ب", "ह", "ि", "्", "ก", "ั",
	"\u0301", "\u0308", "\u20dd", "\u0903", "🙂", "👍🏽", "👨‍👩‍👧", "🇫🇷", "\U0001d400", "\U0001d41a", "\U00010400", "\U00010428", "\U000e0001",
	"\xff", "\xc3", "\xed\xa0\x80", "\xf0\x9f", "\x80",
}

// randomText joins n draws from alphabet.
func randomText(r *rand.Rand, n int) string {
	var b strings.Builder
	for range n {
		b.WriteString(alphabet[r.IntN(len(alphabet))])
	}
	return b.String()
}

// specialTexts are hand-picked cases around each alternative.
var specialTexts = []string{
	"", "a", " ", "  ", "\n", "x \n \ny", "a  \n \n b", " \n \n \n", "\t\tfoo", "  a", "   ", "a   ", "a\u00a0b", "a\u2028b",
	"I'm", "I'M", "you're", "YOU'RE", "we'll", "WE'LL", "it's", "'sup", "'ſx", "aſ'ſ", "''s", "'", "a'", "x'lx", "x'l", "x're", "x'r",
	"HelloWorld", "HELLOworld", "helloWORLD", "ǅemal", "ǈubljana", "ÉCOLE'S", "École's", "a\u0301b", "\u0301\u0301a", " \u0301", "\u0301A",
	"A\u0301\u0301a", "ABCdef'LL", "ʰʰa", "ʰA", "!\u0301", "1234567", "12a34", "٣٣٣٣", "a.\n/x", "a./\n/\n/x", "x!!\r\n\r\n", " !?\n\n",
	"a\x7fb", "\x7f\x7f", " \x7f", "  \x7f", "\n\x7f", "a\xffb", "\xff\xfe", "\xed\xa0\x80", "caf\xc3", "\xef\xbf\xbd",
	"  leading and trailing spaces  \n\n\n  ", "func main() {\n\tfmt.Println(\"hi\")\n}\n", "日本語のテキスト。中文文本。",
}

func TestRefSplit(t *testing.T) {
	// refSplit is the library's split: every piece counts as itself, and
	// the pieces' counts sum to the library's count of the text.
	r := rand.New(rand.NewPCG(1, 2))
	texts := append([]string{tokenstest.Prose(3, 300)}, specialTexts...)
	for range 50 {
		texts = append(texts, randomText(r, 40))
	}
	for _, enc := range []Encoding{Cl100kBase, O200kBase} {
		codec := refCodecs()[enc]
		for _, s := range texts {
			sum := 0
			for _, p := range refSplit(enc, s) {
				if got := refSplit(enc, p); !slices.Equal(got, []string{p}) {
					t.Errorf("%s: the piece %q of %q splits as %q on its own", enc, p, s, got)
				}
				sum += refCount(enc, p)
			}
			if n, _ := codec.Count(s); n != sum {
				t.Errorf("%s: %q counts %d, its pieces %d", enc, s, n, sum)
			}
		}
	}
}

func checkSplit(t *testing.T, enc Encoding, s string) {
	t.Helper()
	got, want := split(enc, s), refSplit(enc, s)
	if !slices.Equal(got, want) {
		t.Fatalf("%s: %q splits as\n%q; the library's split is\n%q", enc, s, got, want)
	}
}

// TestPretokenizeMatches is the differential test: the pre-tokenizer
// and the library's split agree on hand-picked texts, on prose, on many
// random texts over alphabet, and on every rune below U+3400 and a
// stride through the rest, each in the contexts the patterns look at.
func TestPretokenizeMatches(t *testing.T) {
	texts := append([]string{}, specialTexts...)
	for seed := range uint64(3) {
		texts = append(texts, tokenstest.Prose(seed, 400))
	}
	texts = append(texts, string(tokenstest.NewChat("gpt-4o", 1).Body))
	random := 3000
	if raceEnabled {
		random = 300
	}
	r := rand.New(rand.NewPCG(7, 8))
	for range random {
		texts = append(texts, randomText(r, 1+r.IntN(60)))
	}
	for _, enc := range []Encoding{Cl100kBase, O200kBase} {
		for _, s := range texts {
			checkSplit(t, enc, s)
		}
	}
	// Every rune's class: one long text of probes, split at once.
	stride := rune(1)
	if raceEnabled || testing.Short() {
		stride = 97
	}
	var b strings.Builder
	for c := rune(0); c <= utf8.MaxRune; c += stride {
		if c >= 0x3400 && stride == 1 {
			c += 12 // beyond the scripts most edges are in, a stride
		}
		if !utf8.ValidRune(c) {
			continue
		}
		ch := string(c)
		b.WriteString("a" + ch + "b" + ch + ch + "A" + ch + "1" + ch + "'s " + ch + " !" + ch + "\n" + ch + "  " + ch + "\n")
	}
	for _, enc := range []Encoding{Cl100kBase, O200kBase} {
		checkSplit(t, enc, b.String())
	}
}

// FuzzPretokenize holds the pre-tokenizer to the library's split on any
// text.
func FuzzPretokenize(f *testing.F) {
	for _, s := range specialTexts {
		f.Add(s)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 20 {
		f.Add(randomText(r, 30))
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 4096 {
			return // the library's split is quadratic on some texts
		}
		checkSplit(t, Cl100kBase, s)
		checkSplit(t, O200kBase, s)
	})
}

// TestPretokenizeLinear: the texts that make the library's split
// quadratic are split in time linear in their length. The time is the
// splitting thread's own CPU time, so a busy machine does not fail it.
func TestPretokenizeLinear(t *testing.T) {
	for _, unit := range []string{" \n", " ", "\n", "a", "!", " \t\n", "\u00a0\u2028", "A\u0301"} {
		var per [2]float64
		for k, n := range []int{1 << 14, 1 << 18} {
			s := strings.Repeat(unit, n/len(unit))
			best := time.Duration(1 << 62)
			for range 3 {
				best = min(best, onCPU(func() {
					for _, o200k := range []bool{false, true} {
						for i := 0; i < len(s); {
							_, i = nextPiece(s, i, o200k)
						}
					}
				}))
			}
			per[k] = float64(best) / float64(len(s))
		}
		if per[1] > 4*per[0]+20 { // ns per byte; 16 times the text
			t.Errorf("%q: %.1f ns/byte at 16 kB, %.1f at 256 kB", unit, per[0], per[1])
		}
	}
}

// TestErrorModeDefault: the codecs run in the library's default error
// mode, in which its split sees each invalid byte as U+FFFD.
func TestErrorModeDefault(t *testing.T) {
	for _, enc := range []Encoding{Cl100kBase, O200kBase} {
		if m := codecs[enc.index()]().ErrorMode(); m != tokenizer.ErrorModeNone {
			t.Errorf("%s: error mode %v", enc, m)
		}
	}
}

// TestLongPieces: a piece longer than maxPiece is counted in chunks,
// within two tokens per cut of the library's count of it whole (the
// worst seen: 39 over 20 cuts for "!?" repeated, in o200k_base).
func TestLongPieces(t *testing.T) {
	c := NewCounter(0)
	for _, unit := range []string{"a", "ab", "xyz", "!", "!?", "=-", " ", " \t", "日本語", "北京是中华人民", "AB", "Ab", "é\u0301", "\u0301", "\n"} {
		unit = strings.NewReplacer(`\t`, "\t", `\u0301`, "\u0301", `\n`, "\n").Replace(unit)
		for _, n := range []int{maxPiece + 1, 3*maxPiece + 7, 20 * maxPiece} {
			s := strings.Repeat(unit, n/len(unit)+1)
			for _, enc := range []Encoding{Cl100kBase, O200kBase} {
				pieces := split(enc, s)
				cuts := 0
				for _, p := range pieces {
					cuts += (len(p) - 1) / maxPiece
				}
				if cuts == 0 {
					continue // the text did not make a long piece
				}
				got, want := c.Count(enc, s), refCount(enc, s)
				if got < want-2*cuts || got > want+2*cuts {
					t.Errorf("%s: %q × %d (%d cuts): %d tokens; the library counts %d", enc, unit, n/len(unit)+1, cuts, got, want)
				}
			}
		}
	}
}
