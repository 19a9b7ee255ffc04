package tokens

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// onCPU runs f on one locked OS thread and returns the CPU time that
// thread spent in it. A timing test measured this way does not count the
// time the thread waited for a core, so it holds on a busy machine.
func onCPU(f func()) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var a, b unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &a) != nil {
		return wall(f)
	}
	f()
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &b) != nil {
		return wall(f)
	}
	return time.Duration(b.Nano() - a.Nano())
}
