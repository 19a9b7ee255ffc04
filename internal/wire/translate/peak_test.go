package translate

import (
	"bytes"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// blockChat is an OpenAI chat body of one user message of n
// one-character text parts, 27 bytes a part.
func blockChat(n int) []byte {
	var b bytes.Buffer
	b.Grow(27*n + 64)
	b.WriteString(`{"model":"m","messages":[{"role":"user","content":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"type":"text","text":"a"}`)
	}
	b.WriteString(`]}]}`)
	return b.Bytes()
}

// Three 10 MB bodies of 370,000 content blocks each, translated at
// once, hold under 150 MB of heap at their peak, the bodies themselves
// included (a block value each, in slices grown by doubling, took the
// gateway to 605 MB). The peak is the largest HeapInuse seen by a
// sampler that reads the heap every millisecond while they run, less
// the heap in use before the bodies were made.
func TestThreeBlockBodiesPeak(t *testing.T) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	bodies := [3][]byte{blockChat(370_000), blockChat(370_000), blockChat(370_000)}
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	var wg sync.WaitGroup
	errs := make([]error, len(bodies))
	outs := make([]int, len(bodies))
	for i, b := range bodies {
		wg.Go(func() {
			tr, err := RequestToAnthropic(b, Options{})
			if err == nil {
				outs[i] = len(tr.Body)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	close(stop)
	<-sampled
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	held := int64(peak.Load()) - int64(base)
	t.Logf("three bodies of %d bytes (translated to %d): heap in use peaked %.1f MB above the start", len(bodies[0]), outs[0], float64(held)/1e6)
	if held > 150e6 {
		t.Errorf("three translated 10 MB bodies held %.1f MB of heap at their peak; want under 150 MB", float64(held)/1e6)
	}
}
