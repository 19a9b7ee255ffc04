package translate

import (
	"testing"

	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

func TestErrorBodies(t *testing.T) {
	cases := []struct {
		name       string
		toOpenAI   bool
		status     int
		body       string
		wantStatus int
		want       string
	}{
		{"overloaded 529 → 503", true, 529,
			`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}`,
			503, `{"error":{"message":"Overloaded","type":"overloaded_error","param":null,"code":null}}`},
		{"rate limit", true, 429,
			`{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`,
			429, `{"error":{"message":"Number of request tokens has exceeded your per-minute rate limit","type":"rate_limit_exceeded","param":null,"code":null}}`},
		{"invalid request", true, 400,
			`{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"}}`,
			400, `{"error":{"message":"max_tokens: Field required","type":"invalid_request_error","param":null,"code":null}}`},
		{"api error", true, 500,
			`{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`,
			500, `{"error":{"message":"Internal server error","type":"server_error","param":null,"code":null}}`},
		{"not Anthropic's shape: status only", true, 502, `<html>bad gateway</html>`,
			502, `{"error":{"message":"upstream error: Bad Gateway","type":"upstream_error","param":null,"code":null}}`},

		{"503 → 529 overloaded", false, 503,
			`{"error":{"message":"The engine is currently overloaded, please try again later","type":"server_error","param":null,"code":null}}`,
			529, `{"type":"error","error":{"type":"overloaded_error","message":"The engine is currently overloaded, please try again later"}}`},
		{"rate limit by code", false, 429,
			`{"error":{"message":"Rate limit reached for gpt-4o","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`,
			429, `{"type":"error","error":{"type":"rate_limit_error","message":"Rate limit reached for gpt-4o"}}`},
		{"bad key", false, 401,
			`{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
			401, `{"type":"error","error":{"type":"authentication_error","message":"Incorrect API key provided."}}`},
		{"unknown model", false, 404,
			`{"error":{"message":"The model 'x' does not exist","type":"invalid_request_error","param":"model","code":"model_not_found"}}`,
			404, `{"type":"error","error":{"type":"not_found_error","message":"The model 'x' does not exist"}}`},
		{"type only in code, odd status", false, 500,
			`{"error":{"message":"busy","type":null,"code":"overloaded_error"}}`,
			500, `{"type":"error","error":{"type":"overloaded_error","message":"busy"}}`},
		{"empty body", false, 504, ``,
			504, `{"type":"error","error":{"type":"timeout_error","message":"upstream error: Gateway Timeout"}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			from, to := protocol.OpenAI, protocol.Anthropic
			if tc.toOpenAI {
				from, to = to, from
			}
			status, body := ErrorBody(from, to, tc.status, []byte(tc.body))
			if status != tc.wantStatus {
				t.Errorf("status %d, want %d", status, tc.wantStatus)
			}
			sameJSON(t, body, []byte(tc.want))
		})
	}
	// Same dialect: untouched.
	if s, b := ErrorBody(protocol.OpenAI, protocol.OpenAI, 503, []byte("x")); s != 503 || string(b) != "x" {
		t.Errorf("same dialect changed: %d %s", s, b)
	}
}
