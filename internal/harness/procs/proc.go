package procs

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Proc is one child process. It is only ever signalled through its own
// process handle, and never once it has been reaped.
type Proc struct {
	Name string
	PID  int

	spec  Spec
	group *Group // nil when started alone
	out   sink
	cmd   *exec.Cmd
	done  chan struct{} // closed when the child has been reaped
	err   error         // its exit status, once done is closed
}

// Start runs s and, when s.Ready is set, waits until the child is ready
// or ctx ends. On any error nothing is left running: a child that exits
// early, or is not ready in time, is reported with the tail of its output
// and stopped. ctx bounds only the wait, not the child's life.
func Start(ctx context.Context, s Spec) (*Proc, error) {
	return start(ctx, s, nil, nil)
}

func start(ctx context.Context, s Spec, g *Group, out sink) (*Proc, error) {
	restart := out != nil
	if out == nil {
		out = g.sinkFor(s)
	}
	w, err := out.writer(restart)
	if err != nil {
		return nil, fmt.Errorf("%s: output: %w", s.Name, err)
	}
	defer w.Close() // the child holds its own copy of a file
	cmd := exec.Command(s.Path, s.Args...)
	cmd.Dir = s.Dir
	cmd.Stdout, cmd.Stderr = w, w
	if s.Env != nil {
		cmd.Env = append(os.Environ(), s.Env...)
	}
	// A group of its own keeps a terminal's Ctrl-C to the harness, which
	// then stops its children in order; Pdeathsig ends the child if the
	// harness dies without doing so.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", s.Name, err)
	}
	p := &Proc{Name: s.Name, PID: cmd.Process.Pid, spec: s, group: g, out: out, cmd: cmd, done: make(chan struct{})}
	g.add(p)
	go func() {
		p.err = cmd.Wait()
		// Forgotten first: once done is closed (Stop returns), the
		// group no longer counts it live.
		g.forget(p)
		close(p.done)
	}()
	if s.Ready != nil {
		if err := p.Await(ctx, s.readyWithin(), s.Ready); err != nil {
			p.Stop()
			return nil, err
		}
	}
	return p, nil
}

// Exited reports whether the child has ended and been reaped.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Done is closed once the child has ended and been reaped.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Err is the child's exit status (nil for 0) once Done is closed.
func (p *Proc) Err() error {
	<-p.done
	return p.err
}

// Wait waits for the child to end and returns its exit status.
func (p *Proc) Wait() error { return p.Err() }

// Signal sends sig to the child unless it has already been reaped.
func (p *Proc) Signal(sig os.Signal) {
	if !p.Exited() {
		// After a reap this is ErrProcessDone, never another process:
		// the handle is the child's own (a pidfd on Linux).
		p.cmd.Process.Signal(sig)
	}
}

// Stop asks the child to stop with its Spec's StopSignal, waits its
// Grace, then kills it; it returns the exit status.
func (p *Proc) Stop() error { return p.StopWithin(p.spec.grace()) }

// StopWithin is Stop with another grace; 0 or less kills at once.
func (p *Proc) StopWithin(grace time.Duration) error {
	if grace <= 0 {
		p.Kill()
		return p.err
	}
	p.Signal(p.spec.stopSignal())
	select {
	case <-p.done:
	case <-time.After(grace):
		p.Kill()
	}
	return p.err
}

// Kill ends the child with SIGKILL, as a fault does mid-run, and returns
// once it has been reaped.
func (p *Proc) Kill() {
	p.Signal(syscall.SIGKILL)
	<-p.done
}

// Restart stops the child if it still runs, then starts its Spec again,
// in the same Group, writing to the same output, and waits until it is
// ready. The returned Proc is the new child.
func (p *Proc) Restart(ctx context.Context) (*Proc, error) {
	p.Stop()
	return start(ctx, p.spec, p.group, p.out)
}

// Output is everything the child has written that is kept: the buffer,
// or the whole log file. A restarted child's includes its predecessors'.
func (p *Proc) Output() string { return p.out.String() }

// Tail is the last n bytes of Output, for an error message.
func (p *Proc) Tail(n int) string { return p.out.Tail(n) }

// LogPath is the file the output goes to, or "" when kept in memory.
func (p *Proc) LogPath() string { return p.out.Path() }
