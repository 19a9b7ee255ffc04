package procs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"
)

// Check tells whether a child is ready: nil when it is, else why not yet.
type Check func(ctx context.Context, p *Proc) error

// pollEvery is how often Await asks again: often enough that a child
// ready in 30 ms is not waited on for a second, seldom enough to cost
// nothing beside a child starting up.
const pollEvery = 20 * time.Millisecond

// tailBytes is how much of a child's output an error message carries.
const tailBytes = 1500

// Await polls c until it passes, the child exits, ctx ends or within has
// passed. Its errors carry the tail of the child's output.
func (p *Proc) Await(ctx context.Context, within time.Duration, c Check) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	var last error
	for {
		if p.Exited() {
			return p.failed(fmt.Sprintf("exited (%v) before it was ready", p.err))
		}
		if last = c(ctx, p); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			if p.Exited() {
				continue // say that it exited, not that time ran out
			}
			why := fmt.Sprintf("after %v", within)
			if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				why = ctx.Err().Error() // the harness is stopping
			}
			return p.failed(fmt.Sprintf("not ready %s (%v)", why, last))
		case <-p.done:
		case <-time.After(pollEvery):
		}
	}
}

// failed is an error naming the child and showing its last output.
func (p *Proc) failed(what string) error {
	where := ""
	if path := p.LogPath(); path != "" {
		where = "; its log is " + path
	}
	return fmt.Errorf("%s (pid %d) %s%s:\n%s", p.Name, p.PID, what, where, p.Tail(tailBytes))
}

// HTTPOK is ready when GET url answers 2xx.
func HTTPOK(url string) Check {
	return func(ctx context.Context, _ *Proc) error {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("GET %s: status %d", url, resp.StatusCode)
		}
		return nil
	}
}

// TCPOpen is ready when addr accepts a connection: for a child that
// speaks no HTTP (redis-server, HAProxy).
func TCPOpen(addr string) Check {
	return func(ctx context.Context, _ *Proc) error {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		return c.Close()
	}
}

// LogLine is ready once the child's output contains s.
func LogLine(s string) Check {
	return func(_ context.Context, p *Proc) error {
		if !strings.Contains(p.Output(), s) {
			return fmt.Errorf("no %q in its output yet", s)
		}
		return nil
	}
}
