package mock

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-gw/sluice/internal/config/upstreamscript"
)

// LoadScript reads a YAML behaviour script (format in package upstream's
// doc).
func LoadScript(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, err
	}
	cfg, err := upstreamscript.ParseScript(data)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// ParseBrownout reads the CLI's compact brownout form
// START-END:EFFECT[@FRACTION], where EFFECT is xN (multiply latency) or a
// duration (fixed TTFT) and END may be empty for an open-ended window:
// "30s-60s:x10", "1m-:5s@0.5".
func ParseBrownout(s string) (Brownout, error) {
	fail := func(why string) (Brownout, error) {
		return Brownout{}, fmt.Errorf("brownout %q: %s (want START-END:xN or START-END:DURATION, optional @FRACTION)", s, why)
	}
	window, effect, ok := strings.Cut(s, ":")
	if !ok {
		return fail("no ':'")
	}
	start, end, ok := strings.Cut(window, "-")
	if !ok {
		return fail("no '-' in window")
	}
	var b Brownout
	var err error
	if b.Start, err = time.ParseDuration(start); err != nil {
		return fail("bad start")
	}
	if end != "" {
		if b.End, err = time.ParseDuration(end); err != nil {
			return fail("bad end")
		}
	}
	effect, frac, hasFrac := strings.Cut(effect, "@")
	if hasFrac {
		if b.Fraction, err = strconv.ParseFloat(frac, 64); err != nil {
			return fail("bad fraction")
		}
	}
	if m, ok := strings.CutPrefix(effect, "x"); ok {
		if b.Multiplier, err = strconv.ParseFloat(m, 64); err != nil {
			return fail("bad multiplier")
		}
	} else if b.Latency, err = time.ParseDuration(effect); err != nil {
		return fail("bad effect")
	}
	if err := (Config{Brownouts: []Brownout{b}}).Validate(); err != nil {
		return fail(err.Error())
	}
	return b, nil
}

// LoadScenarioUpstream reads one provider's behaviour from a scenario
// file (scenario.upstreams.NAME), so sluice mock, sluice sim and sluice
// load can all run from one file.
func LoadScenarioUpstream(path, provider string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, err
	}
	cfg, err := upstreamscript.ScenarioUpstream(data, provider)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}
