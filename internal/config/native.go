package config

import (
	"fmt"
	"github.com/sluice-gw/sluice/internal/wire/vendors"
	"regexp"
	"slices"
	"strings"
)

// Native APIs. A provider of kind gemini or bedrock speaks its vendor's
// own API (Gemini's generateContent, Bedrock's Converse); to the
// gateway it is an Anthropic-speaking provider whose calls a codec
// turns into the vendor's (package native), so its targets serve
// clients of both APIs as an anthropic provider's do.
//
//	kind: gemini    api_key_env: GEMINI_API_KEY (the Gemini API, key in
//	                x-goog-api-key), or vertex: {project, location,
//	                credentials_file} (Vertex AI, OAuth2: the file's
//	                service account or workload identity federation, or
//	                without it Application Default Credentials)
//	kind: bedrock   region (required), aws_profile (optional: else the
//	                AWS default credential chain); calls signed with AWS
//	                Signature V4
//
// base_url is the vendor's API root, defaulted from those fields; write
// it for a proxy, a private endpoint or a mock.

// Vertex is a gemini provider's Vertex AI project.
type Vertex struct {
	// Project is the Google Cloud project id, e.g. my-project.
	Project string `yaml:"project"`
	// Location is the region serving the models, e.g. us-central1, or
	// global.
	Location string `yaml:"location"`
	// CredentialsFile is a service account key or external account
	// (workload identity federation) JSON file; empty: Application
	// Default Credentials. Its contents are never logged.
	CredentialsFile string `yaml:"credentials_file"`
}

// Native reports whether the provider speaks a native API (gemini,
// bedrock) through the Messages hub.
func (p *Provider) Native() bool { return IsNativeKind(p.Kind) }

// IsNativeKind reports whether kind is a native API's: one whose codec
// is registered in package vendors (gemini, bedrock, and any a build or
// a test adds).
func IsNativeKind(kind string) bool {
	_, ok := vendors.Lookup(kind)
	return ok
}

// GeminiAPIBaseURL is the Gemini API's root, a gemini provider's default
// base_url without vertex.
const GeminiAPIBaseURL = "https://generativelanguage.googleapis.com/v1beta"

// DefaultBaseURL is the vendor's API root a native provider calls when
// base_url is not written: the Gemini API's, Vertex AI's for its project
// and location, or Bedrock's runtime in its region. Empty when a field
// it needs is missing (Validate names it) or the kind is not native.
func (p *Provider) DefaultBaseURL() string {
	switch p.Kind {
	case KindGemini:
		if p.Vertex == nil {
			return GeminiAPIBaseURL
		}
		v := p.Vertex
		if !gcpProject.MatchString(v.Project) || !gcpLocation.MatchString(v.Location) {
			return ""
		}
		host := v.Location + "-aiplatform.googleapis.com"
		if v.Location == "global" {
			host = "aiplatform.googleapis.com"
		}
		return fmt.Sprintf("https://%s/v1/projects/%s/locations/%s/publishers/google", host, v.Project, v.Location)
	case KindBedrock:
		if !awsRegion.MatchString(p.Region) {
			return ""
		}
		return "https://bedrock-runtime." + p.Region + ".amazonaws.com"
	}
	return ""
}

// nativeDefaults fills a native provider's base_url.
func (p *Provider) nativeDefaults() {
	if p.BaseURL == "" && !p.Pooled() {
		p.BaseURL = p.DefaultBaseURL()
	}
}

// nativeCredentialHeaders are the vendors' own credential headers.
var nativeCredentialHeaders = []string{"X-Goog-Api-Key", "X-Amz-Security-Token", "X-Amz-Date", "X-Amz-Content-Sha256"}

var (
	gcpProject  = regexp.MustCompile(`^[a-z][a-z0-9-]{4,28}[a-z0-9]$`)
	gcpLocation = regexp.MustCompile(`^[a-z][a-z0-9-]*[a-z0-9]$`)
	awsRegion   = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]+$`)
)

// validateNative checks the fields of the native kinds: each only for
// its kind, a gemini provider's one way in, a bedrock provider's region.
func validateNative(v *checker, at func(string) string, p Provider) {
	if p.Kind != KindGemini && p.Vertex != nil {
		v.add(at("vertex"), "applies only to kind: gemini (Vertex AI); remove it")
	}
	if p.Kind != KindBedrock {
		if p.Region != "" {
			v.add(at("region"), "applies only to kind: bedrock; remove it")
		}
		if p.AWSProfile != "" {
			v.add(at("aws_profile"), "applies only to kind: bedrock; remove it")
		}
	}
	if !p.Native() {
		return
	}
	for name := range p.Headers {
		if IsCredentialHeader(name) || slices.ContainsFunc(nativeCredentialHeaders, func(h string) bool { return strings.EqualFold(h, name) }) {
			v.add(at("headers."+name), "carries credentials, which a %s provider's signer sets on every call (from api_key_env, vertex, region and aws_profile); remove it", p.Kind)
		}
	}
	switch p.Kind {
	case KindGemini:
		switch vx := p.Vertex; {
		case vx == nil && p.APIKeyEnv == "":
			v.add(at("api_key_env"), "missing; kind gemini needs a way in: write api_key_env: GEMINI_API_KEY for the Gemini API, or vertex: {project: ..., location: ...} for Vertex AI")
		case vx != nil && p.APIKeyEnv != "":
			v.add(at("vertex"), "and api_key_env are two ways in; write api_key_env for the Gemini API, or vertex for Vertex AI (OAuth2), not both")
		case vx != nil:
			if vx.Project == "" {
				v.add(at("vertex.project"), "missing; write the Google Cloud project id, e.g. my-project")
			} else if !gcpProject.MatchString(vx.Project) {
				v.add(at("vertex.project"), "%s is not a Google Cloud project id (6 to 30 lower-case letters, digits and -, starting with a letter); write the id, not the project's name or number", short(vx.Project))
			}
			if vx.Location == "" {
				v.add(at("vertex.location"), "missing; write the region serving the models, e.g. us-central1, or global")
			} else if !gcpLocation.MatchString(vx.Location) {
				v.add(at("vertex.location"), "%s is not a Google Cloud location; write e.g. us-central1, europe-west4 or global", short(vx.Location))
			}
		}
	case KindBedrock:
		if p.APIKeyEnv != "" {
			v.add(at("api_key_env"), "kind bedrock signs its calls with AWS credentials (the environment, aws_profile, a web identity or an instance role), not a key; remove api_key_env")
		}
		if p.Region == "" {
			v.add(at("region"), "missing; write the AWS region serving the models, e.g. us-east-1")
		} else if !awsRegion.MatchString(p.Region) {
			v.add(at("region"), "%s is not an AWS region; write e.g. us-east-1 or eu-west-3", short(p.Region))
		}
	}
}
