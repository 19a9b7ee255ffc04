package idempotency

import (
	"strings"
	"testing"
)

func TestParseHeader(t *testing.T) {
	for _, c := range []struct {
		name   string
		values []string
		want   string // the key, or a fragment of the error
		ok     bool
	}{
		{"a uuid", []string{"6f1c2b9e-0d4e-4a53-9a3b-2f6f0c8d1e7a"}, "6f1c2b9e-0d4e-4a53-9a3b-2f6f0c8d1e7a", true},
		{"punctuation and spaces", []string{"order 42/retry #1"}, "order 42/retry #1", true},
		{"255 characters", []string{strings.Repeat("k", 255)}, strings.Repeat("k", 255), true},
		{"256 characters", []string{strings.Repeat("k", 256)}, "at most 255", false},
		{"empty", []string{""}, "empty", false},
		{"twice", []string{"a", "b"}, "sent 2 times", false},
		{"a control character", []string{"a\tb"}, "byte 2 is not printable ASCII", false},
		{"not ASCII", []string{"clé"}, "byte 3 is not printable ASCII", false},
		{"DEL", []string{"a\x7f"}, "not printable", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseHeader(c.values)
			switch {
			case c.ok && (err != nil || got != c.want):
				t.Errorf("ParseHeader = %q, %v; want %q", got, err, c.want)
			case !c.ok && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("ParseHeader = %q, %v; want an error saying %q", got, err, c.want)
			case !c.ok && !strings.Contains(err.Error(), HeaderKey):
				t.Errorf("error %q does not name the header", err)
			}
		})
	}
}

// One key in two scopes is two keys, and no choice of scope and key can
// collide with another pair by moving bytes across the boundary.
func TestKeysAreScoped(t *testing.T) {
	if NewKey("tenant:a", "k") == NewKey("tenant:b", "k") {
		t.Error("one key in two scopes hashed alike")
	}
	if NewKey("tenant:a", "bk") == NewKey("tenant:ab", "k") {
		t.Error("moving a byte from the key into the scope kept the hash")
	}
	if NewKey("s", "k") != NewKey("s", "k") {
		t.Error("NewKey is not deterministic")
	}
	if got := NewKey("s", "k").String(); len(got) != 64 {
		t.Errorf("Key.String() = %q; want 64 hex digits", got)
	}
}

func TestFingerprintOf(t *testing.T) {
	base := FingerprintOf("POST", "/v1/chat/completions", []byte(`{"a":1}`))
	for _, c := range []struct {
		name         string
		method, path string
		body         string
	}{
		{"another body", "POST", "/v1/chat/completions", `{"a":2}`},
		{"another path", "POST", "/v1/completions", `{"a":1}`},
		{"another method", "PUT", "/v1/chat/completions", `{"a":1}`},
		{"a byte moved from the path into the body", "POST", "/v1/chat/completion", `s{"a":1}`},
	} {
		if FingerprintOf(c.method, c.path, []byte(c.body)) == base {
			t.Errorf("%s: same fingerprint", c.name)
		}
	}
	if FingerprintOf("POST", "/v1/chat/completions", []byte(`{"a":1}`)) != base {
		t.Error("FingerprintOf is not deterministic")
	}
}
