package lifecycle

import "testing"

func TestSpliceOverlap(t *testing.T) {
	const sofar = "one two three four"
	cases := []struct {
		name, next string
		final      bool
		k          int
		decided    bool
	}{
		{"goes straight on", " five", false, 0, true},
		{"a whole repeat, still coming", "one two", false, 0, false},
		{"a whole repeat, then more", "one two three four five", false, len(sofar), true},
		{"a whole repeat, exactly, at the end", "one two three four", true, len(sofar), true},
		{"the last words again", "three four five", false, len("three four"), true},
		{"the last word again, still coming", "fou", false, 0, false},
		{"a word that only starts like the tail", "thr33", false, 0, true},
		{"inside a word is no repeat", "our six", false, 0, true},
		{"held text, the stream ends", "two thr", true, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k, decided := SpliceOverlap(sofar, c.next, c.final)
			if k != c.k || decided != c.decided {
				t.Errorf("SpliceOverlap(%q, %q, %v) = %d, %v; want %d, %v", sofar, c.next, c.final, k, decided, c.k, c.decided)
			}
		})
	}
}
