package procs

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"syscall"
)

// Group keeps the books on the children a run starts, so that a normal
// end, an error and an interrupt all stop them the same way. Its zero
// value is ready to use; a nil *Group keeps no books.
type Group struct {
	// LogDir, when set, receives the output of every child whose Spec
	// names no LogFile, as NN-name.log in the order they started.
	LogDir string

	mu   sync.Mutex
	live []*Proc // in the order they started
	seq  int
}

// Start runs s as Start does, and counts the child among the group's.
func (g *Group) Start(ctx context.Context, s Spec) (*Proc, error) {
	return start(ctx, s, g, nil)
}

// Live is the group's children that have not yet been reaped, oldest
// first.
func (g *Group) Live() []*Proc {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]*Proc(nil), g.live...)
}

// StopAll stops every child still running, newest first (a gateway before
// the mocks behind it), each with its own Spec's signal and grace.
func (g *Group) StopAll() {
	live := g.Live()
	for i := len(live) - 1; i >= 0; i-- {
		live[i].Stop()
	}
}

// KillAll kills every child still running at once, for a harness told
// twice to stop.
func (g *Group) KillAll() {
	for _, p := range g.Live() {
		p.Signal(syscall.SIGKILL)
	}
	for _, p := range g.Live() {
		<-p.done
	}
}

// sinkFor is where a new child's output goes.
func (g *Group) sinkFor(s Spec) sink {
	if s.LogFile != "" {
		return file{s.LogFile}
	}
	if g == nil || g.LogDir == "" {
		return &memory{keep: s.Keep}
	}
	g.mu.Lock()
	g.seq++
	n := g.seq
	g.mu.Unlock()
	return file{filepath.Join(g.LogDir, fmt.Sprintf("%02d-%s.log", n, s.Name))}
}

func (g *Group) add(p *Proc) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.live = append(g.live, p)
}

func (g *Group) forget(p *Proc) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, q := range g.live {
		if q == p {
			g.live = append(g.live[:i], g.live[i+1:]...)
			return
		}
	}
}
