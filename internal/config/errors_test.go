package config

import (
	"strings"
	"testing"
)

// A model's targets may mix API kinds: the gateway translates between
// them (package translate), so serve --check accepts the chain.
func TestMixedKindsAccepted(t *testing.T) {
	c, err := Load("testdata/mixed_kinds.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(c.Models[0].Targets); n != 2 {
		t.Fatalf("targets: %d, want 2", n)
	}
	if got := c.Models[0].OnUnsupported; got != "drop" {
		t.Errorf("models[0].on_unsupported = %q, want drop", got)
	}
	if got := c.Providers[1].OnUnsupported; got != "refuse" {
		t.Errorf("providers[1].on_unsupported = %q, want refuse", got)
	}
}

// kind azure: api_version defaults to the GA version, and an azure
// provider may back up an openai one (both speak OpenAI's API).
func TestAzureProvider(t *testing.T) {
	c, err := Load("testdata/azure.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if v := c.Providers[0].APIVersion; v != DefaultAzureAPIVersion {
		t.Errorf("default api_version %q, want %q", v, DefaultAzureAPIVersion)
	}
	if v := c.Providers[1].APIVersion; v != "2025-04-01-preview" {
		t.Errorf("api_version %q", v)
	}
	if u := c.Providers[1].BaseURL; u != "https://example-resource.openai.azure.com" {
		t.Errorf("base_url %q: the trailing slash should go", u)
	}
	if c.Providers[0].ServesResponses() {
		t.Error("an azure provider serves the Responses API by default; its URL scheme for it is not supported")
	}
}

// Each broken sample must produce exactly the listed errors. at is the
// "file:line: field: " start an editor jumps to; fix is part of the hint.
func TestParseErrors(t *testing.T) {
	type want struct{ at, fix string }
	tests := []struct {
		file string
		want []want
	}{
		{"duration_no_unit.yaml", []want{
			{":8: providers[1].timeout: ", `"15" has no unit; write 15s`},
			{":11: models[0].timeout: ", "15 has no unit; write 15s"},
			{":17: admission.queue.max_wait: ", "is negative; write a positive duration such as 1s"},
		}},
		{"unknown_nested.yaml", []want{
			{":1: listen: ", `unknown field "lisen"; valid fields are listen, admin_listen,`},
			{":3: log: ", `unknown field "colour"; valid fields are format, level`},
			{":8: providers[0]: ", `unknown field "api_key"; valid fields are name, kind, base_url, api_key_env,`},
			{":14: models[0].targets[0]: ", `unknown field "weight"; valid fields are provider, model`},
			{":17: admission.queue.max_depth: ", `unknown field "max_dept"; valid fields are max_depth, max_wait`},
		}},
		{"wrong_type.yaml", []want{
			{":1: max_body_bytes: ", `"lots" is not a size; write a whole number of bytes`},
			{":6: providers[0].max_in_flight: ", `want a whole number, got string "many"; write digits only`},
			{":9: models[0].targets: ", `want a list, got string "openai/gpt-4o"; start each entry`},
			{":11: admission.max_in_flight: ", `"64" is quoted; write 64 without quotes`},
			{":12: admission.queue: ", "want a mapping of fields, got integer 150; valid fields are max_depth, max_wait"},
			{":15: admission.priorities.critical.reserved: ", "want a whole number, got number 1.5"},
		}},
		{"unknown_provider.yaml", []want{
			{":17: models[1].targets[1].provider: ", `"openia" is not a configured provider; known providers: openai, anthropic`},
		}},
		{"bad_providers.yaml", []want{
			{":2: providers[0].name: ", `may only contain letters, digits, '.', '_' and '-'; write e.g. "my-provider"`},
			{":3: providers[0].kind: ", `"watsonx" is not a supported kind; use openai`},
			{":4: providers[0].base_url: ", "is not an absolute http(s) URL; write e.g. https://api.openai.com/v1"},
			{":5: providers[0].api_key_env: ", "must be the name of an environment variable"},
			{":6: providers[0].timeout: ", "must be positive; write e.g. 60s"},
			{":7: providers[0].max_in_flight: ", "-1 is negative; write 0 for no per-provider limit"},
			{":10: providers[1].base_url: ", `has scheme "ftp"; use http or https`},
			{":11: providers[2].name: ", `"vllm" is already the name of providers[1]`},
			{":13: providers[2].base_url: ", "must not contain credentials; put the key in an environment variable"},
			{":14: providers[3].name: ", "missing; give each provider a unique name"},
			{":14: providers[3].base_url: ", "missing; write the API root"},
		}},
		{"bad_azure.yaml", []want{
			{":4: providers[0].base_url: ", "has an API path; for kind azure write only the resource's endpoint, e.g. https://example-resource.openai.azure.com"},
			{":5: providers[0].api_version: ", `"latest" is not an Azure OpenAI api-version; write a date such as 2024-10-21`},
			{":9: providers[1].api_version: ", "applies only to kind: azure; remove it"},
			{":13: providers[2].responses: ", "the Responses API is passed through only to kind openai providers"},
		}},
		{"bad_pool.yaml", []want{
			{":4: providers[0].base_url: ", "a provider with replicas takes no base_url"},
			{":6: providers[0].replicas[0].metrics_url: ", "is not an absolute http(s) URL; write e.g. http://10.0.0.5:8000/metrics"},
			{":7: providers[0].replicas[1].base_url: ", "is not an absolute http(s) URL"},
			{":7: providers[0].replicas[1].max_in_flight: ", "-2 is negative; write 0 for the provider's max_in_flight"},
			{":8: providers[0].replicas[2].name: ", `"a" is already the name of replicas[1]`},
			{":10: providers[0].pool.balance: ", `"random" is not valid; use least_loaded or round_robin`},
			{":12: providers[0].pool.stale_after: ", "is shorter than scrape_interval (2s)"},
			{":13: providers[0].pool.max_waiting: ", "-1 is negative"},
		}},
		{"bad_models.yaml", []want{
			{":10: models[1].name: ", `"gpt" is already the name of models[0]; give each model a unique name`},
			{":14: models[2].name: ", "missing; write the model name clients will send"},
			{":15: models[2].targets[0].provider: ", "missing; set it to a provider's name; known providers: openai"},
			{":17: models[3].targets: ", "at least one target is required; add - provider:"},
			{":20: models[4].targets[0].model: ", "missing; write the model name the provider expects"},
			{":23: models[5].validation.on_invalid: ", `"drop" is not valid; use retry, annotate or refuse`},
		}},
		{"bad_unsupported.yaml", []want{
			{":5: providers[0].on_unsupported: ", `"ignore" is not valid; use drop or refuse, or remove it`},
			{":8: models[0].on_unsupported: ", `"Drop" is not valid; use drop or refuse`},
		}},
		{"bad_admission.yaml", []want{
			{":2: log.format: ", `"xml" is not valid; use text or json`},
			{":3: log.level: ", `"verbose" is not valid; use debug, info, warn or error`},
			{":14: admission.max_in_flight: ", "must be at least 1; write e.g. 256"},
			{":15: admission.default_priority: ", `"urgent" is not valid; use critical, interactive or background`},
			{":18: admission.priorities.critical.reserved: ", "-1 is negative; write 0 for no reservation"},
			{":20: admission.priorities.interactive.reserved: ", "only critical can reserve capacity"},
			{":22: admission.priorities.background.max_queued: ", "200 is more than admission.queue.max_depth (150); lower it to at most 150"},
		}},
		{"queue_limits.yaml", []want{
			{":14: admission.queue.max_wait: ", "must be positive while requests can queue; write e.g. 5s, or set max_depth: 0"},
			{":17: admission.priorities.critical.reserved: ", "holds back every in-flight slot (admission.max_in_flight is 4)"},
			{":19: admission.priorities.interactive.max_queued: ", "11 is more than admission.queue.max_depth (10)"},
		}},
		{"hold_budget.yaml", []want{
			{":13: admission.queue.hold_budget: ", "3s is longer than admission.queue.max_wait (2s), which ends every wait in the queue; write at most 2s"},
		}},
		{"bad_listen.yaml", []want{
			{":1: listen: ", `"localhost" is not host:port; write e.g. 127.0.0.1:8080`},
			{":2: admin_listen: ", `has port "99999"; the port must be a number up to 65535`},
			{":3: max_body_bytes: ", `unknown unit "MegaBytes"; use B, KB, KiB, MB, MiB, GB or GiB`},
		}},
		{"same_listen.yaml", []want{
			{":2: admin_listen: ", "is the same address as listen; give it another port"},
		}},
		{"duplicate_key.yaml", []want{
			{":5: providers[0].kind: ", "set twice (first on line 3); remove one of them"},
		}},
		{"syntax_tab.yaml", []want{
			{":2: ", "invalid YAML: found a tab character that violates indentation; check indentation (spaces, not tabs)"},
		}},
		{"two_docs.yaml", []want{
			{":11: ", `a second YAML document starts here; a config file holds one, so remove the extra "---"`},
		}},
		{"not_a_mapping.yaml", []want{
			{":1: ", "want a mapping of fields, got a list; valid fields are listen,"},
		}},
		{"empty.yaml", []want{
			{": providers: ", "at least one provider is required; add a providers: list"},
			{": models: ", "at least one model is required; add a models: list"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := "testdata/" + tt.file
			c, err := Load(path)
			if err == nil {
				t.Fatalf("no error; config %+v", c)
			}
			if c != nil {
				t.Error("a failed Load returned a config too")
			}
			got := allErrors(t, err)
			for _, w := range tt.want {
				found := false
				for _, e := range got {
					s := e.Error()
					if strings.HasPrefix(s, path+w.at) && strings.Contains(s, w.fix) {
						found = true
						break
					}
				}
				if !found {
					t.Errorf("no error starting %q containing %q in:\n%v", path+w.at, w.fix, err)
				}
			}
			if len(got) != len(tt.want) {
				t.Errorf("got %d errors, want %d:\n%v", len(got), len(tt.want), err)
			}
		})
	}
}

// A key pasted into the wrong place must not be echoed into logs.
func TestSecretsNotEchoed(t *testing.T) {
	for _, file := range []string{"bad_providers.yaml", "unknown_nested.yaml"} {
		_, err := Load("testdata/" + file)
		if err == nil || strings.Contains(err.Error(), "not-a-real-key") || strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: error echoes a secret or is missing:\n%v", file, err)
		}
	}
}

func TestErrorsCapped(t *testing.T) {
	var b strings.Builder
	b.WriteString("providers:\n")
	for range 200 {
		b.WriteString("  - {name: x, kind: nope, base_url: nope}\n")
	}
	_, err := Parse([]byte(b.String()), "big.yaml")
	got := allErrors(t, err)
	if len(got) != maxErrors+1 || !strings.Contains(got[maxErrors].Msg, "more errors not shown") {
		t.Fatalf("got %d errors, last %v", len(got), got[len(got)-1])
	}
}

func TestAliasBombBounded(t *testing.T) {
	// 5000 models each aliasing the same 1000 targets: a small file that a
	// naive walk would expand to five million targets.
	var b strings.Builder
	b.WriteString("providers: [{name: p, kind: openai, base_url: \"http://x/v1\"}]\nmodels:\n")
	b.WriteString("  - name: m0\n    targets: &t [")
	b.WriteString(strings.Repeat("{provider: p, model: m}, ", 999) + "{provider: p, model: m}]\n")
	b.WriteString(strings.Repeat("  - {name: m, targets: *t}\n", 5000))
	_, err := Parse([]byte(b.String()), "bomb.yaml")
	if err == nil || err.Error() != "bomb.yaml: "+errTooComplex {
		t.Fatalf("err = %v", err)
	}
}
