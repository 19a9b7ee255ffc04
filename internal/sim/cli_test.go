package sim

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --policies runs only the named rows, and --plot writes the format its
// extension names; a name that is not a policy, or a plot file of
// another kind, is refused before anything runs, saying what there is.
func TestMainPoliciesAndPlot(t *testing.T) {
	dir := t.TempDir()
	png := filepath.Join(dir, "p.png")
	var out, errs bytes.Buffer
	if code := Main([]string{"../../scenarios/littles-law.yaml", "--policies", "unbounded, breaker + failover", "--plot", png}, &out, &errs); code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	table := out.String()
	if !strings.Contains(table, "breaker + failover") || !strings.Contains(table, "unbounded") || strings.Contains(table, "Vegas") {
		t.Errorf("table holds other rows than the two asked for:\n%s", table)
	}
	b, err := os.ReadFile(png)
	if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("--plot %s did not write a PNG (%v)", png, err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--policies", "nope"}, `policies ["nope"]: not in the scenario; it has unbounded, timeout only (15 s)`},
		{[]string{"--plot", filepath.Join(dir, "p.jpg")}, "want a .svg or .png file name"},
	} {
		out.Reset()
		errs.Reset()
		if code := Main(append([]string{"../../scenarios/littles-law.yaml"}, c.args...), &out, &errs); code != 2 || !strings.Contains(errs.String(), c.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, errs.String(), c.want)
		}
	}
}
