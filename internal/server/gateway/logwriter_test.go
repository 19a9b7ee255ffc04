package gateway_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/server/gateway"
)

func TestLogWriterFlushesOnTimeAndOnClose(t *testing.T) {
	var buf bytes.Buffer
	out := &syncWriter{w: &buf}
	text := func() string {
		out.mu.Lock()
		defer out.mu.Unlock()
		return buf.String()
	}
	w := gateway.NewLogWriter(out, 20*time.Millisecond)
	w.Write([]byte("one\n"))
	deadline := time.Now().Add(2 * time.Second)
	for !strings.Contains(text(), "one") {
		if time.Now().After(deadline) {
			t.Fatal("a buffered line never reached the writer")
		}
		time.Sleep(5 * time.Millisecond)
	}
	w.Write([]byte("two\n"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := text(); got != "one\ntwo\n" {
		t.Fatalf("got %q", got)
	}
}
