// Package cloudauth signs calls to cloud providers' native APIs
// (native.Signer): an API key in a header, Google's OAuth2 access tokens
// for Vertex AI (a service account, workload identity federation or the
// metadata server, through golang.org/x/oauth2/google), and AWS
// Signature V4 for Bedrock (the AWS SDK's signer and credential chain:
// environment, shared config and credentials files, web identity). It
// never writes a credential into a log, a metric or an error.
package cloudauth
