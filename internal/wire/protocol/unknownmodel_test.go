package protocol

import (
	"strings"
	"testing"
)

// A 404 counts against the provider only when it says the model or the
// path is unknown; a 404 about what the body names is the client's.
func TestUnknownModel(t *testing.T) {
	for _, c := range []struct {
		name   string
		d      Dialect
		status int
		body   string
		want   bool
	}{
		{"openai model_not_found", OpenAI, 404, `{"error":{"message":"The model ` + "`gpt-9`" + ` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`, true},
		{"azure deployment", OpenAI, 404, `{"error":{"code":"DeploymentNotFound","message":"The API deployment for this resource does not exist."}}`, true},
		{"vllm", OpenAI, 404, `{"object":"error","message":"The model ` + "`llama-9`" + ` does not exist.","type":"NotFoundError","param":null,"code":404}`, true},
		{"anthropic model", Anthropic, 404, `{"type":"error","error":{"type":"not_found_error","message":"model: claude-9"}}`, true},
		{"a path the provider does not serve", OpenAI, 404, `404 page not found`, true},
		{"an empty body", OpenAI, 404, ``, true},
		{"responses: previous_response_id", OpenAI, 404, `{"error":{"message":"Previous response with id 'resp_123' not found.","type":"invalid_request_error","param":"previous_response_id","code":"previous_response_not_found"}}`, false},
		{"a file id", OpenAI, 404, `{"error":{"message":"No such File object: file-abc","type":"invalid_request_error","param":"id","code":null}}`, false},
		{"a vector store", OpenAI, 404, `{"error":{"message":"No vector store found with id 'vs_1'.","type":"invalid_request_error","code":null}}`, false},
		{"anthropic other resource", Anthropic, 404, `{"type":"error","error":{"type":"not_found_error","message":"File not found: file_011"}}`, false},
		{"the model named in another kind of message", OpenAI, 404, `{"error":{"message":"Tool resource for the model run was not found","code":null}}`, false},
		{"not a 404", OpenAI, 400, `{"error":{"code":"model_not_found"}}`, false},
		{"too big", OpenAI, 404, `{"error":{"code":"model_not_found","message":"` + strings.Repeat("x", MaxErrorBody) + `"}}`, false},
	} {
		if got := UnknownModel(c.d, c.status, []byte(c.body)); got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}
