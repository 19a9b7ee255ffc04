package lifecycle

// spareMax bounds the requests kept for reuse: enough for the churn of
// a busy engine, no more than a burst's worth held after it.
const spareMax = 1024

// newRequest returns a request to fill in whole: one that has left, or a
// new one. The simulator runs millions of requests through one engine,
// and reusing their state keeps the engine from allocating per request.
func (e *Engine) newRequest() *request {
	if n := len(e.spare); n > 0 {
		q := e.spare[n-1]
		e.spare[n-1] = nil
		e.spare = e.spare[:n-1]
		return q
	}
	return new(request)
}

// recycle takes back a request that has left the engine (no longer in
// reqs). Its fields stay as they were until Arrive reuses it, so a caller
// still holding it within the same call reads what it read before. One
// still listed as stranded stays out: the list is pruned lazily.
func (e *Engine) recycle(q *request) {
	if q.stranded || len(e.spare) >= spareMax {
		return
	}
	for _, h := range []*timerHeap{&e.slow, &e.dropT, &e.dead, &e.hedgeT, &e.abandonT, &e.hold.ends} {
		h.remove(q)
	}
	e.spare = append(e.spare, q)
}
