package translate

import (
	"reflect"
	"testing"
)

func TestParseEvents(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []Event
		n    int
	}{
		{"named and unnamed", "event: a\ndata: {\"x\":1}\n\ndata: [DONE]\n\n",
			[]Event{{"a", []byte(`{"x":1}`)}, {"", []byte("[DONE]")}}, 38},
		{"partial event kept back", "data: 1\n\ndata: 2\n",
			[]Event{{"", []byte("1")}}, 9},
		{"CRLF, comments, other fields, no space after colon", ": hi\r\nid: 7\r\nevent:ping\r\ndata:{}\r\n\r\n",
			[]Event{{"ping", []byte("{}")}}, 36},
		{"multi-line data", "data: {\"a\":\ndata: 1}\n\n",
			[]Event{{"", []byte("{\"a\":\n1}")}}, 22},
		{"comment-only event skipped", ": keepalive\n\n", nil, 13},
		{"CR at the end ends the event", "data: 1\r\n\r", []Event{{"", []byte("1")}}, 10},
		{"CR line ends", "data: 1\r\r", []Event{{"", []byte("1")}}, 9},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, n := ParseEvents([]byte(tc.in))
			if !reflect.DeepEqual(got, tc.want) || n != tc.n {
				t.Errorf("got %q, %d; want %q, %d", got, n, tc.want, tc.n)
			}
		})
	}
}

func TestEncodeParses(t *testing.T) {
	events := []Event{{"message_start", []byte(`{"type":"message_start"}`)}, {"", []byte("line1\nline2")}, {"", []byte("[DONE]")}}
	wire := Encode(events)
	got, n := ParseEvents(wire)
	if !reflect.DeepEqual(got, events) || n != len(wire) {
		t.Errorf("Encode → ParseEvents: %q", got)
	}
}
