package sseenc

import (
	"reflect"
	"testing"
)

// Decode against the specification's rules, written out by hand.
func TestDecodeFollowsTheSpecification(t *testing.T) {
	stream := "retry: 10\r\n" +
		": a comment\n" +
		"event: one\rdata: a\r\ndata:b\ndata:  c\n\n" + // CR, CRLF, LF; one space dropped, not two
		"data\n\n" + // a field with no colon: empty data, still an event
		"event: lost\n\n" + // no data: nothing dispatched, and the name is reset
		"id: 7\ndata: {\"x\":1}\r\r" +
		"data: never ended"
	evs, comments := Decode(stream)
	want := []Event{{Name: "one", Data: "a\nb\n c"}, {Data: ""}, {Data: `{"x":1}`, ID: "7"}}
	if !reflect.DeepEqual(evs, want) || comments != 1 {
		t.Errorf("Decode:\n got %q, %d comments\nwant %q, 1", evs, comments, want)
	}
}
