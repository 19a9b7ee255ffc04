package lifecycle

import "strings"

// SpliceOverlap decides how much of a continuation's first text, next,
// repeats the answer so far, sofar, and is to be trimmed: a model asked
// to go on from a text may repeat it whole from its start, or repeat its
// last words, and the client must get every word once. The repeat may be
// of any length, so the decision waits (decided false) while next could
// still be the start of one: while it is a prefix of sofar from one of
// its word starts, and shorter than what follows that start. Once next
// has outgrown or left every such repeat, k is the longest repeat
// (Overlap); final says no more text is coming, so it decides on what
// there is.
func SpliceOverlap(sofar, next string, final bool) (k int, decided bool) {
	if !final {
		for i := 0; i < len(sofar); i++ {
			if i > 0 && !isSpace(sofar[i-1]) {
				continue
			}
			if rest := sofar[i:]; len(next) < len(rest) && strings.HasPrefix(rest, next) {
				return 0, false
			}
		}
	}
	return Overlap(sofar, next), true
}
