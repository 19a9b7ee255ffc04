package tokens

import (
	"slices"
	"testing"

	"github.com/sluice-gw/sluice/internal/wire/tokens/tokenstest"
)

func TestEncodingFor(t *testing.T) {
	for _, tc := range []struct {
		model string
		enc   Encoding
		exact bool
	}{
		{"gpt-4o", O200kBase, true},
		{"gpt-4o-mini", O200kBase, true},
		{"gpt-4o-2024-08-06", O200kBase, true},
		{"openai/gpt-4o", O200kBase, true},
		{"azure/openai/gpt-4o-mini", O200kBase, true},
		{"ft:gpt-4o-mini:org::id", O200kBase, true},
		{"ft:gpt-3.5-turbo:acme::abc123", Cl100kBase, true},
		{"gpt-4.1-nano", O200kBase, true},
		{"gpt-4.5-preview", O200kBase, true},
		{"gpt-5", O200kBase, true},
		{"chatgpt-4o-latest", O200kBase, true},
		{"o1", O200kBase, true},
		{"o3-mini", O200kBase, true},
		{"o4-mini", O200kBase, true},
		{"gpt-4", Cl100kBase, true},
		{"gpt-4-turbo", Cl100kBase, true},
		{"gpt-4-0613", Cl100kBase, true},
		{"gpt-3.5-turbo", Cl100kBase, true},
		{"gpt-35-turbo", Cl100kBase, true},
		{"text-embedding-3-small", Cl100kBase, true},
		{"text-embedding-ada-002", Cl100kBase, true},
		{"GPT-4O", O200kBase, true},
		{"OpenAI/GPT-4o-Mini", O200kBase, true},
		{"FT:GPT-4O-MINI:org::id", O200kBase, true},
		{"Gpt-3.5-Turbo", Cl100kBase, true},
		{"claude-3-5-sonnet", Approximate, false},
		{"claude-3-5-sonnet-20241022", Approximate, false},
		{"anthropic/claude-sonnet-4", Approximate, false},
		{"llama", Approximate, false},
		{"meta-llama/Llama-3.1-8B-Instruct", Approximate, false},
		{"mistral-large", Approximate, false},
		{"", Approximate, false},
		{"gpt", Approximate, false},
		{"o", Approximate, false},
		{"ft:", Approximate, false},
		{"x/", Approximate, false},
	} {
		enc, exact := EncodingFor(tc.model)
		if enc != tc.enc || exact != tc.exact {
			t.Errorf("EncodingFor(%q) = %s, %v; want %s, %v", tc.model, enc, exact, tc.enc, tc.exact)
		}
	}
	if Approximate != Cl100kBase {
		t.Errorf("Approximate is %s; the package comment says cl100k_base", Approximate)
	}
}

// TestKnownCounts holds counts published for these encodings (tiktoken's
// README and OpenAI's examples) and token ids, so a change of library
// that changed the vocabulary would show here.
func TestKnownCounts(t *testing.T) {
	c := NewCounter(0)
	for _, tc := range []struct {
		enc  Encoding
		text string
		want int
	}{
		{Cl100kBase, "tiktoken is great!", 6},
		{Cl100kBase, "hello world", 2},
		{O200kBase, "hello world", 2},
		{Cl100kBase, "", 0},
		{O200kBase, "", 0},
		{Cl100kBase, "antidisestablishmentarianism", 6},
		{Cl100kBase, "2 + 2 = 4", 7},
		{Cl100kBase, "お誕生日おめでとう", 9},
	} {
		for pass := range 2 {
			if got := c.Count(tc.enc, tc.text); got != tc.want {
				t.Errorf("%s pass %d: Count(%q) = %d; want %d", tc.enc, pass, tc.text, got, tc.want)
			}
		}
	}
	for enc, want := range map[Encoding][]uint{Cl100kBase: {15339, 1917}, O200kBase: {24912, 2375}} {
		ids, _, err := refCodecs()[enc].Encode("hello world")
		if err != nil || !slices.Equal(ids, want) {
			t.Errorf("%s: hello world encodes to %v, %v; want %v", enc, ids, err, want)
		}
	}
}

// TestCountMatchesEncode compares Count with the length of Encode's
// answer over text of every kind the pre-tokenizers split differently.
func TestCountMatchesEncode(t *testing.T) {
	texts := []string{
		tokenstest.Prose(7, 400),
		"  leading and trailing spaces  \n\n\n  ",
		"CamelCaseIdentifiers and snake_case_ones, 1234567890 3.14159 -42",
		"I'm, you're, they've, we'll, she'd, it's, DON'T, WE'LL",
		"func main() {\n\tfmt.Println(\"hi\")\n}\n",
		"日本語のテキスト。中文文本。한국어 텍스트. Русский текст. العربية. हिन्दी.",
		"emoji 🙂👍🏽👨‍👩‍👧 and symbols ∑∫√ ©®™",
		"\x00\x01\x7f control bytes, \u2028 line separator",
		"\xff\xfe invalid \xc3 UTF-8",
		"<|endoftext|> is not special here",
	}
	c := NewCounter(0)
	for _, enc := range []Encoding{O200kBase, Cl100kBase} {
		for _, s := range texts {
			if got, want := c.Count(enc, s), refCount(enc, s); got != want {
				t.Errorf("%s: Count(%.30q) = %d; Encode gives %d tokens", enc, s, got, want)
			}
		}
	}
}

// TestApproximateCountsHigh backs the choice of cl100k_base for models
// whose tokenizer is not embedded: on English prose the two encodings
// agree to within 1%, and on other scripts cl100k_base counts more.
func TestApproximateCountsHigh(t *testing.T) {
	c := NewCounter(0)
	prose := tokenstest.Prose(3, 2000)
	cl, o2 := c.Count(Cl100kBase, prose), c.Count(O200kBase, prose)
	if d := cl - o2; d*100 > o2 || -d*100 > o2 {
		t.Errorf("English prose: cl100k_base %d, o200k_base %d tokens; want within 1%%", cl, o2)
	}
	for _, s := range []string{
		"東京は日本の首都であり、世界で最も人口の多い都市圏の一つです。",
		"Москва является столицей России и крупнейшим городом страны.",
		"नई दिल्ली भारत की राजधानी है और एक बड़ा शहर है।",
		"القاهرة هي عاصمة مصر وأكبر مدنها من حيث عدد السكان.",
		"北京是中华人民共和国的首都，也是全国的政治和文化中心。",
		"서울은 대한민국의 수도이며 가장 큰 도시입니다.",
	} {
		if cl, o2 := c.Count(Cl100kBase, s), c.Count(O200kBase, s); cl <= o2 {
			t.Errorf("%.20q: cl100k_base %d tokens, o200k_base %d; want cl100k_base higher", s, cl, o2)
		}
	}
}

func TestPreload(t *testing.T) {
	Preload(O200kBase, Cl100kBase, Encoding("unknown")) // unknown: Approximate's codec
	if n := NewCounter(0).Count("unknown", "hello world"); n != 2 {
		t.Errorf("an unknown encoding counts hello world as %d tokens; want 2 (Approximate)", n)
	}
}
