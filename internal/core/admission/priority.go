package admission

import "fmt"

// Priority orders requests for admission. Lower values are more important.
type Priority uint8

const (
	// Critical is never shed by admission: health probes, declared keys.
	Critical Priority = iota
	// Interactive is a person waiting on the answer.
	Interactive
	// Background is batch work, shed first.
	Background

	numPriorities = 3
)

var priorityNames = [numPriorities]string{"critical", "interactive", "background"}

func (p Priority) String() string {
	if p < numPriorities {
		return priorityNames[p]
	}
	return fmt.Sprintf("priority(%d)", uint8(p))
}

// ParsePriority maps a class name to its Priority.
func ParsePriority(s string) (Priority, bool) {
	for i, n := range priorityNames {
		if n == s {
			return Priority(i), true
		}
	}
	return 0, false
}

// Priorities lists every class, most important first.
func Priorities() []Priority { return []Priority{Critical, Interactive, Background} }
