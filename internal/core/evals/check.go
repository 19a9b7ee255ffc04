package evals

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/wire/contract"
)

// Check judges one answer. Judge returns "" when the answer passes, and
// otherwise a one-line reason that quotes at most a short prefix of the
// answer.
type Check interface {
	Judge(answer string) (reason string)
	// Kind names the check: exact, contains, regex, json_schema, number.
	Kind() string
}

// NewCheck compiles a case's check. Config validation has already
// refused a case without exactly one check, a regex that does not
// compile and a schema that does not; the error here is for a config
// built in code.
func NewCheck(c config.EvalCase) (Check, error) {
	switch c.CheckKind() {
	case "exact":
		return exact(*c.Exact), nil
	case "contains":
		return contains(c.Contains), nil
	case "regex":
		re, err := regexp.Compile(c.Regex)
		if err != nil {
			return nil, fmt.Errorf("regex %q: %w", c.Regex, err)
		}
		return regex{re}, nil
	case "json_schema":
		s, err := contract.Compile([]byte(c.JSONSchema.JSON))
		if err != nil {
			return nil, err
		}
		return jsonSchema{s}, nil
	case "number":
		return number{want: *c.Number, tol: c.Tolerance}, nil
	}
	return nil, fmt.Errorf("no check: set one of exact, contains, regex, json_schema or number")
}

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

type jsonSchema struct{ s *contract.Schema }

func (j jsonSchema) Kind() string { return "json_schema" }
func (j jsonSchema) Judge(a string) string {
	if err := j.s.Check(unfence(a)); err != nil {
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
