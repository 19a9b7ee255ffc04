package gateway

import (
	"errors"
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"time"
)

// Request bodies are the gateway's largest holding before admission, and
// what a client declares is not what it sends: a Content-Length of 10 MB
// on a socket that then sends nothing must cost nothing. So a body is
// read into a buffer that grows with what has actually arrived, and every
// byte of buffer comes out of one budget shared by all requests
// (server.max_body_bytes_in_flight), held until the request ends. A
// request that would pass the budget is refused as overload, 503/529,
// rather than let a crowd of large uploads take the process's memory.

// errBodyBudget: the bodies in flight already use the whole budget.
var errBodyBudget = errors.New("gateway: request bodies in flight use the whole budget")

// errBodyTimeout: the client took longer than body_read_timeout.
var errBodyTimeout = errors.New("gateway: request body read timed out")

// byteBudget is a shared allowance of bytes, and a count of the
// requests reading their bodies against it.
type byteBudget struct {
	limit   int64
	used    atomic.Int64
	reading atomic.Int64
}

// take reserves n bytes, or reports that they would pass the limit.
func (b *byteBudget) take(n int64) bool {
	if b.used.Add(n) > b.limit {
		b.used.Add(-n)
		return false
	}
	return true
}

func (b *byteBudget) give(n int64) { b.used.Add(-n) }

// firstBodyChunk is the first read's size. It is not taken from the
// budget until bytes arrive, so a socket that declares a body and sends
// nothing holds no budget (and 4 KiB of memory, bounded by
// server.max_connections).
const firstBodyChunk = 4 << 10

// readBody reads the request body, bounded in size (max_body_bytes),
// time (body_read_timeout) and, with every other request's, memory. The
// buffer grows with what has arrived, never with what the client
// declared: at most to twice the bytes received (and one past a declared
// length). held is what it took from the budget, which the caller gives
// back when the request ends, error or not.
func (g *Gateway) readBody(w http.ResponseWriter, r *http.Request) (body []byte, held int64, err error) {
	if r.ContentLength > g.maxBody {
		return nil, 0, &http.MaxBytesError{Limit: g.maxBody}
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(g.bodyTimeout))
	defer rc.SetReadDeadline(time.Time{})
	rd := http.MaxBytesReader(w, r.Body, g.maxBody)
	g.bodies.reading.Add(1)
	defer g.bodies.reading.Add(-1)

	size := int64(firstBodyChunk)
	if r.ContentLength >= 0 {
		size = min(size, r.ContentLength+1) // +1: room to see the end
	}
	body = make([]byte, 0, size)
	for {
		for len(body) < cap(body) {
			n, rerr := rd.Read(body[len(body):cap(body)])
			if n > 0 && held == 0 {
				// The first bytes arrived: the buffer counts from now.
				if !g.bodies.take(int64(cap(body))) {
					return nil, 0, errBodyBudget
				}
				held = int64(cap(body))
			}
			body = body[:len(body)+n]
			if errors.Is(rerr, io.EOF) {
				return body, held, nil
			}
			if rerr != nil {
				if errors.Is(rerr, os.ErrDeadlineExceeded) {
					return nil, held, errBodyTimeout
				}
				return nil, held, rerr
			}
		}
		next := min(2*int64(cap(body)), g.maxBody+1)
		if r.ContentLength >= 0 {
			next = min(next, r.ContentLength+1)
		}
		if next <= int64(cap(body)) {
			next = int64(cap(body)) + 1 // a declared length that was short: read on to see the error
		}
		if !g.bodies.take(next - held) {
			return nil, held, errBodyBudget
		}
		held = next
		grown := make([]byte, len(body), next)
		copy(grown, body)
		body = grown
	}
}
