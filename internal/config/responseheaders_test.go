package config

import (
	"strings"
	"testing"
)

func TestResponseHeaders(t *testing.T) {
	base := `providers: [{name: p, kind: openai, base_url: "http://127.0.0.1:1/v1"}]
models: [{name: m, targets: [{provider: p, model: x}]}]
`
	c, err := Parse([]byte(base), "r.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range ResponseHeaderNames {
		if !c.ResponseHeaders.Shows(h) {
			t.Errorf("%s hidden by default", h)
		}
	}
	c, err = Parse([]byte(base+"response_headers: {hide: [provider, queue_ms]}\n"), "r.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.ResponseHeaders.Shows("provider") || c.ResponseHeaders.Shows("queue_ms") || !c.ResponseHeaders.Shows("model") {
		t.Errorf("hide [provider, queue_ms]: %+v", c.ResponseHeaders)
	}
	_, err = Parse([]byte(base+"response_headers: {hide: [provider, cost]}\n"), "r.yaml")
	if err == nil || !strings.Contains(err.Error(), `response_headers.hide[1]: "cost" is not a response header; want one of provider, model, attempts, queue_ms, second_call, or all`) {
		t.Errorf("an unknown header: %v", err)
	}
}
