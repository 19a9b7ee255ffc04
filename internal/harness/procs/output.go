package procs

import (
	"bytes"
	"io"
	"os"
	"sync"
)

// sink is where a child's output goes. A restarted child writes to its
// predecessor's sink, so one Output tells the whole story.
type sink interface {
	// writer is what the child writes to, opened for one start; the
	// caller closes it once the child has it.
	writer(restart bool) (io.WriteCloser, error)
	String() string
	Tail(n int) string
	Path() string
}

// memory keeps output in a buffer that may be read while the child
// writes, bounded to about its last keep bytes when keep > 0, so a
// chatty gateway under ten thousand connections cannot fill the
// harness's memory.
type memory struct {
	keep int
	mu   sync.Mutex
	b    bytes.Buffer
}

func (m *memory) Write(p []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.keep > 0 && m.b.Len()+len(p) > 2*m.keep {
		drop := max(0, m.b.Len()-m.keep)
		tail := append([]byte(nil), m.b.Bytes()[drop:]...)
		m.b.Reset()
		m.b.Write(tail)
	}
	return m.b.Write(p)
}

// writer hands the buffer itself; closing it does nothing.
func (m *memory) writer(bool) (io.WriteCloser, error) { return nopCloser{m}, nil }

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

func (m *memory) String() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.b.String()
}

func (m *memory) Tail(n int) string {
	s := m.String()
	return s[max(0, len(s)-n):]
}

func (m *memory) Path() string { return "" }

// file writes output to a file the child holds directly: nothing in the
// harness copies it, so a replica's hour of warnings costs the harness no
// memory and no goroutine.
type file struct{ path string }

func (f file) writer(restart bool) (io.WriteCloser, error) {
	flag := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if restart {
		flag = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	}
	return os.OpenFile(f.path, flag, 0o644)
}

func (f file) String() string {
	b, _ := os.ReadFile(f.path)
	return string(b)
}

// Tail reads only the file's last n bytes.
func (f file) Tail(n int) string {
	fh, err := os.Open(f.path)
	if err != nil {
		return ""
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return ""
	}
	off := max(0, st.Size()-int64(n))
	buf := make([]byte, st.Size()-off)
	k, _ := fh.ReadAt(buf, off)
	return string(buf[:k])
}

func (f file) Path() string { return f.path }
