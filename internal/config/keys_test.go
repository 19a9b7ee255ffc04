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
