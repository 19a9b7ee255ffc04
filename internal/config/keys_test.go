package config

import (
	"strings"
	"testing"
)

func TestStoreURL(t *testing.T) {
	for _, c := range []struct {
		store string
		ok    bool
	}{
		{"", true},
		{"redis://127.0.0.1:6379/0", true},
		{"rediss://:secret@redis.internal:6380/1", true},
		{"redis://127.0.0.1", false},
		{"http://127.0.0.1:6379", false},
		{"127.0.0.1:6379", false},
	} {
		cfg := Default("http://127.0.0.1:1")
		cfg.Store = c.store
		err := cfg.Validate()
		if (err == nil) != c.ok {
			t.Errorf("store %q: %v, want ok=%v", c.store, err, c.ok)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("the error echoes the URL's password: %v", err)
		}
	}
}

// auth.required: true with no keys is refused (nobody could get in),
// unless keys can be made at run time: a durable store and the admin
// API's token.
func TestAuthRequiredWithoutKeys(t *testing.T) {
	yes := true
	for _, c := range []struct {
		name   string
		mutate func(*Config)
		ok     bool
	}{
		{"no keys", func(*Config) {}, false},
		{"state.dir but no token", func(c *Config) { c.State.Dir = "/tmp/x" }, false},
		{"token but nowhere durable", func(c *Config) { c.Admin.TokenEnv = "T" }, false},
		{"state.dir and token", func(c *Config) { c.State.Dir = "/tmp/x"; c.Admin.TokenEnv = "T" }, true},
		{"store and token", func(c *Config) { c.Store = "redis://127.0.0.1:6379/0"; c.Admin.TokenEnv = "T" }, true},
	} {
		cfg := Default("http://127.0.0.1:1")
		cfg.Auth.Required = &yes
		c.mutate(cfg)
		err := cfg.Validate()
		if (err == nil) != c.ok {
			t.Errorf("%s: %v, want ok=%v", c.name, err, c.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "auth.required") {
			t.Errorf("%s: the error does not name auth.required: %v", c.name, err)
		}
	}
}
