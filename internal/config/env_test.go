package config

import (
	"strings"
	"testing"
	"time"
)

const envBase = `providers:
  - name: p
    kind: openai
    base_url: %s
    max_in_flight: %s
    timeout: %s
models:
  - name: m
    targets: [{provider: p, model: x}]
`

func sprintf(format string, args ...string) string {
	for _, a := range args {
		format = strings.Replace(format, "%s", a, 1)
	}
	return format
}

func TestEnvExpansion(t *testing.T) {
	t.Setenv("SLUICE_T_URL", "http://10.0.0.7:8000/v1")
	t.Setenv("SLUICE_T_MAX", "48")
	t.Setenv("SLUICE_T_EMPTY", "")
	t.Run("values, numbers and durations", func(t *testing.T) {
		c, err := Parse([]byte(sprintf(envBase, "${SLUICE_T_URL}", "${SLUICE_T_MAX}", "${SLUICE_T_UNSET:-45s}")), "env.yaml")
		if err != nil {
			t.Fatal(err)
		}
		p := c.Providers[0]
		if p.BaseURL != "http://10.0.0.7:8000/v1" || p.MaxInFlight != 48 || p.Timeout.D() != 45*time.Second {
			t.Fatalf("got base_url %q, max_in_flight %d, timeout %v", p.BaseURL, p.MaxInFlight, p.Timeout)
		}
	})
	t.Run("an empty variable takes the fallback", func(t *testing.T) {
		c, err := Parse([]byte(sprintf(envBase, "http://a/v1", "${SLUICE_T_EMPTY:-7}", "1s")), "env.yaml")
		if err != nil || c.Providers[0].MaxInFlight != 7 {
			t.Fatalf("max_in_flight from an empty variable with fallback 7: %v, %v", c, err)
		}
	})
	t.Run("an unset variable is an error naming it and its line", func(t *testing.T) {
		_, err := Parse([]byte(sprintf(envBase, "${SLUICE_T_NOPE}", "1", "1s")), "env.yaml")
		if err == nil || !strings.Contains(err.Error(), "env.yaml:4") || !strings.Contains(err.Error(), "${SLUICE_T_NOPE}") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("$${ is a literal, keys and comments are left alone", func(t *testing.T) {
		c, err := Parse([]byte("# ${SLUICE_T_NOPE} in a comment\n"+sprintf(envBase, "http://a/v1", "1", "1s")+
			"    hedge_after: 1s\n"), "env.yaml")
		if err != nil {
			t.Fatal(err)
		}
		_ = c
		c, err = Parse([]byte(strings.Replace(sprintf(envBase, "http://a/v1", "1", "1s"), "name: m", "name: $${literal}", 1)), "env.yaml")
		if err != nil || c.Models[0].Name != "${literal}" {
			t.Fatalf("model name %q, %v; want the literal ${literal}", c.Models[0].Name, err)
		}
	})
	t.Run("a value from the environment is never quoted in an error", func(t *testing.T) {
		t.Setenv("SLUICE_T_SECRET", "sk-not-a-url-but-a-key-0123456789")
		_, err := Parse([]byte(sprintf(envBase, "${SLUICE_T_SECRET}", "1", "1s")), "env.yaml")
		if err == nil || strings.Contains(err.Error(), "sk-not-a-url") || !strings.Contains(err.Error(), "${SLUICE_T_SECRET}") {
			t.Fatalf("err = %v; want the variable's name, not its value", err)
		}
	})
}

func TestCheckEnv(t *testing.T) {
	t.Setenv("SLUICE_T_KEY_SET", "sk-x")
	c, err := Parse([]byte(`providers:
  - {name: a, kind: openai, base_url: "http://a/v1", api_key_env: SLUICE_T_KEY_SET}
  - {name: b, kind: openai, base_url: "http://b/v1", api_key_env: SLUICE_T_KEY_UNSET}
  - {name: c, kind: openai, base_url: "http://c/v1"}
models:
  - {name: m, targets: [{provider: a, model: x}, {provider: b, model: x}, {provider: c, model: x}]}
`), "keys.yaml")
	if err != nil {
		t.Fatal(err)
	}
	err = c.CheckEnv()
	if err == nil || !strings.Contains(err.Error(), "keys.yaml:3") || !strings.Contains(err.Error(), "SLUICE_T_KEY_UNSET is not set") ||
		strings.Contains(err.Error(), "SLUICE_T_KEY_SET ") {
		t.Fatalf("CheckEnv = %v; want one error for providers[1], naming its variable", err)
	}
}

func TestServerAndHeaderValidation(t *testing.T) {
	base := func(extra string) string {
		return `providers:
  - name: p
    kind: openai
    base_url: http://a/v1
    api_key_env: K
` + extra + `models:
  - {name: m, targets: [{provider: p, model: x}]}
`
	}
	cases := []struct {
		name, yaml, want string
	}{
		{"forwarding a credential", base("    forward_headers: [OpenAI-Beta, Authorization]\n"), "forward_headers[1]: Authorization carries the client's credentials"},
		{"forwarding framing", base("    forward_headers: [Host]\n"), "never forwarded"},
		{"a bad header name", base("    headers: {\"bad name\": x}\n"), "not a valid header name"},
		{"a credential header beside api_key_env", base("    headers: {Authorization: Bearer x}\n"), "api_key_env already supplies"},
		{"a header value with a newline", base("    headers: {X-Org: \"a\\r\\nX-Evil: 1\"}\n"), "line break"},
		{"no connections", base("") + "server: {max_connections: 0}\n", "server.max_connections: must be positive"},
		{"body budget below one body", base("") + "max_body_bytes: 10MiB\nserver: {max_body_bytes_in_flight: 1MiB}\n", "smaller than max_body_bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.yaml), "x.yaml")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to mention %q", err, c.want)
			}
		})
	}
	t.Run("valid headers and forward_headers", func(t *testing.T) {
		c, err := Parse([]byte(base("    headers: {OpenAI-Organization: org-1}\n    forward_headers: [X-Trace-Id]\n")+"server: {drain_delay: 0s}\n"), "x.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if c.Providers[0].Headers["OpenAI-Organization"] != "org-1" || c.Providers[0].ForwardHeaders[0] != "X-Trace-Id" || c.Server.DrainDelay != 0 {
			t.Fatalf("got %+v, server %+v", c.Providers[0], c.Server)
		}
	})
}
