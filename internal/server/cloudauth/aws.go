package cloudauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/sluice-gw/sluice/internal/wire/native"
)

// bedrockService is the SigV4 signing name of Bedrock's runtime API
// (bedrock-runtime.REGION.amazonaws.com signs as "bedrock").
const bedrockService = "bedrock"

// errNoAWSCredentials is what a failed credential lookup says, whatever
// the chain's own error was: that error is not passed on, so no part of
// a credential, a token file or a config line can reach a log.
var errNoAWSCredentials = errors.New("aws: no usable credentials for Bedrock: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY " +
	"(and AWS_SESSION_TOKEN for temporary ones), or aws_profile naming a profile of the shared config and credentials files, " +
	"or AWS_WEB_IDENTITY_TOKEN_FILE with AWS_ROLE_ARN, or run where the container or EC2 instance metadata serves a role")

// AWS returns a Signer that signs Bedrock calls with AWS Signature V4,
// with credentials from the AWS SDK's default chain: the environment,
// the shared config and credentials files (profile, when not empty, is
// the one to read), web identity (AWS_WEB_IDENTITY_TOKEN_FILE and
// AWS_ROLE_ARN), then the container's or the EC2 instance's metadata.
// Credentials are looked up when a call is signed, through the chain's
// cache, so temporary ones are renewed before they expire. region, when
// empty, is the chain's (AWS_REGION, the profile's region); a signer
// with no region is an error.
func AWS(ctx context.Context, region, profile string) (native.Signer, error) {
	var opts []func(*config.LoadOptions) error
	if region != "" {
		opts = append(opts, config.WithRegion(region))
	}
	if profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(profile))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		// The loader's errors can quote the files it read: not passed on.
		if profile != "" {
			return nil, fmt.Errorf("aws: cannot load the shared config for profile %q: check that it exists in AWS_CONFIG_FILE or AWS_SHARED_CREDENTIALS_FILE (by default ~/.aws/config and ~/.aws/credentials)", profile)
		}
		return nil, errors.New("aws: cannot load the AWS config: check AWS_CONFIG_FILE, AWS_SHARED_CREDENTIALS_FILE and AWS_PROFILE")
	}
	if cfg.Region == "" {
		return nil, errors.New("aws: no region for Bedrock: set the provider's region, or AWS_REGION")
	}
	if cfg.Credentials == nil {
		return nil, errNoAWSCredentials
	}
	return &awsSigner{creds: cfg.Credentials, region: cfg.Region, signer: v4.NewSigner()}, nil
}

type awsSigner struct {
	creds  aws.CredentialsProvider
	region string
	signer *v4.Signer
}

// Sign signs req, whose body is body, for Bedrock in the signer's region.
// The gateway's own credential headers are removed first: SigV4's
// Authorization replaces them.
func (s *awsSigner) Sign(req *http.Request, body []byte) error {
	creds, err := s.creds.Retrieve(req.Context())
	if err != nil || !creds.HasKeys() {
		return errNoAWSCredentials
	}
	req.Header.Del("Authorization")
	req.Header.Del("X-Api-Key")
	req.Header.Del("X-Amz-Security-Token")
	req.Header.Del("X-Amz-Date")
	sum := sha256.Sum256(body)
	if err := s.signer.SignHTTP(req.Context(), creds, req, hex.EncodeToString(sum[:]), bedrockService, s.region, time.Now()); err != nil {
		// The signer fails only on a request it cannot read (its URL);
		// its words carry no credential, but are not needed either.
		return errors.New("aws: cannot sign the Bedrock request: its URL or headers are not well-formed")
	}
	// The secret never leaves, but the vendor knows it; the rest is in
	// the request's headers. The signature, made for this request alone,
	// is reported on its own (native.UsedCredentials).
	native.UsedCredentials(req, creds.AccessKeyID, creds.SecretAccessKey, creds.SessionToken)
	native.UsedCredentials(req, signatureOf(req.Header.Get("Authorization")))
	return nil
}

// signatureOf is the signature of a SigV4 Authorization header value:
// what follows its "Signature=", or "" when it has none.
func signatureOf(auth string) string {
	_, sig, ok := strings.Cut(auth, "Signature=")
	if !ok {
		return ""
	}
	if i := strings.IndexAny(sig, ", "); i >= 0 {
		sig = sig[:i]
	}
	return sig
}
