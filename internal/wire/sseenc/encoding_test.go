package sseenc

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// Every single word, and the combinations the stream-encodings review
// ran (starlette is pydefault+crlf).
var encodings = append(Words(),
	"spaced+crlf", "pydefault+crlf", "pydefault+nospace", "pretty+noevent", "pretty+cr+comments",
	"shuffle+escaped+slashes+pydefault", "sortkeys+pretty+pydefault+idretry", "keepalive:250ms", "pings:1s+nodone",
	"nospace+oaievent+cr+idretry+comments+shuffle",
)

func TestParseRoundTripsEveryWordAndCombination(t *testing.T) {
	for _, s := range encodings {
		e, err := Parse(s)
		if err != nil {
			t.Fatalf("Parse(%q): %v", s, err)
		}
		back, err := Parse(e.String())
		if err != nil || back != e {
			t.Errorf("Parse(%q).String() = %q, which parses to %+v, %v; want %+v", s, e.String(), back, err, e)
		}
	}
	for _, s := range []string{"", "compact", " Compact "} {
		if e, err := Parse(s); err != nil || !e.IsCompact() || e.String() != "compact" {
			t.Errorf("Parse(%q) = %v, %v; want the compact default", s, e, err)
		}
	}
}

func TestParseRejectsWithTheValidWords(t *testing.T) {
	_, err := Parse("spaced+tabs")
	if err == nil || !strings.Contains(err.Error(), `"tabs"`) || !strings.Contains(err.Error(), strings.Join(Words(), ", ")) {
		t.Errorf("Parse(spaced+tabs) = %v; want an error naming the word and listing the valid ones", err)
	}
	for _, s := range []string{"compact+spaced", "sortkeys+shuffle", "crlf+cr", "noevent+oaievent", "spaced:2", "keepalive:0s", "keepalive:x", "keepalive:1s+pings:2s", "spaced++crlf"} {
		if _, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) accepted", s)
		}
	}
	e := MustParse("pings:250ms+keepalive")
	if c, p := e.Keepalive(); !c || !p || e.KeepaliveEvery().String() != "250ms" {
		t.Errorf("pings:250ms+keepalive: Keepalive() = %v, %v every %v", c, p, e.KeepaliveEvery())
	}
	e = MustParse("nodone+noping+usagelast")
	if !e.NoDone() || !e.NoPing() || !e.UsageLast() || e.IsCompact() {
		t.Errorf("nodone+noping+usagelast: %+v", e)
	}
}

// The compact default writes today's bytes exactly.
func TestCompactIsTheDataAsGiven(t *testing.T) {
	s := Encoding{}.Stream(nil)
	data := `{"b":1,"a":"x\u003cy/é"}`
	got := string(s.AppendEvent(nil, "", []byte(data)))
	got = string(s.AppendEvent([]byte(got), "message_stop", []byte(data)))
	got = string(s.AppendEvent([]byte(got), "", []byte("[DONE]")))
	want := "data: " + data + "\n\n" + "event: message_stop\ndata: " + data + "\n\n" + "data: [DONE]\n\n"
	if got != want {
		t.Errorf("compact:\n got %q\nwant %q", got, want)
	}
}

// What each word does to the bytes, on one event.
func TestEachWordsBytes(t *testing.T) {
	data := `{"type":"content_block_delta","delta":{"text":"é😀 a/b","n":[1,2]},"index":0}`
	for _, c := range []struct {
		enc       string
		has, hasn []string
	}{
		{"spaced", []string{`{"type": "content_block_delta", "delta": {"text": "é😀 a/b", "n": [1, 2]}, "index": 0}`}, nil},
		{"pydefault", []string{`"text": "\u00e9\ud83d\ude00 a/b"`}, []string{"é"}},
		{"pretty", []string{"data: {\ndata:   \"type\": \"content_block_delta\",\ndata:   \"delta\": {\ndata:     \"text\"", "data:     \"n\": [\ndata:       1,\n", "data: }\n\n"}, nil},
		{"sortkeys", []string{`{"delta":{"n":[1,2],"text":"é😀 a/b"},"index":0,"type":"content_block_delta"}`}, nil},
		{"escaped", []string{`"\u0074\u0079\u0070\u0065":"\u0063\u006f`, `"\u0074\u0065\u0078\u0074":"é😀 \u0061/\u0062"`}, nil},
		{"slashes", []string{`a\/b`}, nil},
		{"crlf", []string{"event: x\r\ndata: {\"type\"", "}\r\n\r\n"}, []string{"}\n\n"}},
		{"cr", []string{"event: x\rdata: {", "}\r\r"}, []string{"\n"}},
		{"nospace", []string{"event:x\ndata:{\"type\""}, nil},
		{"idretry", []string{"retry: 3000\nevent: x\nid: 1\ndata: "}, nil},
		{"noevent", []string{"data: {"}, []string{"event:"}},
	} {
		got := string(MustParse(c.enc).Stream(nil).AppendEvent(nil, "x", []byte(data)))
		for _, h := range c.has {
			if !strings.Contains(got, h) {
				t.Errorf("%s: %q lacks %q", c.enc, got, h)
			}
		}
		for _, h := range c.hasn {
			if strings.Contains(got, h) {
				t.Errorf("%s: %q has %q", c.enc, got, h)
			}
		}
	}
	oai := string(MustParse("oaievent").Stream(nil).AppendEvent(nil, "", []byte(`{}`)))
	if oai != "event: message\ndata: {}\n\n" {
		t.Errorf("oaievent: %q", oai)
	}
	st := MustParse("comments+idretry").Stream(nil)
	var b []byte
	for range 3 {
		b = st.AppendEvent(b, "", []byte(`1`))
	}
	if want := "retry: 3000\nid: 1\ndata: 1\n\n: keepalive\n\nid: 2\ndata: 1\n\n:processing\nid: 3\ndata: 1\n\n"; string(b) != want {
		t.Errorf("comments+idretry:\n got %q\nwant %q", b, want)
	}
	// A nospace value that starts with a space keeps the separator.
	if got := string(MustParse("nospace").Stream(nil).AppendEvent(nil, " x", []byte(" [DONE]"))); got != "event:  x\ndata:  [DONE]\n\n" {
		t.Errorf("nospace with leading spaces: %q", got)
	}
}

func TestShuffleIsSeededAndVaries(t *testing.T) {
	data := []byte(`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6}`)
	write := func(seed uint64) string {
		s := MustParse("shuffle").Stream(rand.New(rand.NewPCG(seed, 1)))
		var b []byte
		for range 8 {
			b = s.AppendEvent(b, "", data)
		}
		return string(b)
	}
	one := write(1)
	if one != write(1) {
		t.Error("the same seed wrote different bytes")
	}
	if one == write(2) {
		t.Error("two seeds wrote the same key orders")
	}
	evs, _ := Decode(one)
	orders := map[string]bool{}
	for _, ev := range evs {
		orders[ev.Data] = true
	}
	if len(orders) < 4 {
		t.Errorf("8 events in only %d key orders: %v", len(orders), orders)
	}
}

// The property: under every encoding, each event decodes (by the SSE
// specification, then encoding/json) to exactly the value it was given,
// with its name, for random JSON values.
func TestEveryEncodingKeepsEveryValue(t *testing.T) {
	rnd := rand.New(rand.NewPCG(29, 12))
	var values [][]byte
	for range 300 {
		values = append(values, randomJSON(rnd, 0))
	}
	values = append(values, []byte(`{"a":1,"a":{"b":2}}`), []byte(` [ 1e3 , -0.5,0E-0 ] `), []byte(`"\ud800\u00e9\/"`), []byte(`{"x":"\u2028\u0000"}`))
	for _, s := range encodings {
		e := MustParse(s)
		st := e.Stream(rand.New(rand.NewPCG(1, 2)))
		var b []byte
		names := []string{}
		for i, v := range values {
			name := []string{"", "content_block_delta", "message"}[i%3]
			names = append(names, name)
			b = st.AppendEvent(b, name, v)
		}
		b = st.AppendEvent(b, "", []byte("[DONE]"))
		evs, _ := Decode(string(b))
		if len(evs) != len(values)+1 || evs[len(values)].Data != "[DONE]" {
			t.Fatalf("%s: %d events, want %d ending in [DONE]", s, len(evs), len(values)+1)
		}
		for i, v := range values {
			var want, got any
			if err := json.Unmarshal(v, &want); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(evs[i].Data), &got); err != nil {
				t.Fatalf("%s: event %d does not decode: %v\n%q", s, i, err, evs[i].Data)
			}
			if !reflect.DeepEqual(want, got) {
				t.Fatalf("%s: event %d\n in  %s\n out %s", s, i, v, evs[i].Data)
			}
			wantName := names[i]
			switch {
			case e.noEvent:
				wantName = ""
			case e.oaiEvent && wantName == "":
				wantName = "message"
			}
			if evs[i].Name != wantName {
				t.Fatalf("%s: event %d named %q, want %q", s, i, evs[i].Name, wantName)
			}
		}
	}
}

// randomJSON is a JSON value written with varied spacing and escapes,
// as an upstream might: nested containers, numbers in every form,
// unicode inside and beyond the BMP, escapes of every kind.
func randomJSON(r *rand.Rand, depth int) []byte {
	ws := func() string { return []string{"", "", " ", "\n  ", "\t"}[r.IntN(5)] }
	k := r.IntN(8)
	if depth > 3 {
		k = r.IntN(4)
	}
	switch k {
	case 0:
		return []byte([]string{"1e3", "-0.5", "0", "-0", "12345678901234567890123", "1E-7", "3.25e+2", "42"}[r.IntN(8)])
	case 1:
		return []byte([]string{"true", "false", "null"}[r.IntN(3)])
	case 2, 3:
		return []byte(randomString(r))
	case 4, 5:
		var b strings.Builder
		b.WriteString("[" + ws())
		for i := range r.IntN(4) {
			if i > 0 {
				b.WriteString("," + ws())
			}
			b.Write(randomJSON(r, depth+1))
		}
		b.WriteString(ws() + "]")
		return []byte(b.String())
	}
	var b strings.Builder
	b.WriteString("{" + ws())
	for i := range r.IntN(5) {
		if i > 0 {
			b.WriteString(ws() + "," + ws())
		}
		fmt.Fprintf(&b, "%s%s:%s", randomString(r), ws(), ws())
		b.Write(randomJSON(r, depth+1))
	}
	b.WriteString(ws() + "}")
	return []byte(b.String())
}

func randomString(r *rand.Rand) string {
	parts := []string{"a", "type", "content", " ", "é", "😀", "/", `\/`, `\"`, `\\`, `\n`, `\r\n`, `\t`, `\u00e9`, `\ud83d\ude00`, `\u0041`, `\u001f`, "\u2028", "日本", `data: [DONE]`, `</script>`, `\b\f`}
	var b strings.Builder
	b.WriteByte('"')
	for range r.IntN(6) {
		b.WriteString(parts[r.IntN(len(parts))])
	}
	b.WriteByte('"')
	return b.String()
}
