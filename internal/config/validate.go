package config

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/sluice-gw/sluice/internal/wire/translate"
)

var (
	providerName = regexp.MustCompile(`^[a-zA-Z0-9._-]+$`)
	envName      = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*$`)
)

// Validate checks c as the gateway will use it and returns every problem,
// each an *Error (joined when there are several). Parse calls it after
// applying defaults; a Config built in code gets no defaults, so it must
// set listen addresses, admission limits and timeouts itself.
func (c *Config) Validate() error {
	return joinErrors(c.src.fileName(), c.validate())
}

type checker struct {
	src  *source
	errs []*Error
}

func (v *checker) add(path, format string, args ...any) {
	if v.src.suppressed(path) {
		return
	}
	v.errs = append(v.errs, &Error{File: v.src.fileName(), Line: v.src.line(path), Field: path, Msg: fmt.Sprintf(format, args...)})
}

func (c *Config) validate() []*Error {
	v := &checker{src: c.src}
	v.listen("listen", c.Listen, DefaultListen)
	v.listen("admin_listen", c.AdminListen, DefaultAdminListen)
	if sameAddr(c.Listen, c.AdminListen) {
		v.add("admin_listen", "%s is the same address as listen; give it another port, e.g. %s", short(c.AdminListen), DefaultAdminListen)
	}
	c.validateAdmin(v)
	c.validateBrowser(v)
	c.validateProxies(v)
	if c.MaxBodyBytes <= 0 {
		v.add("max_body_bytes", "must be positive (0 would refuse every request body); write e.g. 10MiB")
	}
	c.validateServer(v)
	v.oneOf("log.format", c.Log.Format, "text", "json")
	v.oneOf("log.level", c.Log.Level, "debug", "info", "warn", "error")
	known := c.validateProviders(v)
	c.validateModels(v, known)
	c.validateContinuation(v)
	c.validateAdmission(v)
	c.validateKeys(v)
	c.validateStore(v)
	c.validateIdempotency(v)
	c.validateCache(v)
	c.validateResponseHeaders(v)
	c.validateTracing(v)
	c.validateLanes(v)
	validatePrices(v, c.Prices)
	c.validateUsage(v)
	c.validateSpend(v)
	c.validateEvals(v)
	for i := range c.Models {
		c.validateDegrade(v, i, &c.Models[i])
	}
	return v.errs
}

func (v *checker) listen(path, addr, example string) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		v.add(path, "%s is not host:port; write e.g. %s, or :%s for all interfaces", short(addr), example, example[strings.LastIndex(example, ":")+1:])
		return
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		v.add(path, "%s has port %s; the port must be a number up to 65535, e.g. %s", short(addr), short(port), example)
	}
}

// sameAddr reports whether two listen addresses would collide: same port,
// and the same host or either one listening on all interfaces.
func sameAddr(a, b string) bool {
	ha, pa, err1 := net.SplitHostPort(a)
	hb, pb, err2 := net.SplitHostPort(b)
	if err1 != nil || err2 != nil || pa != pb || pa == "0" {
		return false
	}
	wildcard := func(h string) bool { return h == "" || h == "0.0.0.0" || h == "::" }
	return ha == hb || wildcard(ha) || wildcard(hb)
}

func (v *checker) oneOf(path, got string, valid ...string) {
	for _, s := range valid {
		if got == s {
			return
		}
	}
	v.add(path, "%s is not valid; use %s", short(got), orList(valid))
}

// orList renders "a, b or c".
func orList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// validateProviders checks the providers and returns the names that
// targets may refer to, in file order.
func (c *Config) validateProviders(v *checker) []string {
	if len(c.Providers) == 0 {
		v.add("providers", "at least one provider is required; add a providers: list with name, kind and base_url")
	}
	var known []string
	firstAt := map[string]int{}
	for i, p := range c.Providers {
		at := func(f string) string { return fmt.Sprintf("providers[%d].%s", i, f) }
		validateUnsupported(v, at("on_unsupported"), p.OnUnsupported)
		j, dup := firstAt[p.Name]
		switch {
		case p.Name == "":
			v.add(at("name"), "missing; give each provider a unique name, e.g. openai")
		case !providerName.MatchString(p.Name):
			v.add(at("name"), "%s may only contain letters, digits, '.', '_' and '-'; write e.g. %s", short(p.Name), short(sanitizeName(p.Name)))
		case dup:
			v.add(at("name"), "%s is already the name of providers[%d]; give each provider a unique name", short(p.Name), j)
		}
		// Targets may refer to a badly spelled name; the name's own error is
		// enough, without a second one on every target using it.
		if p.Name != "" && !dup {
			firstAt[p.Name] = i
			known = append(known, p.Name)
		}
		switch {
		case p.Kind == "":
			v.add(at("kind"), "missing; write kind: openai, kind: anthropic, kind: azure, kind: gemini or kind: bedrock")
		case p.Kind == KindOpenAI, p.Kind == KindAnthropic, p.Kind == KindAzure, IsNativeKind(p.Kind):
		default:
			v.add(at("kind"), "%s is not a supported kind; use openai (also for vLLM and other OpenAI-compatible servers), anthropic, azure (Azure OpenAI), gemini (the Gemini API or Vertex AI) or bedrock (AWS Bedrock)", short(p.Kind))
		}
		switch {
		case p.Pooled():
			validatePool(v, at, p)
		case p.Native() && p.BaseURL == "":
			// Its default needs fields validateNative names.
		default:
			v.baseURL(at("base_url"), p.BaseURL)
		}
		validateAzure(v, at, p)
		validateNative(v, at, p)
		if p.Responses != nil && *p.Responses && (p.Kind == KindAnthropic || p.Kind == KindAzure || p.Native()) {
			v.add(at("responses"), "the Responses API is passed through only to kind openai providers, never translated; remove it, or write responses: false")
		}
		// The value is never echoed: a key pasted here by mistake must not
		// end up in logs.
		if p.APIKeyEnv != "" && !envName.MatchString(p.APIKeyEnv) {
			v.add(at("api_key_env"), "must be the name of an environment variable (upper-case letters, digits and _, not starting with a digit), not the key itself; write e.g. OPENAI_API_KEY")
		}
		if p.Timeout <= 0 {
			v.add(at("timeout"), "must be positive; write e.g. 60s, or remove it for the default of %s", Duration(DefaultProviderTimeout))
		}
		if p.MaxInFlight < 0 {
			v.add(at("max_in_flight"), "%d is negative; write 0 for no per-provider limit, or a positive number", p.MaxInFlight)
		}
		validateLimit(v, at("limit"), p.Limit)
		validateLimits(v, at("limits"), p.Limits)
		for m, l := range p.ModelLimits {
			validateLimits(v, at("model_limits."+m), l)
		}
		validateHeaders(v, at, p)
		if b := p.Breaker; b != nil && b.Probe != "" {
			v.oneOf(at("breaker.probe"), b.Probe, ProbeTraffic, ProbeSynthetic)
		}
		if b := p.Breaker; b != nil && b.ConsecutiveErrors < -1 {
			v.add(at("breaker.consecutive_errors"), "%d is below -1; write -1 to turn the rule off, 0 for the default", b.ConsecutiveErrors)
		}
	}
	return known
}

// validateUnsupported checks an on_unsupported, which translate reads.
func validateUnsupported(v *checker, path, got string) {
	if _, err := translate.ParseUnsupported(got); err != nil {
		v.add(path, "%s is not valid; use drop or refuse, or remove it to drop only what leaves the answer's shape alone (a seed, top_k) and refuse the rest", short(got))
	}
}

var azureAPIVersion = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}(-preview)?$`)

// validateAzure checks what only an azure provider has: its api_version,
// and a base_url that is the resource's endpoint, since the gateway adds
// /openai/deployments/{deployment} itself.
func validateAzure(v *checker, at func(string) string, p Provider) {
	if p.Kind != KindAzure {
		if p.APIVersion != "" {
			v.add(at("api_version"), "applies only to kind: azure; remove it")
		}
		return
	}
	if !azureAPIVersion.MatchString(p.APIVersion) {
		v.add(at("api_version"), "%s is not an Azure OpenAI api-version; write a date such as %s (or YYYY-MM-DD-preview), or remove it for that default", short(p.APIVersion), DefaultAzureAPIVersion)
	}
	if u, err := url.Parse(p.BaseURL); err == nil && u.Host != "" {
		if path := strings.TrimRight(u.Path, "/"); strings.HasSuffix(path, "/openai") || strings.Contains(path, "/openai/") || strings.HasSuffix(path, "/v1") {
			v.add(at("base_url"), "%s has an API path; for kind azure write only the resource's endpoint, e.g. %s://%s, and name each deployment as a target's model", short(p.BaseURL), u.Scheme, u.Host)
		}
	}
}

// validatePool checks a pooled provider's replicas and pool settings.
func validatePool(v *checker, at func(string) string, p Provider) {
	if p.BaseURL != "" {
		v.add(at("base_url"), "a provider with replicas takes no base_url; give each replica its own base_url, or remove replicas")
	}
	if p.Kind != KindOpenAI {
		v.add(at("replicas"), "a pool is of self-hosted OpenAI-compatible servers (vLLM, SGLang); kind %s takes one base_url", short(p.Kind))
	}
	names := map[string]int{}
	for j, r := range p.Replicas {
		rat := func(f string) string { return at(fmt.Sprintf("replicas[%d].%s", j, f)) }
		v.baseURL(rat("base_url"), r.BaseURL)
		if r.MetricsURL != "" {
			v.metricsURL(rat("metrics_url"), r.MetricsURL)
		}
		if r.MaxInFlight < 0 {
			v.add(rat("max_in_flight"), "%d is negative; write 0 for the provider's max_in_flight, or a positive number", r.MaxInFlight)
		}
		switch k, dup := names[r.Name]; {
		case !providerName.MatchString(r.Name):
			v.add(rat("name"), "%s may only contain letters, digits, '.', '_' and '-'; write e.g. %s", short(r.Name), short(sanitizeName(r.Name)))
		case dup:
			v.add(rat("name"), "%s is already the name of replicas[%d]; give each replica a unique name", short(r.Name), k)
		default:
			names[r.Name] = j
		}
	}
	pl := p.Pool
	v.oneOf(at("pool.balance"), pl.Balance, PoolLeastLoaded, PoolRoundRobin)
	if pl.ScrapeInterval <= 0 {
		v.add(at("pool.scrape_interval"), "must be positive; write e.g. 1s, or remove it for the default of %s", Duration(DefaultScrapeInterval))
	}
	if pl.StaleAfter < pl.ScrapeInterval {
		v.add(at("pool.stale_after"), "%s is shorter than scrape_interval (%s), so every replica would be drained between scrapes; write at least the interval, e.g. %s", pl.StaleAfter, pl.ScrapeInterval, 3*pl.ScrapeInterval)
	}
	if pl.MaxWaiting < 0 {
		v.add(at("pool.max_waiting"), "%d is negative; write 0 to drain a replica whose queue is longer than its batch, or a positive number of waiting requests", pl.MaxWaiting)
	}
}

// metricsURL checks a replica's metrics endpoint: an absolute http(s)
// URL with no credentials.
func (v *checker) metricsURL(path, raw string) {
	u, err := url.Parse(raw)
	switch {
	case err != nil || !u.IsAbs() || u.Host == "":
		v.add(path, "%s is not an absolute http(s) URL; write e.g. http://10.0.0.5:8000/metrics", short(raw))
	case u.Scheme != "http" && u.Scheme != "https":
		v.add(path, "%s has scheme %s; use http or https", short(raw), short(u.Scheme))
	case u.User != nil:
		v.add(path, "must not contain credentials")
	}
}

func (c *Config) validateServer(v *checker) {
	sv := c.Server
	for _, n := range []struct {
		path string
		v    int64
		eg   string
	}{
		{"server.max_connections", int64(sv.MaxConnections), "10000"},
		{"server.max_header_bytes", int64(sv.MaxHeaderBytes), "64KiB"},
		{"server.max_headers", int64(sv.MaxHeaders), "100"},
		{"server.max_body_bytes_in_flight", int64(sv.MaxBodyBytesInFlight), "128MiB"},
		{"server.max_messages", int64(sv.MaxMessages), "100000"},
		{"server.max_json_depth", int64(sv.MaxJSONDepth), "128"},
	} {
		if n.v <= 0 {
			v.add(n.path, "must be positive; write e.g. %s, or remove it for the default", n.eg)
		}
	}
	// A body is held twice over for a moment, while its blocks are
	// joined into one piece (gateway/body.go).
	if sv.MaxBodyBytesInFlight > 0 && sv.MaxBodyBytesInFlight < 2*c.MaxBodyBytes {
		v.add("server.max_body_bytes_in_flight", "is smaller than max_body_bytes × 2 (%d bytes): a body is held twice over while it is joined into one piece, so a largest allowed body could never be read; raise it to at least that", 2*c.MaxBodyBytes)
	}
	switch pc := sv.MaxBodyBytesPerClient; {
	case pc < 0:
		v.add("server.max_body_bytes_per_client", "must not be negative; write e.g. 32MiB, or remove it for the default (a quarter of max_body_bytes_in_flight)")
	case pc > 0 && pc < 2*c.MaxBodyBytes:
		v.add("server.max_body_bytes_per_client", "is smaller than max_body_bytes × 2 (%d bytes): a body is held twice over while it is joined into one piece, so a client could never send a largest allowed body; raise it to at least that, or remove it for the default", 2*c.MaxBodyBytes)
	}
	for _, d := range []struct {
		path string
		v    Duration
	}{
		{"server.read_header_timeout", sv.ReadHeaderTimeout}, {"server.body_read_timeout", sv.BodyReadTimeout},
		{"server.write_timeout", sv.WriteTimeout}, {"server.stream_idle_timeout", sv.StreamIdleTimeout},
		{"server.idle_timeout", sv.IdleTimeout}, {"server.shutdown_grace", sv.ShutdownGrace},
	} {
		if d.v <= 0 {
			v.add(d.path, "must be positive; write e.g. 30s, or remove it for the default")
		}
	}
}

// credentialHeaders carry a client's or the gateway's credentials.
var credentialHeaders = []string{"Authorization", "X-Api-Key", "Api-Key", "Proxy-Authorization", "Cookie"}

// IsCredentialHeader reports whether a header carries credentials: its
// value is a secret wherever the gateway sets it.
func IsCredentialHeader(name string) bool {
	return slices.ContainsFunc(credentialHeaders, func(h string) bool { return strings.EqualFold(h, name) })
}

// framingHeaders belong to one hop: the gateway writes its own.
var framingHeaders = []string{"Host", "Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive", "Te", "Trailer", "Upgrade", "Proxy-Connection"}

var headerToken = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

func validateHeaders(v *checker, at func(string) string, p Provider) {
	for name, val := range p.Headers {
		path := at("headers." + name)
		switch {
		case !headerToken.MatchString(name):
			v.add(path, "%s is not a valid header name; use letters, digits and -", short(name))
		case slices.ContainsFunc(framingHeaders, func(h string) bool { return strings.EqualFold(h, name) }):
			v.add(path, "%s is set by the gateway for each connection; remove it", name)
		case p.APIKeyEnv != "" && slices.ContainsFunc(credentialHeaders, func(h string) bool { return strings.EqualFold(h, name) }):
			v.add(path, "carries credentials, and api_key_env already supplies the provider's key; remove one of them")
		}
		// The value is never echoed: it may be a credential.
		if strings.ContainsAny(val, "\r\n\x00") {
			v.add(path, "the value contains a line break or NUL, which would split the request's headers; remove it")
		}
	}
	for i, name := range p.ForwardHeaders {
		path := at(fmt.Sprintf("forward_headers[%d]", i))
		switch {
		case !headerToken.MatchString(name):
			v.add(path, "%s is not a valid header name; use letters, digits and -", short(name))
		case slices.ContainsFunc(credentialHeaders, func(h string) bool { return strings.EqualFold(h, name) }):
			v.add(path, "%s carries the client's credentials, which never reach a provider (the gateway sends the provider's own key); remove it", name)
		case slices.ContainsFunc(framingHeaders, func(h string) bool { return strings.EqualFold(h, name) }):
			v.add(path, "%s belongs to one connection and is never forwarded; remove it", name)
		}
	}
}

// CheckEnv checks what the configuration needs from the environment at
// start: every provider's api_key_env must name a variable that is set,
// or the gateway would send its calls with no key and report every
// provider's 401 as an outage. Load and Parse do not check it (a
// scenario file names providers the simulator never calls); serve does.
func (c *Config) CheckEnv() error {
	var errs []*Error
	for i, p := range c.Providers {
		if p.APIKeyEnv != "" && os.Getenv(p.APIKeyEnv) == "" {
			path := fmt.Sprintf("providers[%d].api_key_env", i)
			errs = append(errs, &Error{File: c.src.fileName(), Line: c.src.line(path), Field: path,
				Msg: fmt.Sprintf("environment variable %s is not set (or is empty); export the provider's key in it, or remove api_key_env if the provider needs no key", p.APIKeyEnv)})
		}
	}
	if e := c.checkAdminEnv(); e != nil {
		errs = append(errs, e)
	}
	return joinErrors(c.src.fileName(), errs)
}

// LimitAlgorithms and LimitSignals are the values providers[].limit
// accepts for algorithm and signal.
var (
	LimitAlgorithms = []string{"fixed", "aimd", "windowed_aimd", "gradient2", "vegas"}
	LimitSignals    = []string{"auto", "ttft", "tpot", "total"}
)

func validateLimit(v *checker, at string, l Limit) {
	if l.Algorithm != "" && !slices.Contains(LimitAlgorithms, l.Algorithm) {
		v.add(at+".algorithm", "%s is not an algorithm; use one of %s", short(l.Algorithm), strings.Join(LimitAlgorithms, ", "))
	}
	if l.Signal != "" && !slices.Contains(LimitSignals, l.Signal) {
		v.add(at+".signal", "%s is not a signal; use one of %s", short(l.Signal), strings.Join(LimitSignals, ", "))
	}
	for _, f := range []struct {
		name string
		neg  bool
	}{
		{"slow_threshold", l.SlowThreshold < 0}, {"initial", l.Initial < 0}, {"min", l.Min < 0}, {"max", l.Max < 0},
		{"window", l.Window < 0}, {"cooldown", l.Cooldown < 0}, {"latency_threshold", l.LatencyThreshold < 0},
		{"queue_age_threshold", l.QueueAgeThreshold < 0}, {"long_window", l.LongWindow < 0}, {"queue_size", l.QueueSize < 0},
		{"tolerance", l.Tolerance < 0}, {"smoothing", l.Smoothing < 0},
	} {
		if f.neg {
			v.add(at+"."+f.name, "must not be negative; remove it for the algorithm's default")
		}
	}
	if l.Max > 0 && l.Min > l.Max {
		v.add(at+".min", "%d is above max (%d); write a min no larger than max", l.Min, l.Max)
	}
	if l.Backoff != 0 && (l.Backoff <= 0 || l.Backoff >= 1) {
		v.add(at+".backoff", "%g must be between 0 and 1 (exclusive); write e.g. 0.9", l.Backoff)
	}
}

func sanitizeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 128 && providerName.MatchString(string(r)) {
			return r
		}
		return '-'
	}, s)
}

func (v *checker) baseURL(path, raw string) {
	const example = "https://api.openai.com/v1"
	if raw == "" {
		v.add(path, "missing; write the API root including its version, e.g. %s", example)
		return
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || !u.IsAbs() || u.Host == "":
		fix := example
		if !strings.Contains(raw, "://") && bare(raw) == raw {
			fix = "https://" + raw
		}
		v.add(path, "%s is not an absolute http(s) URL; write e.g. %s", short(raw), fix)
	case u.Scheme != "http" && u.Scheme != "https":
		v.add(path, "%s has scheme %s; use http or https", short(raw), short(u.Scheme))
	case u.User != nil:
		// Do not echo: the user info may be a credential.
		v.add(path, "must not contain credentials; put the key in an environment variable and name it in api_key_env")
	case u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(raw, "?"):
		v.add(path, "%s has a query or fragment, which would end up in the middle of request paths; remove it", short(raw))
	}
}

func (c *Config) validateModels(v *checker, known []string) {
	if len(c.Models) == 0 {
		v.add("models", "at least one model is required; add a models: list mapping each client-facing name to targets")
	}
	isKnown := map[string]bool{}
	for _, n := range known {
		isKnown[n] = true
	}
	knownList := "known providers: " + strings.Join(known, ", ")
	if len(known) == 0 {
		knownList = "no providers are configured yet; add one under providers:"
	}
	firstAt := map[string]int{}
	for i, m := range c.Models {
		at := func(f string) string { return fmt.Sprintf("models[%d].%s", i, f) }
		switch j, dup := firstAt[m.Name]; {
		case m.Name == "":
			v.add(at("name"), "missing; write the model name clients will send, e.g. gpt-4o")
		case dup:
			v.add(at("name"), "%s is already the name of models[%d]; give each model a unique name", short(m.Name), j)
		default:
			firstAt[m.Name] = i
		}
		// 0s is "no override", so a marshalled config parses again.
		if m.HedgeAfter.Fixed < 0 {
			v.add(at("hedge_after"), "must not be negative; write e.g. 2s or p95, or remove it for no hedging")
		}
		if m.Timeout < 0 {
			v.add(at("timeout"), "must not be negative; write e.g. 30s, or remove it to use the provider's timeout")
		}
		if a := m.Validation.OnInvalid; a != "" {
			v.oneOf(at("validation.on_invalid"), a, OnInvalidRetry, OnInvalidAnnotate, OnInvalidRefuse)
		}
		validateUnsupported(v, at("on_unsupported"), m.OnUnsupported)
		if len(m.Targets) == 0 {
			v.add(at("targets"), "at least one target is required; add - provider: <name> and model: <upstream model name>")
		}
		for k, t := range m.Targets {
			tat := func(f string) string { return fmt.Sprintf("models[%d].targets[%d].%s", i, k, f) }
			switch {
			case t.Provider == "":
				v.add(tat("provider"), "missing; set it to a provider's name; %s", knownList)
			case !isKnown[t.Provider]:
				v.add(tat("provider"), "%s is not a configured provider; %s", short(t.Provider), knownList)
			}
			if t.Model == "" {
				v.add(tat("model"), "missing; write the model name the provider expects, e.g. gpt-4o")
			}
			// Targets may mix kinds: the gateway translates a request
			// between the OpenAI and Anthropic APIs for a target whose
			// kind differs from the client's endpoint (package translate).
		}
	}
}

func (c *Config) validateAdmission(v *checker) {
	if h := c.Hedging; h.Budget < 0 || h.Budget > 1 {
		v.add("hedging.budget", "%g must be a share of requests between 0 and 1; write e.g. 0.05", h.Budget)
	}
	if c.Hedging.Burst < 0 {
		v.add("hedging.burst", "must not be negative; write e.g. 10")
	}
	c.validateFirstToken(v)
	if r := c.Retries; r.Budget < 0 || r.Budget > 1 || r.Burst < 0 {
		v.add("retries", "budget must be a share of requests between 0 and 1 (e.g. 0.1) and burst not negative")
	}
	if c.Retries.WaitMax < 0 {
		v.add("retries.wait_max", "must not be negative; write e.g. 3s, or 0 for the default")
	}
	a := &c.Admission
	if a.CriticalKeysEnv != "" && !envName.MatchString(a.CriticalKeysEnv) {
		v.add("admission.critical_keys_env", "must be the name of an environment variable (upper-case letters, digits and _), not the keys themselves; write e.g. SLUICE_CRITICAL_KEYS")
	}
	if a.MaxInFlight < 1 {
		v.add("admission.max_in_flight", "must be at least 1; write e.g. %d", DefaultMaxInFlight)
	}
	q := a.Queue
	if q.MaxDepth < 0 {
		v.add("admission.queue.max_depth", "%d is negative; write 0 to turn queueing off, or a positive number", q.MaxDepth)
	}
	if q.MaxWait <= 0 && q.MaxDepth > 0 {
		v.add("admission.queue.max_wait", "must be positive while requests can queue; write e.g. 5s, or set max_depth: 0 to turn queueing off")
	}
	switch {
	case q.HoldBudget < 0:
		v.add("admission.queue.hold_budget", "%s is negative; write e.g. 1s, or leave it out for the default (1s)", q.HoldBudget.D())
	case q.MaxWait > 0 && q.HoldBudget > q.MaxWait:
		v.add("admission.queue.hold_budget", "%s is longer than admission.queue.max_wait (%s), which ends every wait in the queue; write at most %s", q.HoldBudget.D(), q.MaxWait.D(), q.MaxWait.D())
	}
	v.oneOf("admission.default_priority", a.DefaultPriority, PriorityCritical, PriorityInteractive, PriorityBackground)
	pr := a.Priorities
	if r := pr.Critical.Reserved; r < 0 {
		v.add("admission.priorities.critical.reserved", "%d is negative; write 0 for no reservation, or a positive number", r)
	} else if r >= a.MaxInFlight && a.MaxInFlight >= 1 {
		v.add("admission.priorities.critical.reserved", "%d holds back every in-flight slot (admission.max_in_flight is %d), so other classes could never run; write at most %d",
			r, a.MaxInFlight, a.MaxInFlight-1)
	}
	for _, cl := range []struct {
		name string
		c    Class
	}{{PriorityCritical, pr.Critical}, {PriorityInteractive, pr.Interactive}, {PriorityBackground, pr.Background}} {
		at := "admission.priorities." + cl.name + "."
		if cl.name != PriorityCritical && cl.c.Reserved != 0 {
			v.add(at+"reserved", "only critical can reserve capacity; move it to admission.priorities.critical.reserved, or remove it")
		}
		switch mq := cl.c.MaxQueued; {
		case mq < 0:
			v.add(at+"max_queued", "%d is negative; write 0 to be bounded only by queue.max_depth, or a positive number", mq)
		case mq > q.MaxDepth && q.MaxDepth >= 0:
			v.add(at+"max_queued", "%d is more than admission.queue.max_depth (%d); lower it to at most %d, or raise max_depth", mq, q.MaxDepth, q.MaxDepth)
		}
	}
}
