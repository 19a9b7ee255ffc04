package config

import (
	"os"
	"strings"
	"testing"
)

// Every configuration the README shows as a whole file (a yaml block
// that opens with "# sluice.yaml") is one sluice serve --check accepts.
func TestReadmeConfigs(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := 0
	for _, part := range strings.Split(string(data), "```yaml\n")[1:] {
		block, _, ok := strings.Cut(part, "```")
		if !ok || !strings.HasPrefix(block, "# sluice.yaml") {
			continue
		}
		blocks++
		c, err := Parse([]byte(block), "README.md")
		if err == nil {
			err = c.Validate()
		}
		if err != nil {
			t.Errorf("README config %d does not validate: %v\n%s", blocks, err, block)
		}
	}
	if blocks == 0 {
		t.Fatal(`no "# sluice.yaml" config blocks found in README.md`)
	}
}
