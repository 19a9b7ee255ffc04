package config

import (
	"strings"
	"testing"
)

const nativeModels = `
models:
  - name: m
    targets: [{provider: p, model: x}]
`

func TestNativeProviderDefaults(t *testing.T) {
	for _, tc := range []struct{ name, provider, base string }{
		{"gemini api", "kind: gemini\n    api_key_env: GEMINI_API_KEY", "https://generativelanguage.googleapis.com/v1beta"},
		{"vertex", "kind: gemini\n    vertex: {project: my-project, location: us-central1, credentials_file: /etc/sluice/sa.json}",
			"https://us-central1-aiplatform.googleapis.com/v1/projects/my-project/locations/us-central1/publishers/google"},
		{"vertex global", "kind: gemini\n    vertex: {project: my-project, location: global}",
			"https://aiplatform.googleapis.com/v1/projects/my-project/locations/global/publishers/google"},
		{"bedrock", "kind: bedrock\n    region: eu-west-3\n    aws_profile: prod", "https://bedrock-runtime.eu-west-3.amazonaws.com"},
		{"own base_url", "kind: bedrock\n    region: us-east-1\n    base_url: http://127.0.0.1:9/", "http://127.0.0.1:9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte("providers:\n  - name: p\n    "+tc.provider+nativeModels), "native.yaml")
			if err != nil {
				t.Fatal(err)
			}
			p := c.Providers[0]
			if p.BaseURL != tc.base {
				t.Errorf("base_url %q, want %q", p.BaseURL, tc.base)
			}
			if !p.Native() || p.ServesResponses() || c.kindOf("p") != KindAnthropic {
				t.Errorf("native %v, responses %v, speaks %q", p.Native(), p.ServesResponses(), c.kindOf("p"))
			}
		})
	}
}

func TestNativeProviderErrors(t *testing.T) {
	for _, tc := range []struct{ name, provider, want string }{
		{"gemini without a way in", "kind: gemini", "providers[0].api_key_env: missing; kind gemini needs a way in"},
		{"gemini with two ways in", "kind: gemini\n    api_key_env: GEMINI_API_KEY\n    vertex: {project: my-project, location: us-central1}", "providers[0].vertex: and api_key_env are two ways in"},
		{"vertex without project", "kind: gemini\n    vertex: {location: us-central1}", "providers[0].vertex.project: missing; write the Google Cloud project id"},
		{"vertex bad project", "kind: gemini\n    vertex: {project: My Project, location: us-central1}", "is not a Google Cloud project id"},
		{"vertex without location", "kind: gemini\n    vertex: {project: my-project}", "providers[0].vertex.location: missing"},
		{"bedrock without region", "kind: bedrock", "providers[0].region: missing; write the AWS region"},
		{"bedrock bad region", "kind: bedrock\n    region: virginia", `"virginia" is not an AWS region`},
		{"bedrock with a key", "kind: bedrock\n    region: us-east-1\n    api_key_env: AWS_SECRET_ACCESS_KEY", "providers[0].api_key_env: kind bedrock signs its calls with AWS credentials"},
		{"region elsewhere", "kind: openai\n    base_url: http://127.0.0.1:9/v1\n    region: us-east-1", "providers[0].region: applies only to kind: bedrock"},
		{"profile elsewhere", "kind: gemini\n    api_key_env: K\n    aws_profile: prod", "providers[0].aws_profile: applies only to kind: bedrock"},
		{"vertex elsewhere", "kind: anthropic\n    base_url: http://127.0.0.1:9/v1\n    vertex: {project: my-project, location: us-central1}", "providers[0].vertex: applies only to kind: gemini"},
		{"responses", "kind: gemini\n    api_key_env: K\n    responses: true", "providers[0].responses: the Responses API is passed through only to kind openai"},
		{"pool", "kind: bedrock\n    region: us-east-1\n    replicas: [{base_url: http://127.0.0.1:9}]", "providers[0].replicas: a pool is of self-hosted OpenAI-compatible servers"},
		{"credential header", "kind: gemini\n    api_key_env: K\n    headers: {x-goog-api-key: abc}", "providers[0].headers.x-goog-api-key: carries credentials"},
		{"unknown kind", "kind: vertex", `"vertex" is not a supported kind; use openai`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte("providers:\n  - name: p\n    "+tc.provider+nativeModels), "native.yaml")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v\nwant it to say %q", err, tc.want)
			}
		})
	}
}
