package gateway

import (
	"bufio"
	"io"
	"sync"
	"time"
)

// LogWriter batches log lines: at thousands of requests a second, one
// write(2) per request-log line is a quarter of the gateway's CPU. A
// line reaches the underlying writer within the flush interval, at once
// if the buffer fills, and Close flushes what is left. The cost is that
// a crash loses at most one interval of lines.
type LogWriter struct {
	mu   sync.Mutex
	bw   *bufio.Writer
	stop chan struct{}
	done chan struct{}
}

// NewLogWriter wraps w, flushing every interval.
func NewLogWriter(w io.Writer, interval time.Duration) *LogWriter {
	l := &LogWriter{bw: bufio.NewWriterSize(w, 64<<10), stop: make(chan struct{}), done: make(chan struct{})}
	go l.flusher(interval)
	return l
}

// Write buffers p; a slog handler writes one whole line per call.
func (l *LogWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bw.Write(p)
}

func (l *LogWriter) flusher(interval time.Duration) {
	defer close(l.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			l.mu.Lock()
			l.bw.Flush()
			l.mu.Unlock()
		case <-l.stop:
			return
		}
	}
}

// Close stops the flusher and flushes what is buffered.
func (l *LogWriter) Close() error {
	close(l.stop)
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bw.Flush()
}
