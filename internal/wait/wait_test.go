package wait

import (
	"context"
	"testing"
	"time"
)

func TestSleep(t *testing.T) {
	if !Sleep(context.Background(), time.Millisecond) || !Sleep(context.Background(), 0) {
		t.Error("an uncancelled wait reported false")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if Sleep(ctx, time.Hour) || Sleep(ctx, 0) {
		t.Error("a cancelled wait reported true")
	}
	if time.Since(start) > time.Second {
		t.Error("a cancelled wait did not return at once")
	}
}
