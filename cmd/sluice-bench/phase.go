package main

import "context"

// eachTarget runs one phase's measurement on each kind of target in
// turn: it skips a kind that is not available, starts the target behind
// its own fresh mock, and records a row carrying only a note when either
// fails. measure owns the started target and must stop it. It stops
// early when ctx ends.
func eachTarget[R any](ctx context.Context, e *env, kinds []kind, prof mockProfile,
	noted func(k kind, note string) R, measure func(k kind, t *target) R) []R {
	var rows []R
	for _, k := range kinds {
		if ctx.Err() != nil {
			break
		}
		if !e.available(k) {
			rows = append(rows, noted(k, "skipped: not available"))
			continue
		}
		t, err := e.start(ctx, k, prof, limits{})
		if err != nil {
			note := "failed to start: " + err.Error()
			e.logf("  %s: %s", k, note)
			rows = append(rows, noted(k, note))
			continue
		}
		rows = append(rows, measure(k, t))
	}
	return rows
}
