package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"
)

// readBlocks charges every buffer before it makes it, and so at its
// busiest moment, the budget holds at least every byte it allocated:
// the blocks, and the whole body they are joined into (the peak is the
// two together). Whatever the shape of the body: declared or chunked,
// small or large, on a block's edge or not, in whatever pieces it
// arrives.
func TestReadBlocksChargesEveryAllocation(t *testing.T) {
	const maxBody = 4 << 20
	sizes := []int64{0, 1, 100, firstBodyChunk - 1, firstBodyChunk, firstBodyChunk + 1, 6000, 3 * firstBodyChunk,
		maxBodyBlock, maxBodyBlock + 1, 200_000, 1 << 20, 3<<20 + 7, maxBody}
	for _, n := range sizes {
		for _, declared := range []bool{true, false} {
			for _, pieces := range []string{"whole", "bytes"} {
				if pieces == "bytes" && n > 200_000 {
					continue // byte by byte is for the edges; large bodies take long
				}
				t.Run(fmt.Sprintf("%d/declared=%v/%s", n, declared, pieces), func(t *testing.T) {
					src := bytes.Repeat([]byte("x"), int(n))
					var rd io.Reader = bytes.NewReader(src)
					if pieces == "bytes" {
						rd = iotest.OneByteReader(rd)
					}
					cl := int64(-1)
					if declared {
						cl = n
					}
					b := &byteBudget{limit: 4 * maxBody}
					h := &bodyHold{}
					var before, after runtime.MemStats
					runtime.GC()
					runtime.ReadMemStats(&before)
					body, err := readBlocks(rd, cl, maxBody, b, h, 2*maxBody)
					runtime.ReadMemStats(&after)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(body, src) {
						t.Fatalf("read %d bytes, not the %d sent", len(body), n)
					}
					if h.n != int64(cap(body)) || b.used.Load() != h.n {
						t.Errorf("holds %d (budget %d) for a body of capacity %d; want exactly its capacity", h.n, b.used.Load(), cap(body))
					}
					if slack := int64(cap(body)) - n; slack > firstBodyChunk {
						t.Errorf("a %d-byte body is kept in %d bytes", n, cap(body))
					}
					// Besides the buffers, the list of blocks: 24 bytes a
					// block, in a slice that doubles.
					allocated := int64(after.TotalAlloc - before.TotalAlloc)
					if allocated > b.highWater()+16<<10 {
						t.Errorf("allocated %d bytes; the budget held at most %d", allocated, b.highWater())
					}
					// At the join: the blocks (the body, and what is left of
					// the last one) and the whole; never past twice the
					// largest body.
					m := max(n, firstBodyChunk)
					if hw := b.highWater(); hw > 2*m+min(m, maxBodyBlock) || hw > 2*maxBody {
						t.Errorf("held %d bytes at once for a %d-byte body; want at most twice it and a block", hw, n)
					}
					b.give(*h)
					if b.used.Load() != 0 || len(b.bySource) != 0 {
						t.Errorf("after give: used %d, sources %v", b.used.Load(), b.bySource)
					}
				})
			}
		}
	}
}

// A body longer than max_body_bytes is too large, whether or not the
// buffers end exactly at the limit; one shorter than it declared is an
// error too; and neither leaves more in the budget than its buffers.
func TestReadBlocksEnds(t *testing.T) {
	const maxBody = 100_000
	for _, c := range []struct {
		name     string
		sent     int
		declared int64
		want     func(error) bool
	}{
		{"chunked one past the limit", maxBody + 1, -1, func(err error) bool { _, ok := errors.AsType[*http.MaxBytesError](err); return ok }},
		{"chunked far past the limit", 3 * maxBody, -1, func(err error) bool { _, ok := errors.AsType[*http.MaxBytesError](err); return ok }},
		{"chunked at the limit", maxBody, -1, func(err error) bool { return err == nil }},
		{"shorter than declared", 5000, 9000, func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			var rd io.Reader = bytes.NewReader(bytes.Repeat([]byte("x"), c.sent))
			if c.declared >= 0 {
				rd = &shortBody{r: rd, left: c.declared}
			}
			rd = http.MaxBytesReader(nil, io.NopCloser(rd), maxBody)
			b := &byteBudget{limit: 1 << 30}
			h := &bodyHold{}
			_, err := readBlocks(rd, c.declared, maxBody, b, h, 1<<30)
			if !c.want(err) {
				t.Fatalf("err %v", err)
			}
			if h.n > 2*maxBody {
				t.Errorf("holds %d", h.n)
			}
		})
	}
}

// shortBody is net/http's body of a declared length: io.ErrUnexpectedEOF
// when the client sent less.
type shortBody struct {
	r    io.Reader
	left int64
}

func (s *shortBody) Read(p []byte) (int, error) {
	if s.left == 0 {
		return 0, io.EOF
	}
	n, err := s.r.Read(p[:min(int64(len(p)), s.left)])
	s.left -= int64(n)
	if errors.Is(err, io.EOF) && s.left > 0 {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// Each client holds at most its share; the rest of the budget stays for
// the others, and what one gives back is its own.
func TestBodyShareIsPerClient(t *testing.T) {
	b := &byteBudget{limit: 100}
	a1, a2 := &bodyHold{src: bodySource{key: [32]byte{1}}}, &bodyHold{src: bodySource{key: [32]byte{1}}}
	other := &bodyHold{src: bodySource{key: [32]byte{2}}}
	if err := b.take(a1, 30, 40); err != nil {
		t.Fatal(err)
	}
	if err := b.take(a2, 20, 40); !errors.Is(err, errBodyShare) {
		t.Fatalf("a second request past the client's share: %v, want errBodyShare", err)
	}
	if err := b.take(other, 40, 40); err != nil {
		t.Fatalf("another client within its share: %v", err)
	}
	if err := b.take(a2, 10, 40); err != nil {
		t.Fatalf("the first client up to its share: %v", err)
	}
	third := &bodyHold{src: bodySource{key: [32]byte{3}}}
	if err := b.take(third, 40, 40); !errors.Is(err, errBodyBudget) {
		t.Fatalf("a third client past the whole budget: %v, want errBodyBudget", err)
	}
	b.give(*a1)
	if err := b.take(a2, 30, 40); err != nil {
		t.Fatalf("after the first request ended, its client has room again: %v", err)
	}
	b.give(*a2)
	b.give(*other)
	if b.used.Load() != 0 || len(b.bySource) != 0 {
		t.Fatalf("after every give: used %d, sources %v", b.used.Load(), b.bySource)
	}
}

// The report's hostile client, in process: 260 bodies that declare 10
// MiB, send 256 KiB and a byte, and wait, against the default budget
// (128 MiB). Side by side: the buffer that doubled (Sluice's before, kept
// below as readDoubling), and the blocks, each with no share (one client
// may take the whole budget) and the blocks with the default share (a
// quarter). Reported per run: what was allocated while the bodies
// arrived (alloc-MiB), the heap then, before any collection (heap-MiB:
// what the runtime happened not to have collected yet, so it varies),
// the heap still live after a collection (live-MiB), what the budget
// reads (budget-MiB), and how many bodies it held.
//
//	go test ./internal/server/gateway -run '^$' -bench PartialBodies -benchtime 3x
func BenchmarkPartialBodies(b *testing.B) {
	const (
		bodies   = 260
		sent     = 256<<10 + 1
		declared = 10 << 20
		budget   = 128 << 20
	)
	data := bytes.Repeat([]byte("x"), sent)
	for _, c := range []struct {
		name  string
		read  func(io.Reader, *byteBudget, *bodyHold, int64) error
		share int64
	}{
		{"doubling", func(rd io.Reader, bb *byteBudget, h *bodyHold, share int64) error {
			_, err := readDoubling(rd, declared, declared, bb, h, share)
			return err
		}, budget},
		{"blocks", func(rd io.Reader, bb *byteBudget, h *bodyHold, share int64) error {
			_, err := readBlocks(rd, declared, declared, bb, h, share)
			return err
		}, budget},
		{"blocks-share", func(rd io.Reader, bb *byteBudget, h *bodyHold, share int64) error {
			_, err := readBlocks(rd, declared, declared, bb, h, share)
			return err
		}, budget / 4},
	} {
		b.Run(c.name, func(b *testing.B) {
			var alloc, heap, live, used, held float64
			for range b.N {
				bb := &byteBudget{limit: budget}
				var before, mid, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				release := make(chan struct{})
				var arrived, done sync.WaitGroup
				holds := make([]bodyHold, bodies)
				var refused atomic.Int64
				for i := range bodies {
					arrived.Add(1)
					done.Add(1)
					go func() {
						defer done.Done()
						rd := &pausingReader{data: data, piece: 16 << 10, arrived: arrived.Done, release: release}
						if err := c.read(rd, bb, &holds[i], c.share); !errors.Is(err, errPaused) {
							// Refused before all of it came: the request
							// ends, and gives its bytes back.
							bb.give(holds[i])
							holds[i] = bodyHold{}
							refused.Add(1)
							arrived.Done()
						}
					}()
				}
				arrived.Wait()
				runtime.ReadMemStats(&mid)
				used += float64(bb.used.Load())
				held += float64(bodies - refused.Load())
				runtime.GC()
				runtime.ReadMemStats(&after)
				alloc += float64(mid.TotalAlloc - before.TotalAlloc)
				heap += float64(mid.HeapAlloc) - float64(before.HeapAlloc)
				live += float64(after.HeapAlloc) - float64(before.HeapAlloc)
				runtime.KeepAlive(holds)
				close(release)
				done.Wait()
			}
			n := float64(b.N) * (1 << 20)
			b.ReportMetric(alloc/n, "alloc-MiB")
			b.ReportMetric(heap/n, "heap-MiB")
			b.ReportMetric(live/n, "live-MiB")
			b.ReportMetric(used/n, "budget-MiB")
			b.ReportMetric(held/float64(b.N), "held")
			b.ReportMetric(0, "ns/op")
		})
	}
}

var errPaused = errors.New("paused")

// pausingReader gives data in pieces, then says so and waits for
// release; then the read ends (errPaused), as a client's would that
// never sent the rest.
type pausingReader struct {
	data    []byte
	piece   int
	arrived func()
	release chan struct{}
}

func (p *pausingReader) Read(b []byte) (int, error) {
	if len(p.data) == 0 {
		p.arrived()
		<-p.release
		return 0, errPaused
	}
	n := copy(b, p.data[:min(len(p.data), p.piece)])
	p.data = p.data[n:]
	return n, nil
}

// readDoubling is how Sluice read bodies before the blocks: one buffer,
// doubled as it filled, charged for its new capacity only (the old one
// left behind was not counted). The benchmark's baseline.
func readDoubling(rd io.Reader, declared, maxBody int64, b *byteBudget, h *bodyHold, share int64) ([]byte, error) {
	size := min(int64(firstBodyChunk), declared+1)
	body := make([]byte, 0, size)
	for {
		for len(body) < cap(body) {
			n, err := rd.Read(body[len(body):cap(body)])
			if n > 0 && h.n == 0 {
				if err := b.take(h, int64(cap(body)), share); err != nil {
					return nil, err
				}
			}
			body = body[:len(body)+n]
			if errors.Is(err, io.EOF) {
				return body, nil
			}
			if err != nil {
				return nil, err
			}
		}
		next := max(min(2*int64(cap(body)), maxBody+1, declared+1), int64(cap(body))+1)
		if err := b.take(h, next-h.n, share); err != nil {
			return nil, err
		}
		grown := make([]byte, len(body), next)
		copy(grown, body)
		body = grown
	}
}
