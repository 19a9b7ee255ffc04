package bedrock

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/wire/native"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

func TestFailure(t *testing.T) {
	for _, c := range []struct {
		status    int
		errType   string
		body      string
		want      int
		wantType  string
		wantInMsg string
	}{
		{429, "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/", `{"message":"Too many requests"}`, 429, "rate_limit_error", "ThrottlingException: Too many requests"},
		{429, "ServiceQuotaExceededException", `{"message":"quota"}`, 429, "rate_limit_error", "quota"},
		{429, "ModelNotReadyException", `{"message":"Model is not ready"}`, 529, "overloaded_error", "not ready"},
		{503, "ServiceUnavailableException", `{"Message":"unavailable"}`, 503, "overloaded_error", "unavailable"},
		{408, "ModelTimeoutException", `{"message":"took too long"}`, 408, "timeout_error", "took too long"},
		{400, "ValidationException", `{"message":"bad"}`, 400, "invalid_request_error", "bad"},
		{413, "ValidationException", `{"message":"too big"}`, 413, "request_too_large", "too big"},
		{403, "AccessDeniedException", `{"message":"no"}`, 403, "permission_error", "no"},
		{403, "UnrecognizedClientException", `{"message":"The security token included in the request is invalid."}`, 401, "authentication_error", "security token"},
		{403, "ExpiredTokenException", `{"message":"expired"}`, 401, "authentication_error", "expired"},
		{404, "ResourceNotFoundException", `{"message":"Could not resolve the foundation model"}`, 404, "not_found_error", "model: ResourceNotFoundException: Could not resolve"},
		{424, "ModelErrorException", `{"message":"model failed"}`, 502, "api_error", "model failed"},
		{500, "InternalServerException", `{"message":"oops"}`, 500, "api_error", "oops"},
		{502, "", `<html>bad gateway</html>`, 502, "api_error", "<html>bad gateway</html>"},
		{500, "", ``, 500, "api_error", "Bedrock answered 500"},
		{400, "", `{"__type":"com.amazon.coral.validate#ValidationException","message":"typed in the body"}`, 400, "invalid_request_error", "ValidationException: typed in the body"},
	} {
		h := http.Header{}
		if c.errType != "" {
			h.Set("X-Amzn-ErrorType", c.errType)
		}
		f := Kind().Codec.Failure(c.status, h, []byte(c.body))
		var v struct {
			Type  string
			Error struct{ Type, Message string }
		}
		if err := json.Unmarshal(f.Body, &v); err != nil || v.Type != "error" {
			t.Fatalf("%s: body %s", c.errType, f.Body)
		}
		if f.Status != c.want || v.Error.Type != c.wantType || !strings.Contains(v.Error.Message, c.wantInMsg) {
			t.Errorf("%d %s: %d %s %q", c.status, c.errType, f.Status, v.Error.Type, v.Error.Message)
		}
	}
}

func TestFailureUnknownModelIsRecognised(t *testing.T) {
	h := http.Header{"X-Amzn-Errortype": {"ResourceNotFoundException:http://internal.amazon.com/"}}
	f := Kind().Codec.Failure(404, h, []byte(`{"message":"Model not found"}`))
	if !protocol.UnknownModel(protocol.Anthropic, f.Status, f.Body) {
		t.Fatalf("not an unknown model: %s", f.Body)
	}
}

func TestFailureRetryAfter(t *testing.T) {
	for v, want := range map[string]time.Duration{"12": 12 * time.Second, "": 0, "-3": 0, "soon": 0, "Wed, 21 Oct 2015 07:28:00 GMT": 0} {
		f := Kind().Codec.Failure(429, http.Header{"Retry-After": {v}, "X-Amzn-Errortype": {"ThrottlingException"}}, nil)
		if f.RetryAfter != want {
			t.Errorf("Retry-After %q: %v", v, f.RetryAfter)
		}
	}
}

// A hub error through the Server and back through the Codec keeps its
// kind, and its words.
func TestFailureRoundTrip(t *testing.T) {
	for _, c := range []struct {
		status   int
		typ      string
		want     int
		wantType string
	}{
		{429, "rate_limit_error", 429, "rate_limit_error"},
		{529, "overloaded_error", 503, "overloaded_error"},
		{400, "invalid_request_error", 400, "invalid_request_error"},
		{401, "authentication_error", 401, "authentication_error"},
		{403, "permission_error", 403, "permission_error"},
		{404, "not_found_error", 404, "not_found_error"},
		{413, "request_too_large", 413, "request_too_large"},
		{500, "api_error", 500, "api_error"},
		{502, "", 502, "api_error"},
	} {
		hub := native.HubError(c.typ, "words of the provider")
		st, h, body := Kind().Server.Failure(c.status, http.Header{"Retry-After": {"3"}}, hub)
		if h.Get("Retry-After") != "3" {
			t.Errorf("%s: Retry-After lost", c.typ)
		}
		f := Kind().Codec.Failure(st, h, body)
		if f.Status != c.want || !bytes.Contains(f.Body, []byte(`"type":"`+c.wantType+`"`)) || !bytes.Contains(f.Body, []byte("words of the provider")) {
			t.Errorf("%d %s → %d %v → %d %s", c.status, c.typ, st, h, f.Status, f.Body)
		}
		if f.RetryAfter != 3*time.Second {
			t.Errorf("%s: retry after %v", c.typ, f.RetryAfter)
		}
	}
}
