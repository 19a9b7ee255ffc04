package chaos

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// toxics are what a relay does to the provider's bytes on their way to
// the gateway. The zero value passes everything through untouched.
type toxics struct {
	// Latency delays every chunk from the provider by this long.
	Latency time.Duration
	// BytesPerSecond caps the provider-to-gateway rate (0: no cap).
	BytesPerSecond int
	// StallAfter, when positive, passes this many bytes of each
	// connection's answers and then nothing more, holding the
	// connection open: a provider hung mid-stream.
	StallAfter int
	// Down resets every connection, new and pooled alike, at its next
	// byte in either direction: a provider's host dropping off.
	Down bool
}

// relay is a TCP relay between the gateway and one provider that applies
// toxics, so faults the provider cannot play itself (a stall mid-stream,
// a slow link, a host that comes and goes) can be injected under a real
// gateway's real transport.
type relay struct {
	ln     net.Listener
	target string
	tox    atomic.Pointer[toxics]
	stalls atomic.Int64 // connections held hung by StallAfter

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// newRelay listens on a free loopback port and relays to target.
func newRelay(target string) (*relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &relay{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	r.set(toxics{})
	go r.accept()
	return r, nil
}

// addr is the relay's address, for the gateway's base_url.
func (r *relay) addr() string { return r.ln.Addr().String() }

// set replaces the toxics; streams already flowing see the change at
// their next chunk.
func (r *relay) set(t toxics) { r.tox.Store(&t) }

// close stops the relay and drops every connection through it.
func (r *relay) close() {
	r.ln.Close()
	r.mu.Lock()
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}

func (r *relay) accept() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.wg.Add(1)
		go r.serve(c)
	}
}

// open is the number of gateway connections through the relay now.
func (r *relay) open() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.conns) / 2 // each is tracked with its provider side
}

// track registers c so close can drop it; false once the relay closed.
func (r *relay) track(c net.Conn, on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if on {
		r.conns[c] = struct{}{}
	} else {
		delete(r.conns, c)
	}
}

func (r *relay) serve(down net.Conn) {
	defer r.wg.Done()
	up, err := net.DialTimeout("tcp", r.target, 5*time.Second)
	if err != nil {
		down.Close()
		return
	}
	r.track(down, true)
	r.track(up, true)
	defer func() {
		r.track(down, false)
		r.track(up, false)
		down.Close()
		up.Close()
	}()
	gatewayDone := make(chan struct{})
	go func() {
		r.pipe(up, down, false)
		// The gateway went away: so does the provider's side.
		up.Close()
		close(gatewayDone)
	}()
	if stalled := r.pipe(down, up, true); stalled {
		r.stalls.Add(1)
		// Hung: hold the connection, sending nothing more, until the
		// gateway gives up on it.
		<-gatewayDone
	}
}

// pipe copies src to dst. toward is true for the provider's answers,
// the direction the latency, bandwidth and stall toxics apply to; it
// reports whether it stopped because of a stall.
func (r *relay) pipe(dst, src net.Conn, toward bool) (stalled bool) {
	buf := make([]byte, 4<<10)
	sent := 0
	for {
		n, err := src.Read(buf)
		t := r.tox.Load()
		if t.Down {
			reset(dst)
			reset(src)
			return false
		}
		if n > 0 {
			chunk := buf[:n]
			if toward {
				if t.StallAfter > 0 && sent+n > t.StallAfter {
					chunk = chunk[:max(0, t.StallAfter-sent)]
				}
				time.Sleep(t.Latency + perRate(len(chunk), t.BytesPerSecond))
			}
			if _, werr := dst.Write(chunk); werr != nil {
				return false
			}
			sent += len(chunk)
			if toward && t.StallAfter > 0 && sent >= t.StallAfter {
				return true
			}
		}
		if err != nil {
			return false
		}
	}
}

// perRate is how long n bytes take at bps bytes a second (0: no cap).
func perRate(n, bps int) time.Duration {
	if bps <= 0 {
		return 0
	}
	return time.Duration(n) * time.Second / time.Duration(bps)
}

// reset closes c with a TCP reset rather than an orderly close.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}
