package config

import (
	"net/url"
)

// Tracing sends OpenTelemetry traces to an OTLP collector: one span per
// request, continuing the client's traceparent, and a child span per
// upstream call, so hedges, rescues and retries show. Off unless
// Endpoint is set. Like server settings, it changes only at a restart.
//
//	tracing: {endpoint: http://127.0.0.1:4318, sample_ratio: 0.1}
type Tracing struct {
	// Endpoint is the collector's OTLP/HTTP base URL; spans go to
	// {endpoint}/v1/traces. Empty: no tracing.
	Endpoint string `yaml:"endpoint"`
	// SampleRatio is the share of new traces recorded (default 1). A
	// request that arrives with a traceparent follows its caller's
	// sampling decision, as OpenTelemetry's parent-based sampler does.
	SampleRatio float64 `yaml:"sample_ratio"`
	// ParentSampledPerSecond caps the requests a second recorded because
	// their caller's traceparent said so (default 100). The header is
	// the client's, and a recorded request costs about 1.7 times the
	// gateway's work, so without a cap one client could make every one
	// of its requests cost that, whatever sample_ratio says; past the
	// cap its requests are not recorded.
	ParentSampledPerSecond float64 `yaml:"parent_sampled_per_second"`
	// ServiceName names the gateway in traces (default "sluice").
	ServiceName string `yaml:"service_name"`
	// Headers are sent with every export (a collector's API key); values
	// may use ${VAR}.
	Headers map[string]string `yaml:"headers"`
}

// On reports whether traces are sent.
func (t Tracing) On() bool { return t.Endpoint != "" }

// fill sets each field that unset says to default.
func (t *Tracing) fill(unset func(field string, zero bool) bool) {
	if unset("sample_ratio", t.SampleRatio == 0) {
		t.SampleRatio = 1
	}
	if unset("parent_sampled_per_second", t.ParentSampledPerSecond == 0) {
		t.ParentSampledPerSecond = 100
	}
	if unset("service_name", t.ServiceName == "") {
		t.ServiceName = "sluice"
	}
}

func (c *Config) validateTracing(v *checker) {
	t := c.Tracing
	if t.Endpoint != "" {
		u, err := url.Parse(t.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			v.add("tracing.endpoint", "%s is not an http(s) URL; write the collector's OTLP/HTTP address, e.g. http://127.0.0.1:4318", short(t.Endpoint))
		}
	}
	if t.SampleRatio <= 0 || t.SampleRatio > 1 {
		v.add("tracing.sample_ratio", "%v must be above 0 and at most 1; write e.g. 0.1 to record one new trace in ten", t.SampleRatio)
	}
	if t.ParentSampledPerSecond < 0 {
		v.add("tracing.parent_sampled_per_second", "%v must not be negative; write e.g. 100", t.ParentSampledPerSecond)
	}
}
