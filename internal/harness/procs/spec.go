package procs

import (
	"os"
	"syscall"
	"time"
)

// Spec is what to run and how to treat it. Its zero values are the usual
// choice; each field set is one user's different need.
type Spec struct {
	// Name is the child's name in errors and log file names.
	Name string
	// Path is the executable; Args follow it.
	Path string
	Args []string
	// Env is added to the harness's own environment; nil inherits it.
	Env []string
	// Dir is the working directory; empty is the harness's.
	Dir string

	// LogFile, when set, receives the child's stdout and stderr: created
	// by Start, appended to by a restart. Otherwise a Group with a LogDir
	// names a file there, and without one the output is kept in memory.
	LogFile string
	// Keep bounds the output kept in memory to about its last Keep bytes
	// (0: all of it), for a chatty child under a long run.
	Keep int

	// Ready, when set, is polled until it passes: Start returns only then.
	Ready Check
	// ReadyWithin bounds that wait (default 10 s).
	ReadyWithin time.Duration

	// StopSignal asks the child to stop (default SIGTERM). sluice serve
	// skips its drain delay on os.Interrupt, which suits a test that is
	// only tearing down.
	StopSignal os.Signal
	// Grace is how long Stop waits after StopSignal before SIGKILL
	// (default 5 s).
	Grace time.Duration
}

func (s Spec) readyWithin() time.Duration {
	if s.ReadyWithin > 0 {
		return s.ReadyWithin
	}
	return 10 * time.Second
}

func (s Spec) stopSignal() os.Signal {
	if s.StopSignal != nil {
		return s.StopSignal
	}
	return syscall.SIGTERM
}

func (s Spec) grace() time.Duration {
	if s.Grace > 0 {
		return s.Grace
	}
	return 5 * time.Second
}
