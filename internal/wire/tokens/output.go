package tokens

import "unicode/utf8"

// Output counts what a model generated, for a host that cuts an answer
// at its output limit and bills what it relayed. Two rules, by what is
// known of the model:
//
//   - A model whose encoding is embedded (EncodingFor's exact) is
//     counted in it, as the provider counts: an answer that keeps to
//     max_tokens counts at most max_tokens, and one that does not is
//     cut within a token of its limit.
//   - Any other model's tokenizer is not known, and Approximate can
//     count its text higher than it does (a larger vocabulary needs
//     fewer tokens for most non-English text, and a mock of one word a
//     token fewer still), which would cut an answer that kept to its
//     cap. Its count is a floor instead: a token for each pre-tokenizer
//     piece (a word with its leading space, a run of digits, of
//     punctuation or of whitespace), which every subword tokenizer
//     spends at least one token on, or a token for each floorBytes bytes
//     (several times any tokenizer's average), whichever is more. The
//     same rule as a stream's count of a token an event: never more
//     than an honest provider generates, and an answer that ignores its
//     cap cannot pass it by much.
//
// Texts are counted in the order they were generated, and at most
// MaxExactBytes of one answer's text are tokenized: past that, its
// texts are counted by the floor, so an answer costs CPU linear in its
// size and at most that of 1 MiB of new text, as Request does. An
// Output is not safe for concurrent use; Close returns what it holds.
type Output struct {
	c          *Counter
	enc        encIndex
	exact      bool
	floorBytes int
	left       int // bytes still to tokenize exactly
	memo       *memo
}

// Output returns the counter of one answer of upstream model model.
// floorBytes is the floor's bytes a token (at least 1).
func (c *Counter) Output(model string, floorBytes int) *Output {
	enc, exact := EncodingFor(model)
	return &Output{c: c, enc: enc.index(), exact: exact, floorBytes: max(floorBytes, 1), left: MaxExactBytes}
}

// Exact reports whether texts are counted in the model's own encoding.
func (o *Output) Exact() bool { return o.exact }

// Close gives back the Output's memo; the Output is not used after.
func (o *Output) Close() {
	if o.memo != nil {
		memos.Put(o.memo)
		o.memo = nil
	}
}

// Prefix returns the longest prefix of text that counts at most most
// tokens, and its count: text itself, with its whole count, when that
// is at most most. The prefix ends where a pre-tokenizer piece ends, or
// one of a long piece's 1 KiB chunks (the units Count sums), and a BPE
// token never spans two: the prefix is a whole number of the text's
// tokens. Counted by the floor, a piece longer than what is left of
// most's bytes is cut inside, at a rune boundary. Text that is not
// valid UTF-8 is counted and cut as its runes are read (each invalid
// byte a U+FFFD), so the prefix is valid UTF-8 either way.
func (o *Output) Prefix(text string, most int) (string, int) {
	text = validUTF8(text)
	most = max(most, 0)
	if !o.exact || len(text) > o.left {
		return floorPrefix(text, most, o.floorBytes)
	}
	o.left -= len(text)
	if o.memo == nil {
		o.memo = memos.Get().(*memo)
		clear(o.memo[:])
	}
	return o.c.exactPrefix(o.enc, text, most, o.memo)
}

// exactPrefix is Prefix in encoding e, for valid UTF-8 text: the pieces
// and chunks countPieces counts, taken while they fit.
func (c *Counter) exactPrefix(e encIndex, s string, most int, m *memo) (string, int) {
	o200k := e == encO200k
	n := 0
	for i := 0; i < len(s); {
		start, end := nextPiece(s, i, o200k)
		if start == end {
			break
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
			k := c.countPiece(e, chunk, m)
			if n+k > most {
				return s[:at], n
			}
			n += k
			at += len(chunk)
		}
		i = end
	}
	return s, n
}

// floorPrefix is Prefix by the floor (see Output), for valid UTF-8 text,
// in cl100k_base's pieces: with p pieces and b bytes taken, the count is
// max(p, ⌈b/per⌉).
func floorPrefix(s string, most, per int) (string, int) {
	count := func(p, b int) int { return max(p, (b+per-1)/per) }
	p, i := 0, 0
	for i < len(s) {
		start, end := nextPiece(s, i, false)
		if start == end {
			break
		}
		if count(p+1, end) <= most {
			p, i = p+1, end
			continue
		}
		if p+1 > most {
			return s[:start], count(p, start)
		}
		// The piece's bytes passed most (most*per < end): the part of it
		// within them fits, cut at the last rune boundary.
		cut := most * per
		for cut > start && !utf8.RuneStart(s[cut]) {
			cut--
		}
		if cut > start {
			return s[:cut], count(p+1, cut)
		}
		return s[:start], count(p, start)
	}
	if count(p, len(s)) > most {
		return s[:i], count(p, i) // what no piece holds (DEL) passed it
	}
	return s, count(p, len(s))
}
