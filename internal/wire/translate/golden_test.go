package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The golden files pair an input (*.in.json, *.in.sse) with what it must
// translate to (*.want.*), by directory: testdata/{requests,responses,
// streams}/{to_anthropic,to_openai}. They were written by hand from the
// public API references' shapes. JSON is compared by value, so layout and
// key order in the files do not matter; -update rewrites the want files
// from the code, for review with git diff.
var update = flag.Bool("update", false, "rewrite the golden want files")

const goldenCreated = 1700000000

var goldenOpts = Options{DefaultMaxTokens: 1024}

func TestGoldenRequests(t *testing.T) {
	golden(t, "requests/to_anthropic", ".json", func(in []byte, _ string) ([]byte, error) {
		r, err := RequestToAnthropic(in, goldenOpts)
		if err != nil {
			return nil, err
		}
		return r.Body, nil
	})
	golden(t, "requests/to_openai", ".json", func(in []byte, _ string) ([]byte, error) {
		r, err := RequestToOpenAI(in, goldenOpts)
		if err != nil {
			return nil, err
		}
		return r.Body, nil
	})
}

func TestGoldenResponses(t *testing.T) {
	golden(t, "responses/to_openai", ".json", func(in []byte, _ string) ([]byte, error) {
		return ResponseToOpenAI(in, goldenCreated)
	})
	golden(t, "responses/to_anthropic", ".json", func(in []byte, _ string) ([]byte, error) {
		return ResponseToAnthropic(in)
	})
}

// TestGoldenStreams feeds each recorded upstream stream one event at a
// time. A case named nousage_* is an OpenAI client that did not ask for
// usage; error* cases end with an upstream error event.
func TestGoldenStreams(t *testing.T) {
	run := func(s Stream) func([]byte, string) ([]byte, error) {
		return func(in []byte, name string) ([]byte, error) {
			events, n := ParseEvents(in)
			if n != len(in) {
				t.Errorf("%s: %d trailing bytes are not a whole event", name, len(in)-n)
			}
			var out []Event
			for _, ev := range events {
				o, err := s.Feed(ev)
				if err != nil {
					return nil, err
				}
				out = append(out, o...)
			}
			err := s.Close()
			if strings.HasPrefix(name, "error") {
				if !errors.Is(err, ErrStreamFailed) {
					t.Errorf("%s: Close = %v, want ErrStreamFailed", name, err)
				}
			} else if err != nil {
				t.Errorf("%s: Close = %v", name, err)
			}
			return Encode(out), nil
		}
	}
	golden(t, "streams/to_openai", ".sse", func(in []byte, name string) ([]byte, error) {
		cfg := StreamConfig{IncludeUsage: !strings.HasPrefix(name, "nousage"), Created: goldenCreated}
		return run(NewStreamToOpenAI(cfg))(in, name)
	})
	golden(t, "streams/to_anthropic", ".sse", func(in []byte, name string) ([]byte, error) {
		return run(NewStreamToAnthropic())(in, name)
	})
}

func golden(t *testing.T, dir, ext string, translate func(in []byte, name string) ([]byte, error)) {
	t.Helper()
	ins, err := filepath.Glob(filepath.Join("testdata", dir, "*.in"+ext))
	if err != nil || len(ins) == 0 {
		t.Fatalf("no golden inputs in %s: %v", dir, err)
	}
	for _, inPath := range ins {
		name := strings.TrimSuffix(filepath.Base(inPath), ".in"+ext)
		t.Run(dir+"/"+name, func(t *testing.T) {
			in, err := os.ReadFile(inPath)
			if err != nil {
				t.Fatal(err)
			}
			got, err := translate(in, name)
			if err != nil {
				t.Fatalf("translate: %v", err)
			}
			wantPath := strings.TrimSuffix(inPath, ".in"+ext) + ".want" + ext
			if *update {
				if ext == ".json" {
					var buf bytes.Buffer
					_ = json.Indent(&buf, got, "", "  ")
					got = append(buf.Bytes(), '\n')
				}
				if err := os.WriteFile(wantPath, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(wantPath)
			if err != nil {
				t.Fatal(err)
			}
			if ext == ".json" {
				sameJSON(t, got, want)
				return
			}
			sameEvents(t, got, want)
		})
	}
}

func sameJSON(t *testing.T, got, want []byte) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("want file is not JSON: %v", err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("got\n%s\nwant\n%s", indent(got), indent(want))
	}
}

// sameEvents compares two SSE streams event by event: names exactly,
// data by JSON value (or byte for byte when not JSON, as [DONE]).
func sameEvents(t *testing.T, got, want []byte) {
	t.Helper()
	ge, gn := ParseEvents(got)
	we, _ := ParseEvents(want)
	if gn != len(got) {
		t.Errorf("output ends mid-event: %q", got[gn:])
	}
	for i := 0; i < max(len(ge), len(we)); i++ {
		if i >= len(ge) || i >= len(we) {
			t.Fatalf("got %d events, want %d\ngot:\n%s", len(ge), len(we), got)
		}
		g, w := ge[i], we[i]
		if g.Name != w.Name {
			t.Errorf("event %d: name %q, want %q", i, g.Name, w.Name)
		}
		var gv, wv any
		gerr, werr := json.Unmarshal(g.Data, &gv), json.Unmarshal(w.Data, &wv)
		if gerr != nil || werr != nil {
			if !bytes.Equal(g.Data, w.Data) {
				t.Errorf("event %d: data %s, want %s", i, g.Data, w.Data)
			}
			continue
		}
		if !reflect.DeepEqual(gv, wv) {
			t.Errorf("event %d:\n got %s\nwant %s", i, g.Data, w.Data)
		}
	}
}

func indent(b []byte) string {
	var buf bytes.Buffer
	if json.Indent(&buf, b, "", "  ") != nil {
		return string(b)
	}
	return buf.String()
}
