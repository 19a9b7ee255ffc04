package grammar

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// Frame against the specification's rules, written out by hand.
func TestGrammarFrameFollowsTheSpecification(t *testing.T) {
	stream := "\xef\xbb\xbfretry: 10\r\n" + // a byte order mark, then a field Frame reads and leaves
		": a comment\n" +
		"event: one\rdata: a\r\ndata:b\ndata:  c\n\n" + // CR, CRLF, LF; one space dropped, not two
		"data\n\n" + // a field with no colon: empty data, still an event
		"event: lost\n\n" + // no data: nothing dispatched, and the name is reset
		"id: 7\ndata: {\"x\":1}\r\r" + // a lone CR's blank line
		"event:\ndata: named\n\n" + // an empty event: field is still a field
		":last comment without a line end"
	evs, err := Frame([]byte(stream))
	if err != nil {
		t.Fatal(err)
	}
	for i := range evs {
		evs[i].Offset = 0
	}
	want := []Event{
		{Index: 0, Name: "one", Named: true, Data: "a\nb\n c"},
		{Index: 1, Data: ""},
		{Index: 2, Data: `{"x":1}`},
		{Index: 3, Named: true, Data: "named"},
	}
	if !reflect.DeepEqual(evs, want) {
		t.Errorf("Frame:\n got %+v\nwant %+v", evs, want)
	}
}

// The same events in every line end and field spelling frame alike.
func TestGrammarFrameLineEndsAndSpacing(t *testing.T) {
	base := "event: message_start\ndata: {\"a\":\ndata: 1}\n\n: ping\n\ndata: [DONE]\n\n"
	want, err := Frame([]byte(base))
	if err != nil || len(want) != 2 || want[0].Data != "{\"a\":\n1}" {
		t.Fatalf("Frame(base) = %+v, %v", want, err)
	}
	for name, s := range map[string]string{
		"crlf":    strings.ReplaceAll(base, "\n", "\r\n"),
		"cr":      strings.ReplaceAll(base, "\n", "\r"),
		"nospace": strings.ReplaceAll(strings.ReplaceAll(base, "data: ", "data:"), "event: ", "event:"),
	} {
		got, err := Frame([]byte(s))
		if err != nil || len(got) != len(want) {
			t.Errorf("%s: %+v, %v", name, got, err)
			continue
		}
		for i := range got {
			if got[i].Name != want[i].Name || got[i].Data != want[i].Data || got[i].Named != want[i].Named {
				t.Errorf("%s: event %d is %+v, want %+v", name, i, got[i], want[i])
			}
		}
	}
}

// An event the stream does not end with its blank line is one a reader
// drops: a violation of its own, at the index the event would have had.
func TestGrammarFrameUnendedEvent(t *testing.T) {
	for _, s := range []string{
		"data: {}\n\ndata: [DONE]\n",       // no blank line
		"data: {}\n\ndata: [DONE]",         // no line end at all
		"data: {}\r\n\r\ndata: [DONE]\r\n", // CRLF, one line end
	} {
		_, err := Frame([]byte(s))
		var v *Violation
		if !errors.As(err, &v) || v.Rule != RuleFraming || v.Index != 1 {
			t.Errorf("Frame(%q) = %v; want a %s violation at event 1", s, err, RuleFraming)
		}
	}
	if _, err := Frame([]byte("data: {}\n\n: trailing comment")); err != nil {
		t.Errorf("a trailing comment without its line end loses nothing: %v", err)
	}
}
