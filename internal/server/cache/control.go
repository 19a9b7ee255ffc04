package cache

import (
	"strings"
	"time"
)

// Control is what a request's Cache-Control header (RFC 9111, section
// 5.2.1) asks of the cache. The zero Control asks nothing.
type Control struct {
	// NoCache: the request is not answered from the cache; its provider
	// answers, and the answer replaces the entry (revalidation by
	// refetching: a provider has no conditional request).
	NoCache bool
	// NoStore: the answer is not stored. A stored answer may still
	// answer the request.
	NoStore bool
	// MaxAge, when HasMaxAge, is the oldest entry the client accepts:
	// max-age, or s-maxage, which wins when both are sent since Sluice
	// is a shared cache. A value that is not a number of seconds reads
	// as 0: no stored entry is young enough.
	MaxAge    time.Duration
	HasMaxAge bool
}

// maxDeltaSeconds caps a delta-seconds value, as RFC 9111 section
// 1.2.2 says: a larger one is read as this, about 68 years.
const maxDeltaSeconds = 1<<31 - 1

// ParseControl reads the Cache-Control values of a request (every
// header line, each a comma-separated list of directives). Names are
// read without regard to case, a value may be quoted, and directives
// Sluice does not know are ignored.
func ParseControl(values []string) Control {
	var c Control
	var maxAge, sMaxAge time.Duration
	var haveMax, haveS bool
	for _, v := range values {
		for _, d := range splitDirectives(v) {
			name, arg, _ := strings.Cut(d, "=")
			name = strings.ToLower(strings.TrimSpace(name))
			arg = unquote(strings.TrimSpace(arg))
			switch name {
			case "no-cache":
				c.NoCache = true
			case "no-store":
				c.NoStore = true
			case "max-age":
				maxAge, haveMax = deltaSeconds(arg), true
			case "s-maxage":
				sMaxAge, haveS = deltaSeconds(arg), true
			}
		}
	}
	switch {
	case haveS:
		c.MaxAge, c.HasMaxAge = sMaxAge, true
	case haveMax:
		c.MaxAge, c.HasMaxAge = maxAge, true
	}
	return c
}

// splitDirectives splits a header value at its commas, except those
// inside a quoted string.
func splitDirectives(v string) []string {
	var out []string
	start, quoted := 0, false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '\\' && quoted:
			i++
		case c == '"':
			quoted = !quoted
		case c == ',' && !quoted:
			out = append(out, v[start:i])
			start = i + 1
		}
	}
	return append(out, v[start:])
}

func unquote(s string) string {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return s
	}
	var b strings.Builder
	for i := 1; i < len(s)-1; i++ {
		if s[i] == '\\' && i+1 < len(s)-1 {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// deltaSeconds reads a delta-seconds value: digits only; anything else
// is 0.
func deltaSeconds(s string) time.Duration {
	if s == "" {
		return 0
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0
		}
		if n = n*10 + int64(c-'0'); n > maxDeltaSeconds {
			n = maxDeltaSeconds
		}
	}
	return time.Duration(n) * time.Second
}
