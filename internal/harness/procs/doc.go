// Package procs starts, watches and stops the child processes of Sluice's
// real-process tools: the benchmark (cmd/sluice-bench), the chaos harness
// (internal/harness/chaos) and the end-to-end tests (test/e2e). Each of them
// runs sluice serve, sluice mock, redis-server or a rival proxy as a child,
// and each needs the same few things done the same careful way.
//
// # Goals
//
//   - Start a child with its arguments, environment and working directory,
//     its output kept in memory (bounded if asked) or written to a file,
//     and return only once it is ready: an address answers, or a log line
//     appears. Readiness is polled, never slept for, and a child that exits
//     before it is ready is reported with its exit status and the tail of
//     its output.
//   - Stop a child by its own process handle: its stop signal (SIGTERM
//     unless the Spec says otherwise), then SIGKILL once its grace has
//     passed. Kill it mid-run (a fault), and restart it with the same Spec
//     and readiness check. A child is never signalled after it has been
//     reaped, and nothing here signals a process it did not start: no
//     process-group kills, no pkill.
//   - Keep the books: a Group holds every live child it started, names its
//     log files, and stops them all, newest first, however the run ends.
//   - Pick free loopback ports, build the sluice binary once per process,
//     and raise the open-file limit the children inherit.
//
// # Non-goals
//
// What a child is for (a mock's flags, a gateway's configuration, a fleet
// of replicas) stays with its user; this package knows only processes.
// One-shot commands whose output is read when they end (sluice load, go
// tool pprof) are plain exec.Cmd and stay so.
//
// # Organisation
//
// Spec says what to run and how (spec.go); Start or Group.Start runs it
// and returns a Proc (proc.go, group.go), whose output lives in a sink
// (output.go). Checks decide readiness (ready.go). FreeAddr, Build and
// RaiseFileLimit are the helpers around them (ports.go, build.go,
// limits.go).
//
// Every child gets a process group of its own, so a Ctrl-C at the terminal
// reaches only the harness, which then stops its children in order; and a
// parent-death signal of SIGKILL, so a harness that dies hard does not
// leave children behind.
package procs
