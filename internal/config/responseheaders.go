package config

import (
	"fmt"
	"slices"
	"strings"
)

// ResponseHeaders are the X-Sluice-* headers that tell a client what
// happened to its request. Each is sent by default; Hide leaves some
// out, e.g. where provider names are not for clients to see:
//
//	response_headers: {hide: [provider, model]}
//
// or all of them: hide: [all].
type ResponseHeaders struct {
	Hide []string `yaml:"hide"`
}

// The response headers, by the names Hide takes:
//
//	provider     X-Sluice-Provider: the provider that answered
//	model        X-Sluice-Model: the upstream model that answered
//	attempts     X-Sluice-Attempts: upstream calls made (2 with a hedge,
//	             rescue or retry)
//	queue_ms     X-Sluice-Queue-Ms: time spent waiting for admission
//	second_call  X-Sluice-Second-Call: hedge, rescue or retry, when the
//	             answer came from one
var ResponseHeaderNames = []string{"provider", "model", "attempts", "queue_ms", "second_call"}

// Shows reports whether the response header called name is sent.
func (a ResponseHeaders) Shows(name string) bool {
	return !slices.Contains(a.Hide, name) && !slices.Contains(a.Hide, "all")
}

func (c *Config) validateResponseHeaders(v *checker) {
	for i, h := range c.ResponseHeaders.Hide {
		if h != "all" && !slices.Contains(ResponseHeaderNames, h) {
			v.add(fmt.Sprintf("response_headers.hide[%d]", i), "%q is not a response header; want one of %s, or all", h, strings.Join(ResponseHeaderNames, ", "))
		}
	}
}
