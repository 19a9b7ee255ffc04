package protocol

import "testing"

// The cached part of a whole answer's input, in each API's shape: OpenAI
// counts it inside prompt_tokens, Anthropic beside input_tokens.
func TestCachedOf(t *testing.T) {
	for _, c := range []struct {
		name, body    string
		input, cached int64
	}{
		{"openai chat", `{"choices":[{"finish_reason":"stop"}],"usage":{"prompt_tokens":1200,"completion_tokens":17,"prompt_tokens_details":{"cached_tokens":1024,"audio_tokens":0}}}`, 1200, 1024},
		{"openai, no details", `{"usage":{"prompt_tokens":1200,"completion_tokens":17}}`, 1200, 0},
		{"responses api", `{"object":"response","usage":{"input_tokens":750,"input_tokens_details":{"cached_tokens":512},"output_tokens":3}}`, 750, 512},
		{"anthropic", `{"type":"message","usage":{"input_tokens":20,"cache_creation_input_tokens":30,"cache_read_input_tokens":1000,"output_tokens":9}}`, 1050, 1000},
		{"anthropic, no cache", `{"type":"message","usage":{"input_tokens":20,"output_tokens":9}}`, 20, 0},
		{"more cached than input", `{"usage":{"prompt_tokens":10,"prompt_tokens_details":{"cached_tokens":99}}}`, 10, 10},
		{"details of another shape", `{"usage":{"prompt_tokens":10,"completion_tokens":2,"prompt_tokens_details":7}}`, 10, 0},
		{"a cached count of another type", `{"usage":{"prompt_tokens":10,"prompt_tokens_details":{"cached_tokens":"5"}}}`, 10, 0},
		{"no input", `{"usage":{"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":5}}}`, 0, 0},
		{"the decoder's path", `{"Usage":{"prompt_tokens":12,"completion_tokens":1,"prompt_tokens_details":{"Cached_Tokens":4}}}`, 12, 4},
	} {
		_, _, valid, _, in := AnswerUsage([]byte(c.body))
		if !valid || in.Tokens != c.input || in.Cached != c.cached {
			t.Errorf("%s: AnswerUsage input %+v (valid %v), want %d of which %d cached", c.name, in, valid, c.input, c.cached)
		}
		if got := CachedOf([]byte(c.body)); got != c.cached {
			t.Errorf("%s: CachedOf %d, want %d", c.name, got, c.cached)
		}
	}
	// Details of another shape leave the output count alone.
	if n, found, _, _ := OutputTokens([]byte(`{"usage":{"prompt_tokens":10,"completion_tokens":17,"prompt_tokens_details":[1]}}`)); n != 17 || !found {
		t.Errorf("output %d %v beside odd details, want 17", n, found)
	}
}

// A stream's cached count, whichever chunk boundaries it arrives across.
func TestStreamCachedTokens(t *testing.T) {
	for _, c := range []struct {
		name, stream  string
		input, cached int64
	}{
		{"openai usage chunk", "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n" +
			"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":2000,\"completion_tokens\":5,\"prompt_tokens_details\":{\"cached_tokens\":1536}}}\n\ndata: [DONE]\n\n", 2000, 1536},
		{"anthropic", "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":12,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":4000,\"output_tokens\":1}}}\n\n" +
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":30}}\n\n", 4012, 4000},
		{"responses api", "data: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_tokens\":900,\"input_tokens_details\":{\"cached_tokens\":800},\"output_tokens\":4}}}\n\n", 900, 800},
		{"no usage", "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n", 0, 0},
	} {
		for size := 1; size <= len(c.stream); size += max(1, size/2) {
			var u StreamUsage
			for i := 0; i < len(c.stream); i += size {
				u.Write([]byte(c.stream[i:min(i+size, len(c.stream))]))
			}
			in, _ := u.InputTokens()
			if in != c.input || u.CachedTokens() != c.cached {
				t.Errorf("%s in chunks of %d: input %d cached %d, want %d and %d", c.name, size, in, u.CachedTokens(), c.input, c.cached)
				break
			}
		}
	}
}

// FuzzCachedScan: the fast scan reads an answer's cached count exactly
// as the decoder does.
func FuzzCachedScan(f *testing.F) {
	for _, s := range []string{
		`{"usage":{"prompt_tokens":750,"prompt_tokens_details":{"cached_tokens":512}}}`,
		`{"usage":{"input_tokens":7,"input_tokens_details":{"cached_tokens":5},"prompt_tokens_details":null}}`,
		`{"usage":{"input_tokens":3,"cache_read_input_tokens":4}}`,
		`{"usage":{"prompt_tokens":1,"prompt_tokens_details":{"cached_tokens":1,"cached_tokens":2}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, ok := scanAnswer(data)
		if !ok {
			return
		}
		if got, want := a.inputUsage(), decodeFields(data).inputUsage(); got != want {
			t.Fatalf("%q: fast scan %+v, decoder %+v", data, got, want)
		}
	})
}
