package config

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// Provider returns the provider called name. The pointer is into c, so it
// stays valid for as long as c does.
func (c *Config) Provider(name string) (*Provider, bool) {
	for i := range c.Providers {
		if c.Providers[i].Name == name {
			return &c.Providers[i], true
		}
	}
	return nil, false
}

// Model returns the model clients call name. A linear scan suits the tens
// of models a config holds and leaves Config a plain value with no index
// to keep in sync.
func (c *Config) Model(name string) (*Model, bool) {
	for i := range c.Models {
		if c.Models[i].Name == name {
			return &c.Models[i], true
		}
	}
	return nil, false
}

// APIKey reads the provider's key from the environment on each call rather
// than at load, so the key never sits in a Config that might be printed or
// logged. It is empty when api_key_env is unset or the variable is empty.
func (p *Provider) APIKey() string {
	if p.APIKeyEnv == "" {
		return ""
	}
	return os.Getenv(p.APIKeyEnv)
}

// Timeout is the end-to-end budget for a request to m: the model's own
// timeout if set, else its primary target's provider timeout. The default
// provider timeout covers an unvalidated config whose target is missing.
func (c *Config) Timeout(m *Model) time.Duration {
	if m != nil && m.Timeout > 0 {
		return m.Timeout.D()
	}
	if m != nil && len(m.Targets) > 0 {
		if p, ok := c.Provider(m.Targets[0].Provider); ok && p.Timeout > 0 {
			return p.Timeout.D()
		}
	}
	return DefaultProviderTimeout
}

// CriticalKeys reads the declared critical client keys from the
// environment variable admission.critical_keys_env names. The result is
// nil when none is named, and empty when the variable is unset or blank.
func (c *Config) CriticalKeys() []string {
	if c.Admission.CriticalKeysEnv == "" {
		return nil
	}
	keys := []string{}
	for _, k := range strings.Split(os.Getenv(c.Admission.CriticalKeysEnv), ",") {
		if k = strings.TrimSpace(k); k != "" {
			keys = append(keys, k)
		}
	}
	return keys
}

// Warnings lists settings that are valid but probably not what was
// meant, each with what to change. sluice serve logs them at start and
// --check prints them.
func (c *Config) Warnings() []string {
	var out []string
	for _, m := range c.Models {
		for _, t := range m.Targets[:max(len(m.Targets)-1, 0)] {
			if p, ok := c.Provider(t.Provider); ok && p.Breaker == nil {
				out = append(out, fmt.Sprintf("model %s: provider %s has breaker: off, so requests fail over past it only after a call fails, never while it is slow; remove breaker: off from provider %s", m.Name, p.Name, p.Name))
			}
		}
	}
	if !c.AuthRequired() && !Loopback(c.Listen) {
		out = append(out, fmt.Sprintf("OPEN GATEWAY: listen %s is reachable beyond this machine and no keys are required, so anyone who can reach the port spends the providers' keys; define keys: (sluice keys new), or listen on 127.0.0.1", c.Listen))
	}
	if w := c.adminTokenWarning(); w != "" {
		out = append(out, w)
	}
	for _, p := range c.Providers {
		if p.Breaker != nil && p.Breaker.Probe == ProbeTraffic && c.soleTarget(p.Name) {
			out = append(out, fmt.Sprintf("provider %s: it alone serves a model, so while its breaker is half-open that model's users are its probes and fail at the probe timeout; remove breaker.probe, or set it to synthetic", p.Name))
		}
	}
	return out
}

// soleTarget reports whether provider is some model's only target.
func (c *Config) soleTarget(provider string) bool {
	for _, m := range c.Models {
		if len(m.Targets) == 1 && m.Targets[0].Provider == provider {
			return true
		}
	}
	return false
}

// ServesResponses reports whether the provider serves OpenAI's Responses
// API: its responses setting, or by default whether it is of kind openai.
func (p *Provider) ServesResponses() bool {
	if p.Responses != nil {
		return *p.Responses
	}
	return p.Kind == KindOpenAI
}
