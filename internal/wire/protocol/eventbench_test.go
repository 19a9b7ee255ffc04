package protocol

import (
	"bytes"
	"strings"
	"testing"
)

// benchStream is a recorded stream with its text events repeated to
// about a hundred, so that the head and tail weigh as in a real answer.
func benchStream(b testing.TB, i int) []byte {
	rec := string(loadRecorded(b, i))
	events := strings.SplitAfter(rec, "\n\n")
	var out strings.Builder
	for _, ev := range events {
		out.WriteString(ev)
		if strings.Contains(ev, `"content":"Hello"`) || strings.Contains(ev, `"text":"Hello"`) {
			for range 88 {
				out.WriteString(ev)
			}
		}
	}
	return []byte(out.String())
}

// spacedStream is s as Python's json.dumps writes it.
func spacedStream(s []byte) []byte {
	s = bytes.ReplaceAll(s, []byte(`":`), []byte(`": `))
	return bytes.ReplaceAll(s, []byte(`,"`), []byte(`, "`))
}

func countEvents(s []byte) int { return bytes.Count(s, []byte("\n\n")) }

// The benchmarks feed a whole stream in 4 KiB reads and report the cost
// per event (BenchmarkStreamRead runs on the tree before the event reader
// too, for the figures beside it in docs/BENCHMARKS.md).
func benchStreams(b *testing.B, run func(b *testing.B, d Dialect, stream []byte)) {
	for _, c := range []struct {
		name string
		i    int
		d    Dialect
	}{{"openai", 0, OpenAI}, {"anthropic", 2, Anthropic}} {
		s := benchStream(b, c.i)
		b.Run(c.name, func(b *testing.B) { run(b, c.d, s) })
		b.Run(c.name+"-spaced", func(b *testing.B) { run(b, c.d, spacedStream(s)) })
	}
}

func feedChunks(s []byte, feed func([]byte)) {
	for i := 0; i < len(s); i += 4096 {
		feed(s[i:min(i+4096, len(s))])
	}
}

func perEvent(b *testing.B, s []byte) {
	b.SetBytes(int64(len(s)))
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(countEvents(s)), "ns/event")
}

func BenchmarkEventParseStreamCheck(b *testing.B) {
	benchStreams(b, func(b *testing.B, d Dialect, s []byte) {
		b.ReportAllocs()
		for b.Loop() {
			c := NewStreamCheck(d)
			feedChunks(s, func(p []byte) { c.Feed(p) })
			if c.End() != StreamOK {
				b.Fatal("not ok")
			}
			c.Release()
		}
		perEvent(b, s)
	})
}

func BenchmarkEventParseStreamUsage(b *testing.B) {
	benchStreams(b, func(b *testing.B, d Dialect, s []byte) {
		b.ReportAllocs()
		for b.Loop() {
			u := NewStreamUsage(Endpoint{}, d)
			feedChunks(s, u.Write)
			u.Tokens()
			u.Release()
		}
		perEvent(b, s)
	})
}

// BenchmarkEventParse is the parser alone on one text event's data.
func BenchmarkEventParse(b *testing.B) {
	for _, c := range []struct {
		name, data string
		d          Dialect
	}{
		{"openai", `{"id":"chatcmpl-9x","object":"chat.completion.chunk","created":1733570000,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":" word"},"logprobs":null,"finish_reason":null}]}`, OpenAI},
		{"anthropic", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" word"}}`, Anthropic},
	} {
		b.Run(c.name, func(b *testing.B) {
			var p EventParser
			var ev Event
			data := []byte(c.data)
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				p.Parse(c.d, false, nil, data, &ev)
			}
			if string(ev.Text) != " word" {
				b.Fatalf("text %q", ev.Text)
			}
		})
	}
}

// An untranslated stream's events cost no allocation once its buffers
// are warm: the check's, the meter's and StreamHead's.
func TestEventReaderAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector empties pools at random; .ci/run checks allocations without it")
	}
	for _, c := range []struct {
		name string
		i    int
		d    Dialect
		ev   string
	}{
		{"openai", 0, OpenAI, "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" word\"},\"finish_reason\":null}]}\n\n"},
		{"anthropic", 2, Anthropic, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" word\"}}\n\n"},
	} {
		s, ev := loadRecorded(t, c.i), []byte(c.ev)
		ch := NewStreamCheck(c.d)
		var text []byte
		ch.CaptureText(&text)
		u := NewStreamUsage(Endpoint{}, c.d)
		half := bytes.LastIndex(s[:len(s)/2], []byte("\n\n")) + 2 // an event's end
		ch.Feed(s[:half])
		u.Write(s[:half])
		text = make([]byte, 0, 1<<20)
		if n := testing.AllocsPerRun(200, func() {
			if _, ok, _ := ch.Feed(ev); !ok {
				t.Fatal("not ok")
			}
			u.Write(ev)
		}); n != 0 {
			t.Errorf("%s: %v allocations per event", c.name, n)
		}
		if n := testing.AllocsPerRun(100, func() { StreamHead(c.d, s) }); n != 0 {
			t.Errorf("%s: StreamHead allocates %v times", c.name, n)
		}
		if n, _ := u.Tokens(); n < 200 || ch.Facts().Deltas < 200 || len(text) < 1000 {
			t.Errorf("%s: %d tokens, %d deltas, %d text bytes", c.name, n, ch.Facts().Deltas, len(text))
		}
	}
}

// FuzzEventValidity holds the tokenizer to JSONScanner's judgement:
// an event's data is invalid exactly when the scanner (which judges
// events past MaxEventData) would say so.
func FuzzEventValidity(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":1} x`, `[`, ` `, `{"a":"\u00e9\ud800"}`, "\"\xff\"", `{"a":1,"a":2}`,
		strings.Repeat("[", 600) + strings.Repeat("]", 600), `{"choices":[{"delta":{"content":"x"}}]}`, `1e5`, `-0.5`, `01`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		trimmed := bytes.TrimSpace(data)
		if len(data) == 0 || bytes.Equal(trimmed, doneData) {
			return
		}
		var p EventParser
		var ev Event
		var s JSONScanner
		valid := s.Write(data) && s.Done()
		for _, d := range []Dialect{OpenAI, Anthropic} {
			p.Parse(d, false, nil, data, &ev)
			if ev.Invalid == valid {
				t.Fatalf("%q: parser invalid %v, scanner valid %v", data, ev.Invalid, valid)
			}
		}
	})
}
