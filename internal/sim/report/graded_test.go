package report

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// The correct columns appear only when a row was graded, so a scenario
// that models neither answer quality nor evals prints the table it
// always did.
func TestCorrectColumnsOnlyWhenGraded(t *testing.T) {
	plain := &Row{Name: "plain", Duration: 10 * time.Second}
	plain.Counts[OK] = 100
	var b bytes.Buffer
	WriteTable(&b, []*Row{plain})
	if strings.Contains(b.String(), "correct") {
		t.Errorf("an ungraded table has a correct column:\n%s", b.String())
	}
	graded := &Row{Name: "graded", Duration: 10 * time.Second, Graded: true, Correct: 60, EvalDegraded: 1}
	graded.Counts[OK] = 100
	b.Reset()
	WriteTable(&b, []*Row{plain, graded})
	lines := strings.Split(b.String(), "\n")
	if !strings.Contains(lines[0], "correct  correct/s  eval-degraded") || !strings.Contains(lines[2], "60        6.0              1") {
		t.Errorf("graded table:\n%s", b.String())
	}
	s := Summarise([]*Row{plain, graded})
	if s[0].Correct != nil || s[1].Correct == nil || *s[1].Correct != 60 || s[1].CorrectPerSec != 6 || s[1].EvalDegraded != 1 {
		t.Errorf("summaries %+v %+v", s[0], s[1])
	}
}
