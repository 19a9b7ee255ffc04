package protocol

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
)

// MaxChoices bounds the answers one request is taken to ask for: past
// it, a reservation would exceed any budget anyway.
const MaxChoices = 1 << 16

// Choices is how many answers a request to ep asks its provider to
// generate, each up to max_tokens long: OpenAI's n on chat/completions
// and completions, or the completions API's best_of when larger (it
// generates best_of and returns n). The Responses API, Anthropic's
// Messages API and embeddings have no such field: 1. raw is a body
// ParseBody took. A value a provider could read as a count (a number,
// or a numeric string, as lax parsers take it) counts, rounded up and
// capped at MaxChoices; anything else is 1, as the provider would
// refuse it.
func Choices(ep Endpoint, raw []byte) int64 {
	if ep.Dialect != OpenAI || !ep.Streams || ep.IsResponses() {
		return 1
	}
	// Most bodies name neither (an escaped key would need a backslash).
	if !bytes.Contains(raw, []byte(`"n"`)) && !bytes.Contains(raw, []byte(`"best_of"`)) && !bytes.Contains(raw, []byte(`\u`)) {
		return 1
	}
	n, bestOf := int64(1), int64(1)
	set := func(key string, v []byte) {
		switch key {
		case "n":
			n = choiceCount(v)
		case "best_of":
			bestOf = choiceCount(v)
		}
	}
	i := SkipSpace(raw, 0)
	plain := i < len(raw) && raw[i] == '{' && eachField(raw, i, nil, func(key []byte, at span) bool {
		set(string(key), raw[at.start:at.end])
		return true
	})
	if !plain {
		// Escaped keys: read the top level as a JSON parser would.
		n, bestOf = 1, 1
		var top map[string]json.RawMessage
		if json.Unmarshal(raw, &top) != nil {
			return 1
		}
		for _, k := range [2]string{"n", "best_of"} {
			if v, ok := top[k]; ok {
				set(k, v)
			}
		}
	}
	return max(n, bestOf)
}

// choiceCount reads one n or best_of value: 1 for what no provider
// would take as a count.
func choiceCount(v []byte) int64 {
	v = bytes.TrimSpace(v)
	if len(v) > 1 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil || math.IsNaN(f) || f < 1 {
		return 1
	}
	return int64(min(math.Ceil(f), MaxChoices))
}
