package admission

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestRejectionError(t *testing.T) {
	var err error = &Rejection{Reason: ReasonQueueFull, Priority: Background, RetryAfter: 3 * time.Second}
	wrapped := fmt.Errorf("proxy: %w", err)
	if !errors.Is(wrapped, ErrRejected) {
		t.Fatal("a wrapped Rejection does not match ErrRejected")
	}
	//lint:ignore SA1032 the point is that an unrelated error does not match
	if errors.Is(context.Canceled, ErrRejected) {
		t.Fatal("context.Canceled matches ErrRejected")
	}
	if got := err.Error(); got != "admission: rejected background request: queue_full (retry after 3s)" {
		t.Fatalf("Error() = %q", got)
	}
}
