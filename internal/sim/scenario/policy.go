package scenario

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-gw/sluice/internal/config"
)

// PolicyConfig returns the gateway config with a policy's overlay merged
// in. A policy with no overlay gets the file's gateway config.
func (f *File) PolicyConfig(p Policy) (*config.Config, error) {
	if p.Gateway.Kind == 0 {
		return f.Gateway, nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(f.raw, &doc); err != nil {
		return nil, err
	}
	root := doc.Content[0]
	setKey(root, "scenario", nil)
	merge(root, &p.Gateway)
	out, err := yaml.Marshal(root)
	if err != nil {
		return nil, err
	}
	return config.Parse(out, fmt.Sprintf("%s (policy %s)", f.Path, p.Name))
}

// Policies returns the rows to run: the declared policies, or one row
// named after the scenario for the gateway config as written.
func (f *File) Policies() []Policy {
	if len(f.Scenario.Policies) > 0 {
		return f.Scenario.Policies
	}
	name := f.Scenario.Name
	if name == "" {
		name = "config"
	}
	return []Policy{{Name: name}}
}

// KeepPolicies keeps only the named policies, in the scenario's order. A
// name that is not a policy is an error that lists the names there are.
func (f *File) KeepPolicies(names []string) error {
	want := map[string]bool{}
	for _, n := range names {
		if n = strings.TrimSpace(n); n != "" {
			want[n] = true
		}
	}
	var have []string
	var kept []Policy
	for _, p := range f.Policies() {
		have = append(have, p.Name)
		if want[p.Name] {
			kept = append(kept, p)
			delete(want, p.Name)
		}
	}
	if len(want) > 0 || len(kept) == 0 {
		missing := slices.Sorted(maps.Keys(want))
		return fmt.Errorf("policies %q: not in the scenario; it has %s", missing, strings.Join(have, ", "))
	}
	if len(f.Scenario.Policies) > 0 {
		f.Scenario.Policies = kept
	}
	return nil
}

// merge overlays src onto dst: mappings merge key by key; sequences whose
// items are mappings with a name merge item by item; anything else
// replaces.
func merge(dst, src *yaml.Node) {
	switch {
	case dst.Kind == yaml.MappingNode && src.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(src.Content); i += 2 {
			k, v := src.Content[i], src.Content[i+1]
			if cur := getKey(dst, k.Value); cur != nil {
				merge(cur, v)
			} else {
				dst.Content = append(dst.Content, k, v)
			}
		}
	case dst.Kind == yaml.SequenceNode && src.Kind == yaml.SequenceNode && named(src):
		for _, item := range src.Content {
			name := getKey(item, "name").Value
			if cur := findNamed(dst, name); cur != nil {
				merge(cur, item)
			} else {
				dst.Content = append(dst.Content, item)
			}
		}
	default:
		*dst = *src
	}
}

func getKey(m *yaml.Node, key string) *yaml.Node {
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// setKey replaces a key's value, or deletes the key when v is nil.
func setKey(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			if v == nil {
				m.Content = append(m.Content[:i], m.Content[i+2:]...)
			} else {
				m.Content[i+1] = v
			}
			return
		}
	}
}

func named(seq *yaml.Node) bool {
	for _, item := range seq.Content {
		if n := getKey(item, "name"); n == nil || n.Kind != yaml.ScalarNode {
			return false
		}
	}
	return len(seq.Content) > 0
}

func findNamed(seq *yaml.Node, name string) *yaml.Node {
	for _, item := range seq.Content {
		if n := getKey(item, "name"); n != nil && n.Value == name {
			return item
		}
	}
	return nil
}
