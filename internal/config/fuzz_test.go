package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse checks that no input makes Parse panic, and that it returns
// either a config or *Errors that name the file, never both or neither.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*.yaml")
	seeds = append(seeds, "default.yaml", "../../examples/sluice.yaml")
	for _, path := range seeds {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data, "fuzz.yaml")
		if (c == nil) == (err == nil) {
			t.Fatalf("Parse returned config %v and error %v", c != nil, err)
		}
		if err == nil {
			if verr := c.Validate(); verr != nil {
				t.Fatalf("parsed config fails Validate: %v", verr)
			}
			return
		}
		var ce *Error
		if !errors.As(err, &ce) {
			t.Fatalf("error is %T, not *Error: %v", err, err)
		}
		for _, line := range strings.Split(err.Error(), "\n") {
			if !strings.HasPrefix(line, "fuzz.yaml") {
				t.Fatalf("error line does not name the file: %q", line)
			}
		}
	})
}
