package cloudauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"github.com/sluice-gw/sluice/internal/wire/native"
)

// CloudPlatformScope is the OAuth2 scope Vertex AI's calls need.
const CloudPlatformScope = "https://www.googleapis.com/auth/cloud-platform"

// APIKey returns a Signer that sets header to key (the Gemini API's
// "x-goog-api-key"), and removes the Authorization and x-api-key headers
// a client's request may have brought, so no other credential reaches
// the provider.
func APIKey(header, key string) native.Signer {
	return apiKey{header: http.CanonicalHeaderKey(header), key: key}
}

type apiKey struct{ header, key string }

func (k apiKey) Sign(req *http.Request, _ []byte) error {
	if k.key == "" {
		return fmt.Errorf("cloudauth: the API key for %s is empty", k.header)
	}
	req.Header.Del("Authorization")
	req.Header.Del("X-Api-Key")
	req.Header.Set(k.header, k.key)
	native.UsedCredentials(req, k.key)
	return nil
}

// Google returns a Signer that sets "Authorization: Bearer <token>" with
// Google's OAuth2 access tokens for the cloud-platform scope, as Vertex
// AI wants them. With credentialsFile "", the credentials are Google's
// Application Default Credentials: the file GOOGLE_APPLICATION_CREDENTIALS
// names (a service account key, or an external_account file for workload
// identity federation), gcloud's own, or the metadata server on Google
// Cloud. Else credentialsFile is read: a service_account,
// external_account, authorized_user or impersonated_service_account
// file. Tokens are cached and refreshed shortly before they expire.
//
// ctx's values (such as an oauth2.HTTPClient) are used for every token
// fetch; its cancellation is not, since the Signer outlives it.
func Google(ctx context.Context, credentialsFile string) (native.Signer, error) {
	ctx = context.WithoutCancel(ctx)
	var creds *google.Credentials
	if credentialsFile == "" {
		c, err := google.FindDefaultCredentials(ctx, CloudPlatformScope)
		if err != nil {
			return nil, fmt.Errorf("cloudauth: no Google default credentials: %w", scrub(err))
		}
		creds = c
	} else {
		data, err := os.ReadFile(credentialsFile)
		if err != nil {
			return nil, fmt.Errorf("cloudauth: Google credentials: %w", err)
		}
		var head struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(data, &head); err != nil {
			return nil, fmt.Errorf("cloudauth: Google credentials file %s is not JSON", credentialsFile)
		}
		t := google.CredentialsType(head.Type)
		switch t {
		case google.ServiceAccount, google.ExternalAccount, google.AuthorizedUser, google.ImpersonatedServiceAccount:
		default:
			return nil, fmt.Errorf("cloudauth: Google credentials file %s has type %q: use a service_account, external_account, authorized_user or impersonated_service_account file", credentialsFile, head.Type)
		}
		c, err := google.CredentialsFromJSONWithType(ctx, data, t, CloudPlatformScope)
		if err != nil {
			return nil, fmt.Errorf("cloudauth: Google credentials file %s: %w", credentialsFile, scrub(err))
		}
		creds = c
	}
	return &googleSigner{ts: oauth2.ReuseTokenSource(nil, creds.TokenSource)}, nil
}

type googleSigner struct {
	ts oauth2.TokenSource // ReuseTokenSource: safe for concurrent use
}

func (g *googleSigner) Sign(req *http.Request, _ []byte) error {
	tok, err := g.ts.Token()
	if err != nil {
		return fmt.Errorf("cloudauth: Google access token: %w", scrub(err))
	}
	if tok.AccessToken == "" {
		return errors.New("cloudauth: Google access token: the token endpoint gave none")
	}
	req.Header.Del("X-Api-Key")
	req.Header.Del("X-Goog-Api-Key")
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	native.UsedCredentials(req, tok.AccessToken)
	return nil
}

// scrub keeps an oauth2 token endpoint's answer out of an error: its
// body may hold anything the endpoint chose to echo. What stays is the
// status and the OAuth2 error code.
func scrub(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		status := "no answer"
		if re.Response != nil {
			status = re.Response.Status
		}
		if re.ErrorCode != "" {
			return fmt.Errorf("the token endpoint answered %s (%s)", status, re.ErrorCode)
		}
		return fmt.Errorf("the token endpoint answered %s", status)
	}
	return err
}
