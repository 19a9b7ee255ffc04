// Package client is an http.RoundTripper for applications that call Sluice,
// or any OpenAI-compatible or Anthropic API, built so that its retries do
// not make an overload worse.
//
// A Transport wraps a base round tripper (http.DefaultTransport by default)
// and, for each request:
//
//   - adds an Idempotency-Key header (128 random bits, hex) unless one is
//     present, identical on every retry so the server can deduplicate;
//   - when the context has a deadline, sets X-Sluice-Timeout to the time left
//     (e.g. "1234ms") on each attempt, so Sluice can drop work nobody waits for;
//   - sheds the request locally with a *ThrottledError, without touching the
//     network, when the server has been refusing most recent requests
//     (adaptive throttling, below);
//   - retries connection errors and 408, 429, 529 and 5xx responses except
//     501 and 505, and a 409 with Retry-After (Sluice: the key's request is
//     still running on another replica), never other 4xx, nor an answer
//     that says x-should-retry: false; never when the body cannot be replayed
//     (no GetBody), the context is done, or the response was not retryable,
//     so a streaming response that began is never retried. A retryable
//     response's body is drained and closed before the retry;
//   - waits retry-after-ms, else Retry-After (seconds or HTTP-date), else
//     full-jitter exponential backoff uniform in [0, min(Cap, Base·2^(n−1))];
//     a server that asks for more than Cap, or a wait that would pass the
//     context deadline, gets the last response or error returned instead
//     of a retry (never one sooner than the server asked);
//   - spends one token of the retry budget per retry; with no token left the
//     last response is returned as is.
//
// # Defaults and why
//
// MaxAttempts 3 (two retries), Base 500ms, Cap 30s.
//
// RetryBudget 0.1 with a burst of 10: each request earns 0.1 token and each
// retry costs one, so retries add at most 10% to the load (plus a burst of
// 10), as recommended in Google's SRE book ("Handling Overload"). Without a
// budget, three attempts per call triple the load on a server exactly when
// it is failing from overload.
//
// Throttle K = 2 over a 2-minute window in 20 buckets: a new request is
// rejected locally with probability max(0, (requests − K·accepts) /
// (requests + 1)), the SRE book's adaptive throttling. requests counts
// every attempt sent plus the ones shed locally; accepts counts responses
// other than 429, 503, 529 and connection errors. With K = 2 the client
// keeps sending up to twice what the server accepts, enough to notice
// recovery quickly while cutting most wasted traffic. Only new requests
// are shed; retries are limited by the budget.
//
// # Use with the official SDKs
//
// Both SDKs accept an *http.Client. Disable their own retries with
// WithMaxRetries(0) so the transport owns retries: otherwise each SDK retry
// runs the transport's retries again, outside the budget and the throttle.
//
//	tr := client.New(client.Options{})
//	oc := openai.NewClient( // github.com/openai/openai-go/v3
//		option.WithBaseURL("http://sluice:8080/v1/"),
//		option.WithHTTPClient(&http.Client{Transport: tr}),
//		option.WithMaxRetries(0),
//	)
//	ac := anthropic.NewClient( // github.com/anthropics/anthropic-sdk-go/v2
//		aoption.WithBaseURL("http://sluice:8080/"),
//		aoption.WithHTTPClient(&http.Client{Transport: tr}),
//		aoption.WithMaxRetries(0),
//	)
//
// One Transport should be shared by all calls to the same service, since
// its budget and throttle statistics are per Transport. The SDKs send
// request bodies with GetBody set, so they are replayed on retry.
//
// Tests can make the transport deterministic with Options.Rand, Options.Now
// and Options.Sleep; Options.Hooks report attempts, retries, local
// shedding and budget exhaustion for metrics.
package client
