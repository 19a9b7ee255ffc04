package gemini

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

func TestCodecFailure(t *testing.T) {
	cases := []struct {
		name   string
		status int
		header http.Header
		body   string
		want   int
		typ    string
		msg    string
		retry  time.Duration
	}{
		{"quota with RetryInfo", 429, nil, `{"error":{"code":429,"message":"Quota exceeded.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure"},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"37s"}]}}`,
			429, "rate_limit_error", "Quota exceeded.", 37 * time.Second},
		{"array form, fractional delay", 429, nil, `[{"error":{"code":429,"message":"slow down","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"1.5s"}]}}]`,
			429, "rate_limit_error", "slow down", 1500 * time.Millisecond},
		{"Retry-After header", 429, http.Header{"Retry-After": {"12"}}, `{"error":{"code":429,"message":"m","status":"RESOURCE_EXHAUSTED"}}`,
			429, "rate_limit_error", "m", 12 * time.Second},
		{"invalid argument", 400, nil, `{"error":{"code":400,"message":"Invalid JSON payload","status":"INVALID_ARGUMENT"}}`, 400, "invalid_request_error", "Invalid JSON payload", 0},
		{"failed precondition", 400, nil, `{"error":{"code":400,"message":"User location is not supported","status":"FAILED_PRECONDITION"}}`, 400, "invalid_request_error", "User location is not supported", 0},
		{"bad key", 400, nil, `{"error":{"code":400,"message":"API key not valid.","status":"UNAUTHENTICATED"}}`, 401, "authentication_error", "API key not valid.", 0},
		{"bad key as the Gemini API says it", 400, nil, `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com"}]}}`,
			401, "authentication_error", "API key not valid. Please pass a valid API key.", 0},
		{"permission", 403, nil, `{"error":{"code":403,"message":"denied","status":"PERMISSION_DENIED"}}`, 403, "permission_error", "denied", 0},
		{"unknown model", 404, nil, `{"error":{"code":404,"message":"models/gemini-9 is not found for API version v1beta","status":"NOT_FOUND"}}`, 404, "not_found_error", "model: models/gemini-9 is not found for API version v1beta", 0},
		{"other not found", 404, nil, `{"error":{"code":404,"message":"File xyz not found","status":"NOT_FOUND"}}`, 404, "not_found_error", "File xyz not found", 0},
		{"unavailable", 503, nil, `{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`, 529, "overloaded_error", "The model is overloaded.", 0},
		{"internal", 500, nil, `{"error":{"code":500,"message":"oops","status":"INTERNAL"}}`, 500, "api_error", "oops", 0},
		{"deadline", 504, nil, `{"error":{"code":504,"message":"Deadline expired","status":"DEADLINE_EXCEEDED"}}`, 504, "timeout_error", "Deadline expired", 0},
		{"not JSON 502", 502, nil, `<html>Bad Gateway</html>`, 502, "api_error", "Gemini answered 502 Bad Gateway", 0},
		{"cut body 503", 503, nil, `{"error":{"code":503,"mess`, 503, "overloaded_error", "Gemini answered 503 Service Unavailable", 0},
		{"not JSON 404: a path Gemini does not serve", 404, nil, `Not Found`, 404, "not_found_error", "model: Gemini answered 404 Not Found", 0},
		{"no status string", 413, nil, `{"error":{"code":413,"message":"too big"}}`, 413, "request_too_large", "too big", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := c.header
			if h == nil {
				h = http.Header{}
			}
			f := Codec{}.Failure(c.status, h, []byte(c.body))
			if f.Status != c.want || f.RetryAfter != c.retry {
				t.Fatalf("status %d retry %v, want %d %v", f.Status, f.RetryAfter, c.want, c.retry)
			}
			var b errorBody
			if err := json.Unmarshal(f.Body, &b); err != nil || b.Type != "error" {
				t.Fatalf("body %s", f.Body)
			}
			if b.Error.Type != c.typ || b.Error.Message != c.msg {
				t.Fatalf("error %+v, want %s %q", b.Error, c.typ, c.msg)
			}
			if unknown := protocol.UnknownModel(protocol.Anthropic, f.Status, f.Body); unknown != (len(c.msg) > 6 && c.msg[:6] == "model:") {
				t.Fatalf("UnknownModel = %v", unknown)
			}
		})
	}
}

func TestServerFailure(t *testing.T) {
	cases := []struct {
		status     int
		retryAfter string
		code       int
		gstatus    string
		retryDelay string
	}{
		{400, "", 400, "INVALID_ARGUMENT", ""},
		{401, "", 401, "UNAUTHENTICATED", ""},
		{403, "", 403, "PERMISSION_DENIED", ""},
		{404, "", 404, "NOT_FOUND", ""},
		{429, "37", 429, "RESOURCE_EXHAUSTED", "37s"},
		{500, "", 500, "INTERNAL", ""},
		{529, "3", 503, "UNAVAILABLE", "3s"},
		{503, "", 503, "UNAVAILABLE", ""},
		{408, "", 504, "DEADLINE_EXCEEDED", ""},
	}
	for _, c := range cases {
		h := http.Header{}
		if c.retryAfter != "" {
			h.Set("Retry-After", c.retryAfter)
		}
		hub := `{"type":"error","error":{"type":"x","message":"words of the hub"}}`
		code, hdr, body := Server{}.Failure(c.status, h, []byte(hub))
		if code != c.code || hdr.Get("Content-Type") == "" {
			t.Fatalf("%d: code %d, headers %v", c.status, code, hdr)
		}
		info := readError(body)
		if info == nil || info.Code != c.code || info.Status != c.gstatus || info.Message != "words of the hub" {
			t.Fatalf("%d: body %s", c.status, body)
		}
		if d := retryDelay(info.Details); (c.retryDelay == "") != (d == 0) {
			t.Fatalf("%d: retry delay %v in %s", c.status, d, body)
		}
		// And back: the codec reads the Server's error as it came.
		f := Codec{}.Failure(code, http.Header{}, body)
		wantBack := c.status
		if c.status == 503 {
			wantBack = 529
		}
		if c.status == 408 {
			wantBack = 504
		}
		if f.Status != wantBack {
			t.Fatalf("%d: back to %d", c.status, f.Status)
		}
		if c.retryAfter == "37" && f.RetryAfter != 37*time.Second {
			t.Fatalf("retry after %v", f.RetryAfter)
		}
	}
}
