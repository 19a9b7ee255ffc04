package cli

import (
	"bytes"
	"strings"
	"testing"
)

// serve --check --time-scale prints the configuration the gateway would
// run: policy times scaled, hygiene timeouts not.
func TestServeCheckTimeScale(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	for _, c := range []struct {
		name     string
		args     []string
		code     int
		mentions []string
	}{
		{"a scenario file at a quarter", []string{"--check", "--config", "../../scenarios/vllm-ramp.yaml", "--time-scale", "0.25"}, 0,
			[]string{"configuration ok", "time scale 0.25", "max_wait: 500ms", "timeout: 2s", "write_timeout: 10s", "stream_idle_timeout: 15s"}},
		{"the embedded default", []string{"--check", "--time-scale", "0.5"}, 0,
			[]string{"configuration ok", "time scale 0.5", "timeout: 30s"}},
		{"zero", []string{"--check", "--time-scale", "0"}, 2, []string{"--time-scale 0: want a positive factor"}},
		{"negative", []string{"--check", "--time-scale", "-1"}, 2, []string{"want a positive factor"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			all := expectExit(t, Serve, c.args, c.code, c.mentions)
			if strings.Contains(all, "scenario:") {
				t.Errorf("the scenario section is printed:\n%s", all)
			}
		})
	}
	// Unscaled, --check prints what it always did.
	var out bytes.Buffer
	if code := Serve([]string{"--check", "--config", "../../scenarios/vllm-ramp.yaml"}, &out, &bytes.Buffer{}); code != 0 || strings.Contains(out.String(), "time scale") {
		t.Errorf("exit %d, output %q", code, out.String())
	}
}
