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

// FuzzResponsesToChat: any body is refused with an *Error, or translated
// into a chat request that re-parses, keeps the model, holds a message,
// streams when asked to (with usage), and goes on to the chat →
// Anthropic translation, which takes it or refuses it with an *Error.
func FuzzResponsesToChat(f *testing.F) {
	seeds(f, "responsesapi/requests/*.in.json", func(b []byte) { f.Add(b) })
	for _, tc := range responsesRefusals {
		f.Add([]byte(tc.body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var opts Options
		if len(body) > 0 {
			opts.Unsupported = Unsupported(body[len(body)-1] % 3)
		}
		res, err := ResponsesToChat(body, opts)
		if err != nil {
			var te *Error
			if !errors.As(err, &te) || !(errors.Is(err, ErrInvalid) || errors.Is(err, ErrUntranslatable)) {
				t.Fatalf("error %v is not a translate *Error", err)
			}
			return
		}
		var in map[string]json.RawMessage
		if err := json.Unmarshal(body, &in); err != nil {
			t.Fatalf("translated a body that is not a JSON object: %v", err)
		}
		var chat struct {
			Model         string            `json:"model"`
			Messages      []json.RawMessage `json:"messages"`
			Stream        bool              `json:"stream"`
			StreamOptions *oaStreamOptions  `json:"stream_options"`
		}
		if err := json.Unmarshal(res.Body, &chat); err != nil {
			t.Fatalf("output does not re-parse: %v\n%s", err, res.Body)
		}
		if model, _ := decodeString(in["model"]); chat.Model != model {
			t.Fatalf("model %q became %q", model, chat.Model)
		}
		if len(chat.Messages) == 0 {
			t.Fatalf("no messages: %s", res.Body)
		}
		if chat.Stream != res.Stream || res.Stream && (chat.StreamOptions == nil || !chat.StreamOptions.IncludeUsage || !res.IncludeUsage) {
			t.Fatalf("stream %v, stream_options %+v, Translated %+v", chat.Stream, chat.StreamOptions, res)
		}
		if _, err := RequestToAnthropic(res.Body, Options{Drop: []string{"*"}}); err != nil {
			var te *Error
			if !errors.As(err, &te) {
				t.Fatalf("the chat → Anthropic translation failed with %v", err)
			}
		}
	})
}

// FuzzStreamToResponses feeds arbitrary events to the Responses stream
// translator: every event it emits parses with the OpenAI SDK in the
// grammar's order (readSDKStream), and the stream ends with a final
// response only if Close says it ended whole, with an error event only
// if Close says so.
func FuzzStreamToResponses(f *testing.F) {
	seeds(f, "responsesapi/streams/*.in.sse", func(b []byte) { f.Add(b) })
	f.Fuzz(func(t *testing.T, data []byte) {
		events, _ := ParseEvents(data)
		s := NewStreamToResponses(StreamConfig{Created: 1})
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
			}
			out = append(out, o...)
		}
		closeErr := s.Close()
		a := readSDKStream(t, out)
		switch {
		case closeErr == nil:
			if a.Terminal != "response.completed" && a.Terminal != "response.incomplete" {
				t.Fatalf("Close nil, but the stream ended with %q", a.Terminal)
			}
		case errors.Is(closeErr, ErrStreamFailed):
			if a.Terminal != "error" {
				t.Fatalf("ErrStreamFailed, but the stream ended with %q", a.Terminal)
			}
		default:
			if a.Terminal != "" {
				t.Fatalf("Close %v, but the stream ended with %q", closeErr, a.Terminal)
			}
		}
	})
}
