package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// seeds adds every golden input under dir as a seed, with each flag.
func seeds(f *testing.F, glob string, add func(in []byte)) {
	paths, _ := filepath.Glob(filepath.Join("testdata", glob))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		add(b)
	}
}

// FuzzTranslateRequest: any body, either direction, is refused with an
// *Error or translated into JSON that re-parses. What OpenAI → Anthropic
// writes always translates back; the other way may be refused (an
// Anthropic body may hold a temperature OpenAI-to-Anthropic refuses),
// but never panics.
func FuzzTranslateRequest(f *testing.F) {
	seeds(f, "requests/*/*.in.json", func(b []byte) { f.Add(b, true); f.Add(b, false) })
	f.Fuzz(func(t *testing.T, body []byte, toAnthropic bool) {
		opts := Options{}
		if len(body) > 0 && body[0]&1 == 1 {
			opts.Drop = []string{"*"}
		}
		res, err := translateTo(toAnthropic, string(body), opts)
		if err != nil {
			var te *Error
			if !errors.As(err, &te) || !(errors.Is(err, ErrInvalid) || errors.Is(err, ErrUntranslatable)) {
				t.Fatalf("error %v is not a translate *Error", err)
			}
			return
		}
		var v map[string]any
		if err := json.Unmarshal(res.Body, &v); err != nil {
			t.Fatalf("output does not re-parse: %v\n%s", err, res.Body)
		}
		if _, err := json.Marshal(v); err != nil {
			t.Fatalf("output does not re-serialise: %v", err)
		}
		back, err := translateTo(!toAnthropic, string(res.Body), Options{})
		if toAnthropic && err != nil {
			t.Fatalf("Sluice's own Anthropic body does not translate back: %v\nin:  %s\nout: %s", err, body, res.Body)
		}
		if err == nil && !json.Valid(back.Body) {
			t.Fatalf("round trip is not JSON: %s", back.Body)
		}
	})
}

// FuzzStream feeds arbitrary events to both stream translators. Whatever
// comes in, what goes out is a well-formed stream in the client's dialect
// as far as it goes; it ends with its terminator only if Close says the
// stream ended whole, and with an error event only if Close says so.
func FuzzStream(f *testing.F) {
	seeds(f, "streams/*/*.in.sse", func(b []byte) { f.Add(b) })
	f.Fuzz(func(t *testing.T, data []byte) {
		events, _ := ParseEvents(data)
		checkStream(t, NewStreamToOpenAI(StreamConfig{IncludeUsage: len(data)%2 == 0, Created: 1}), protocol.OpenAI, events)
		checkStream(t, NewStreamToAnthropic(), protocol.Anthropic, events)
	})
}

func checkStream(t *testing.T, s Stream, client protocol.Dialect, events []Event) {
	t.Helper()
	var out []Event
	var feedErr error
	for _, ev := range events {
		o, err := s.Feed(ev)
		if feedErr != nil && (o != nil || err == nil) {
			t.Fatalf("Feed after an error returned %v, %v", o, err)
		}
		if err != nil {
			if !errors.Is(err, ErrResponse) {
				t.Fatalf("Feed error %v is not ErrResponse", err)
			}
			feedErr = err
			continue
		}
		for _, e := range o {
			if !bytes.Equal(e.Data, doneData) && !json.Valid(e.Data) {
				t.Fatalf("emitted data is not JSON: %q", e.Data)
			}
		}
		out = append(out, o...)
	}
	closeErr := s.Close()
	var a answer
	var err error
	if client == protocol.OpenAI {
		a, err = openAIAnswer(out)
	} else {
		a, err = anthropicAnswer(out)
	}
	if err != nil {
		t.Fatalf("%s output is not well-formed: %v\n%s", client, err, Encode(out))
	}
	check := protocol.NewStreamCheck(client)
	if _, ok, _ := check.Feed(Encode(out)); !ok {
		t.Fatalf("StreamCheck: malformed\n%s", Encode(out))
	}
	verdict := check.End()
	switch {
	case closeErr == nil:
		if !a.Terminated || verdict != protocol.StreamOK {
			t.Fatalf("Close nil but terminated=%v verdict=%q", a.Terminated, verdict)
		}
	case errors.Is(closeErr, ErrStreamFailed):
		if !a.Errored || verdict != protocol.StreamErrorEvent {
			t.Fatalf("ErrStreamFailed but errored=%v verdict=%q", a.Errored, verdict)
		}
	default:
		if a.Terminated || a.Errored {
			t.Fatalf("Close %v but the output ended (terminated=%v errored=%v)", closeErr, a.Terminated, a.Errored)
		}
	}
}

// FuzzStreamSequence explores orders rather than bytes: each input byte
// picks the next event from every recorded stream's events (both
// dialects), so repeats, omissions, swaps and cuts of real events reach
// the translators' deeper states, which random bytes seldom do.
func FuzzStreamSequence(f *testing.F) {
	var vocab []Event
	paths, _ := filepath.Glob(filepath.Join("testdata", "streams", "*", "*.in.sse"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		evs, _ := ParseEvents(b)
		vocab = append(vocab, evs...)
	}
	if len(vocab) == 0 {
		f.Fatal("no recorded streams")
	}
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14})
	f.Add([]byte{15, 16, 17, 18, 19, 20, 21, 22})
	f.Fuzz(func(t *testing.T, script []byte) {
		events := make([]Event, len(script))
		for i, b := range script {
			events[i] = vocab[int(b)%len(vocab)]
		}
		checkStream(t, NewStreamToOpenAI(StreamConfig{IncludeUsage: true}), protocol.OpenAI, events)
		checkStream(t, NewStreamToAnthropic(), protocol.Anthropic, events)
	})
}
