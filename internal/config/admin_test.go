package config

import (
	"strings"
	"testing"
)

func TestAdminAccess(t *testing.T) {
	base := "providers: [{name: p, kind: openai, base_url: 'http://127.0.0.1:1/v1'}]\nmodels: [{name: m, targets: [{provider: p, model: x}]}]\n"
	cases := []struct {
		name, yaml string
		want       string // "" for valid
	}{
		{"the default is loopback", "", ""},
		{"loopback by name", "admin_listen: localhost:9090\n", ""},
		{"ipv6 loopback", "admin_listen: '[::1]:9090'\n", ""},
		{"all interfaces without a token", "admin_listen: ':9090'\n", "admin.token_env"},
		{"a public address without a token", "admin_listen: 0.0.0.0:9090\n", "listen on 127.0.0.1"},
		{"with a token", "admin_listen: 0.0.0.0:9090\nadmin: {token_env: SLUICE_T_ADMIN}\n", ""},
		{"declared open", "admin_listen: 0.0.0.0:9090\nadmin: {open: true}\n", ""},
		{"the token itself instead of a name", "admin: {token_env: 'hunter2'}\n", "not the token itself"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(base+c.yaml), "admin.yaml")
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("want valid, got %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("want an error mentioning %q, got %v", c.want, err)
			}
		})
	}

	c, err := Parse([]byte(base+"admin: {token_env: SLUICE_T_ADMIN}\n"), "admin.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SLUICE_T_ADMIN", "")
	if err := c.CheckEnv(); err == nil || !strings.Contains(err.Error(), "SLUICE_T_ADMIN is not set") {
		t.Errorf("an unset token variable: %v", err)
	}
	t.Setenv("SLUICE_T_ADMIN", "s3cret")
	if err := c.CheckEnv(); err != nil || c.AdminToken() != "s3cret" {
		t.Errorf("a set token: %v, %q", err, c.AdminToken())
	}
}
