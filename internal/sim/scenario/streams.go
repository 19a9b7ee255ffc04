package scenario

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/model/workload"
)

// validateStreams checks the main stream and clients.streams, the keys
// they name, and scenario.keys.
func (f *File) validateStreams(bad func(string, ...any)) {
	c := &f.Scenario.Clients
	gw := f.Gateway
	names := map[string]string{} // stream name -> where it was given
	all := c.All()
	for i, st := range all {
		at := "clients"
		var own Stream
		if i > 0 {
			own = c.Streams[i-1]
			at = fmt.Sprintf("clients.streams[%d]", i-1)
			if own.Name == "" {
				bad("%s.name: missing; give each stream a name, e.g. tenant-b", at)
			}
		}
		if prev, dup := names[st.Name]; dup && st.Name != "" {
			bad("%s.name: %q is already the name of %s; give each stream a unique name (the main stream is %q unless clients.name says otherwise)",
				at, st.Name, prev, all[0].Name)
		} else if st.Name != "" {
			names[st.Name] = at
		}
		if i == 0 || own.Model != "" {
			if _, ok := gw.Model(st.Model); !ok {
				bad("%s.model: %q is not a model of the gateway config; known models: %s", at, st.Model, modelNames(gw))
			}
		}
		if i == 0 || len(own.Rate) > 0 {
			for j, r := range st.Rate {
				if r.RPS < 0 || math.IsNaN(r.RPS) || r.Ramp < 0 || (j > 0 && r.At < st.Rate[j-1].At) {
					bad("%s.rate[%d]: rps must be >= 0 and steps in time order", at, j)
				}
			}
		}
		if i == 0 || own.Arrivals != "" {
			if _, ok := workload.ParseSpacing(st.Arrivals); !ok {
				bad("%s.arrivals: %q; use even or poisson", at, st.Arrivals)
			}
		}
		if i == 0 || own.Priorities != nil {
			classes := make([]string, 0, len(st.Priorities))
			for name := range st.Priorities {
				classes = append(classes, name)
			}
			sort.Strings(classes)
			for _, name := range classes {
				if share := st.Priorities[name]; !slices.Contains([]string{config.PriorityCritical, config.PriorityInteractive, config.PriorityBackground}, name) || share < 0 || math.IsNaN(share) {
					bad("%s.priorities.%s: use critical, interactive or background with a share >= 0", at, name)
				}
			}
		}
		if r := st.PromptTokens; r.Min < 0 || (r.Max != 0 && r.Max < r.Min) {
			bad("%s.prompt_tokens: %d..%d; want 0 <= min <= max", at, r.Min, r.Max)
		}
		if st.MaxTokens < 0 {
			bad("%s.max_tokens: %d is negative; write 0 (or leave it out) for none", at, st.MaxTokens)
		}
		f.validateKeyUse(bad, at, st)
	}
	keys := make([]string, 0, len(f.Scenario.Keys))
	for name := range f.Scenario.Keys {
		keys = append(keys, name)
	}
	sort.Strings(keys)
	for _, name := range keys {
		k, ok := keyNamed(gw, name)
		switch {
		case !ok:
			bad("keys.%s: not a key of the gateway config (keys[].name); known keys: %s", name, keyNames(gw))
		case config.KeyHash(f.Scenario.Keys[name]) != k.SHA256:
			// The plaintext is a test key, but say nothing of it anyway.
			bad("keys.%s: its SHA-256 is not keys[].sha256 of key %q; give the key whose hash the gateway config holds", name, name)
		}
	}
}

// validateKeyUse checks the key a stream sends, if any.
func (f *File) validateKeyUse(bad func(string, ...any), at string, st Clients) {
	gw := f.Gateway
	if st.Key == "" {
		if gw.AuthRequired() {
			bad("%s.key: missing; the gateway config defines keys, so it refuses requests without one (401): name one of %s", at, keyNames(gw))
		}
		return
	}
	k, ok := keyNamed(gw, st.Key)
	if !ok {
		bad("%s.key: %q is not a key of the gateway config (keys[].name); known keys: %s", at, st.Key, keyNames(gw))
		return
	}
	if len(k.Models) > 0 && !slices.Contains(k.Models, st.Model) {
		bad("%s.key: key %q may not use model %q (its models: %s), so every request would be refused", at, st.Key, st.Model, strings.Join(k.Models, ", "))
	}
}

// keyNamed finds a keys[] entry by name.
func keyNamed(gw *config.Config, name string) (*config.Key, bool) {
	for i := range gw.Keys {
		if gw.Keys[i].Name == name {
			return &gw.Keys[i], true
		}
	}
	return nil, false
}

func keyNames(gw *config.Config) string {
	if len(gw.Keys) == 0 {
		return "none (the gateway config has no keys:)"
	}
	names := make([]string, len(gw.Keys))
	for i, k := range gw.Keys {
		names[i] = k.Name
	}
	return strings.Join(names, ", ")
}

func modelNames(gw *config.Config) string {
	names := make([]string, len(gw.Models))
	for i, m := range gw.Models {
		names[i] = m.Name
	}
	return strings.Join(names, ", ")
}

// HasStreams reports whether the scenario has streams beyond its main
// one, and so a per-stream report.
func (c Clients) HasStreams() bool { return len(c.Streams) > 0 }
