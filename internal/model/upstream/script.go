package upstream

import (
	"fmt"
	"strconv"
	"strings"
)

// UnmarshalYAML accepts 32, "16-64" or {min: 16, max: 64}. It has the
// signature a YAML decoder calls back without this package importing
// one, so the model stays free of file formats.
func (r *TokenRange) UnmarshalYAML(unmarshal func(any) error) error {
	var s string
	if err := unmarshal(&s); err == nil {
		v, err := ParseTokenRange(s)
		if err != nil {
			return fmt.Errorf("output_tokens: %v", err)
		}
		*r = v
		return nil
	}
	type plain TokenRange // drops this method, so decoding does not recurse
	return unmarshal((*plain)(r))
}

// ParseTokenRange reads "N", "MIN-MAX" or "MIN..MAX".
func ParseTokenRange(s string) (TokenRange, error) {
	lo, hi, ok := strings.Cut(s, "..")
	if !ok {
		lo, hi, ok = strings.Cut(s, "-")
	}
	low, err1 := strconv.Atoi(strings.TrimSpace(lo))
	high, err2 := low, error(nil)
	if ok {
		high, err2 = strconv.Atoi(strings.TrimSpace(hi))
	}
	if err1 != nil || err2 != nil || low < 0 || high < low {
		return TokenRange{}, fmt.Errorf("%q: want N or MIN-MAX token counts", s)
	}
	return TokenRange{Min: low, Max: high}, nil
}
