package gateway

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestLogWriterFlushesOnTimeAndOnClose(t *testing.T) {
	var out lockedBuffer
	w := NewLogWriter(&out, 20*time.Millisecond)
	w.Write([]byte("one\n"))
	deadline := time.Now().Add(2 * time.Second)
	for !strings.Contains(out.String(), "one") {
		if time.Now().After(deadline) {
			t.Fatal("a buffered line never reached the writer")
		}
		time.Sleep(5 * time.Millisecond)
	}
	w.Write([]byte("two\n"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if out.String() != "one\ntwo\n" {
		t.Fatalf("got %q", out.String())
	}
}
