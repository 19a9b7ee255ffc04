package evals

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Check judges one answer. Judge returns "" when the answer passes, and
// otherwise a one-line reason that quotes at most a short prefix of the
// answer.
type Check interface {
	Judge(answer string) (reason string)
	// Kind names the check: exact, contains, regex, json_schema, number.
	Kind() string
}

// The checks a case may declare (policy.EvalCheck builds them from a
// case's config).

// Exact passes an answer equal to want, white space around either aside.
func Exact(want string) Check { return exact(want) }

// Contains passes an answer that contains s.
func Contains(s string) Check { return contains(s) }

// Regex passes an answer re matches.
func Regex(re *regexp.Regexp) Check { return regex{re} }

// Number passes an answer whose first number is within tol of want.
func Number(want, tol float64) Check { return number{want: want, tol: tol} }

// Schema passes an answer whose JSON, out of any Markdown code fence,
// valid accepts; valid's error is the reason otherwise. The schema
// itself is compiled by the host (a JSON-schema library is no part of
// the core).
func Schema(valid func(doc []byte) error) Check { return jsonSchema{valid} }

// quoteLen bounds how much of an answer a reason quotes.
const quoteLen = 60

// quote renders the start of an answer for a reason.
func quote(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > quoteLen {
		cut := quoteLen
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return strconv.Quote(s)
}

type exact string

func (e exact) Kind() string { return "exact" }
func (e exact) Judge(a string) string {
	if strings.TrimSpace(a) == strings.TrimSpace(string(e)) {
		return ""
	}
	return fmt.Sprintf("want exactly %s, got %s", quote(string(e)), quote(a))
}

type contains string

func (c contains) Kind() string { return "contains" }
func (c contains) Judge(a string) string {
	if strings.Contains(a, string(c)) {
		return ""
	}
	return fmt.Sprintf("answer %s does not contain %s", quote(a), quote(string(c)))
}

type regex struct{ re *regexp.Regexp }

func (r regex) Kind() string { return "regex" }
func (r regex) Judge(a string) string {
	if r.re.MatchString(a) {
		return ""
	}
	return fmt.Sprintf("answer %s does not match %s", quote(a), quote(r.re.String()))
}

type jsonSchema struct{ valid func([]byte) error }

func (j jsonSchema) Kind() string { return "json_schema" }
func (j jsonSchema) Judge(a string) string {
	if err := j.valid(unfence(a)); err != nil {
		return "answer " + quote(a) + ": " + err.Error()
	}
	return ""
}

// unfence takes the JSON out of a Markdown code fence, the way models
// often wrap it.
func unfence(a string) []byte {
	b := bytes.TrimSpace([]byte(a))
	if !bytes.HasPrefix(b, []byte("```")) {
		return b
	}
	b = b[3:]
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[i+1:] // the fence's language tag
	}
	b, _ = bytes.CutSuffix(bytes.TrimSpace(b), []byte("```"))
	return bytes.TrimSpace(b)
}

type number struct{ want, tol float64 }

// firstNumber finds a number: an optional sign, digits with optional
// thousands separators, an optional fraction and exponent.
var firstNumber = regexp.MustCompile(`[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?|[-+]?\.\d+`)

func (n number) Kind() string { return "number" }
func (n number) Judge(a string) string {
	m := firstNumber.FindString(a)
	if m == "" {
		return fmt.Sprintf("answer %s holds no number", quote(a))
	}
	got, err := strconv.ParseFloat(strings.ReplaceAll(m, ",", ""), 64)
	if err != nil {
		return fmt.Sprintf("answer %s: %s is not a number", quote(a), m)
	}
	if math.Abs(got-n.want) <= n.tol {
		return ""
	}
	if n.tol == 0 {
		return fmt.Sprintf("want %v, got %v", n.want, got)
	}
	return fmt.Sprintf("want %v ± %v, got %v", n.want, n.tol, got)
}
