package gateway

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sluice-gw/sluice/internal/core/lifecycle"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// streamWatch is a stream's one clock: it cancels the source's call
// when the provider sends nothing for server.stream_idle_timeout, or
// sends nothing that is progress for the stall deadline. Progress is
// content: text, reasoning, tool input, a finish, usage, an error, the
// terminator (protocol.StreamFacts.Progress); a keepalive comment or a
// ping resets the idle clock but not the stall clock, so a dead stream
// that pings is still cut. The stall deadline is armed from the first
// token (the relay starts after it), whether or not the answer could be
// continued: one that cannot ends with a clean error at the stall
// deadline instead of waiting out the idle timeout. Once a tool call
// begins it is disarmed (lifecycle.Watched): a provider's own tool, a
// web search, pauses between events by design. Its length is the
// core's, learned from the gaps between the stream's own progress
// (lifecycle.StallDeadline), so a slow but steady stream is not cut.
//
// The clock runs only while the relay waits on the provider, so a slow
// client is never taken for a quiet provider.
type streamWatch struct {
	idle  time.Duration
	stall lifecycle.StallConfig
	gaps  lifecycle.Gaps
	// lastProgress is when the stream last made progress, and progress
	// its count then.
	lastProgress time.Time
	progress     uint64
	t            *time.Timer
	cancel       atomic.Pointer[context.CancelFunc]
	fired        atomic.Bool
	// stalled: the deadline the timer was last set for was the stall
	// deadline, not the idle one.
	stalled atomic.Bool
	// armed is the stall deadline last armed, for the error message.
	armed time.Duration
}

// start begins the clock at the stream's head, which counted progress;
// cancel ends the source's call.
func (w *streamWatch) start(now time.Time, progress uint64, cancel context.CancelFunc) {
	w.cancel.Store(&cancel)
	w.lastProgress, w.progress = now, progress
}

// restart begins the clock again for a new source (a continuation),
// whose call cancel ends: opening it counts as progress, so it has a
// whole stall deadline to send its first token.
func (w *streamWatch) restart(now time.Time, progress uint64, cancel context.CancelFunc) {
	w.stop()
	w.cancel.Store(&cancel)
	w.fired.Store(false)
	w.stalled.Store(false)
	w.lastProgress, w.progress = now, progress
}

// wait arms the clock before a read from the source; watched says the
// stream is watched for stalls now (lifecycle.Watched: from its first
// token, until a tool call begins), and the core says how long a stall
// is (lifecycle.StallDeadlineFor).
func (w *streamWatch) wait(now time.Time, watched bool) {
	d, stall := w.idle, false
	if armed, ok := lifecycle.StallDeadlineFor(w.stall, w.gaps, watched); ok {
		w.armed = armed
		if left := w.lastProgress.Add(armed).Sub(now); left < d {
			d, stall = max(left, 0), true
		}
	}
	w.stalled.Store(stall)
	if w.t == nil {
		w.t = time.AfterFunc(d, w.fire)
		return
	}
	w.t.Reset(d)
}

func (w *streamWatch) fire() {
	w.fired.Store(true)
	if c := w.cancel.Load(); c != nil {
		(*c)()
	}
}

// read: a read returned (m bytes, maybe none): the clock stops until
// the relay waits again.
func (w *streamWatch) read(int) { w.stop() }

// progressed: the check's progress count is now progress.
func (w *streamWatch) progressed(now time.Time, progress uint64) {
	if progress == w.progress {
		return
	}
	w.gaps.Add(now.Sub(w.lastProgress))
	w.lastProgress, w.progress = now, progress
}

func (w *streamWatch) stop() {
	if w.t != nil {
		w.t.Stop()
	}
}

// explain gives a read that failed because the clock fired its reason:
// stream_stall or stream_idle.
func (w *streamWatch) explain(err error, provider string) error {
	if !w.fired.Load() {
		return err
	}
	// A call cancelled mid-read ends in an error, or, through a body
	// that ends on its context, in a close without the terminator.
	if e, ok := err.(*streamEnd); !unexplained(err) && !(ok && e.reason == protocol.StreamUnterminated) {
		return err
	}
	if w.stalled.Load() {
		return upstreamEnd("stream_stall", fmt.Sprintf("provider %s sent nothing new for %s", provider, w.armed.Round(time.Millisecond)))
	}
	return upstreamEnd("stream_idle", fmt.Sprintf("provider %s sent nothing for %s", provider, w.idle))
}
