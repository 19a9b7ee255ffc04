package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// mb formats KiB as decimal megabytes, the unit of the hostile phase's
// targets (100 MB, 200 MB).
func mb(kib int64) string { return fmt.Sprintf("%.1f MB", float64(kib)*1024/1e6) }

func mbBytes(b float64) string { return fmt.Sprintf("%.1f MB", b/1e6) }

func (h *hostileResults) tables(o *options) []*table {
	var ts []*table
	if len(h.Sockets) > 0 {
		t := &table{
			phase: "hostile",
			title: fmt.Sprintf("6a. Idle sockets: each sends a chat completion's headers with Content-Length: %d (10 MiB) and no body byte; the gateway's default limits", declaredBody),
			head:  []string{"target", "sockets open", "unanswered", "idle RSS", "loaded RSS", "added RSS", "RSS per socket", "Go heap in use added", "heap per socket", "body bytes held", "held after close"},
		}
		for _, x := range h.Sockets {
			if x.LoadedKiB == 0 {
				t.add(string(x.Kind), "-", "-", "-", "-", "-", "-", "-", "-", "-", "-")
			} else {
				per, heapPer := "-", "-"
				if x.Opened > 0 {
					per = fmt.Sprintf("%.1f KB", x.addedMB()*1e3/float64(x.Opened))
					heapPer = fmt.Sprintf("%.1f KB", (x.HeapLoaded-x.HeapIdle)/1e3/float64(x.Opened))
				}
				held, after := "not exported", "-"
				if x.Held >= 0 {
					held = fmt.Sprintf("%s (limit %.0f MiB)", mbBytes(x.Held), x.Limit/(1<<20))
				}
				if x.HeldAfter >= 0 {
					after = mbBytes(x.HeldAfter)
				}
				t.add(string(x.Kind), fmt.Sprintf("%d/%d", x.Opened, x.Sockets), strconv.Itoa(x.Unanswered),
					mb(x.IdleKiB), mb(x.LoadedKiB), fmt.Sprintf("%+.1f MB", x.addedMB()), per,
					fmt.Sprintf("%+.1f MB", (x.HeapLoaded-x.HeapIdle)/1e6), heapPer, held, after)
			}
			if x.Note != "" {
				t.notes = append(t.notes, string(x.Kind)+": "+x.Note)
			}
		}
		if _, ok := findRow(h.Sockets, sluiceBefore, func(x socketRow) kind { return x.Kind }); ok {
			t.notes = append(t.notes, fmt.Sprintf("sluice-before gets %d sockets, not %d: it allocates each declared body up front, 10 MiB a socket", o.hostileBaselineSockets, o.hostileSockets))
		}
		t.notes = append(t.notes,
			"MB = 10^6 bytes. RSS: the gateway's VmRSS (/proc/PID/status), read before the sockets open and once what it holds has stopped growing for 1 s "+
				"(sluice_request_body_bytes_held where exported, else the Go heap); Go heap in use: go_memstats_heap_inuse_bytes from its /metrics, "+
				"memory the heap has committed whether or not its pages were touched yet (the kernel makes a page resident when it is first written)")
		ts = append(ts, t)
	}
	if len(h.Answers) > 0 {
		t := &table{
			phase: "hostile",
			title: fmt.Sprintf("6b. Large answers: %d concurrent non-streamed embeddings calls (%d inputs each), every answer read at full speed", o.hostileAnswers, embedInputs),
			head:  []string{"target", "answer size", "dimensions", "200 with every byte", "short 200s", "other statuses", "idle RSS", "peak RSS (sampled)", "VmHWM", "peak over idle", "time", "relayed"},
		}
		for _, x := range h.Answers {
			if x.Size == 0 {
				t.add(string(x.Kind), "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-")
			} else {
				rate := "-"
				if x.Took > 0 {
					rate = fmt.Sprintf("%.0f MB/s", float64(x.Bytes)/1e6/x.Took.Seconds())
				}
				other := statusList(x.Other)
				if x.Errs > 0 {
					other = joinNotes(other, fmt.Sprintf("%d errors", x.Errs))
				}
				t.add(string(x.Kind), mbBytes(float64(x.Size)), strconv.Itoa(x.Dims), fmt.Sprintf("%d/%d", x.Full, x.Answers),
					strconv.Itoa(x.Short), other, mb(x.IdleKiB), mb(x.PeakKiB), mb(x.HWMKiB),
					fmt.Sprintf("%+.1f MB", x.peakAddedMB()), x.Took.Round(10*time.Millisecond).String(), rate)
			}
			if x.Kind == sluiceBefore {
				t.notes = append(t.notes, fmt.Sprintf("sizes differ: sluice gets answers of about %s, sluice-before about %s, because it buffered every answer whole up to 64 MiB (67.1 MB) and refused larger ones with 502",
					mbBytes(float64(o.hostileAnswerBytes)), mbBytes(float64(o.hostileBaselineBytes))))
			}
			if x.MockKiB > 0 {
				t.notes = append(t.notes, fmt.Sprintf("%s: the mock making these answers peaked at %s RSS (it builds each answer whole)", x.Kind, mb(x.MockKiB)))
			}
			if x.Probe != "" {
				t.notes = append(t.notes, fmt.Sprintf("%s, one answer of about %s (sluice's size): %s", x.Kind, mbBytes(float64(o.hostileAnswerBytes)), x.Probe))
			}
			if x.Note != "" {
				t.notes = append(t.notes, string(x.Kind)+": "+x.Note)
			}
		}
		t.notes = append(t.notes,
			fmt.Sprintf("answer size: bytes of one answer straight from the mock (`{\"model\":%q,\"input\":[%d short strings],\"dimensions\":N}`); "+
				"a 200 counts when the client read exactly that many bytes through the gateway", embedModel, embedInputs),
			"peak RSS: VmRSS sampled every 20 ms during the run; VmHWM: the kernel's high-water mark of the process's RSS, read after the run; peak over idle: the larger of the two minus idle RSS")
		ts = append(ts, t)
	}
	if len(h.Flood) > 0 {
		t := &table{
			phase: "hostile",
			title: fmt.Sprintf("6c. Critical-header flood: every request sends X-Sluice-Priority: critical, no critical key declared; limit %d in flight, queue %d, upstream %s, %.0f req/s offered for %s, client timeout %s",
				o.overloadLimit, o.overloadQueue, o.overloadLatency, o.overloadRate, o.duration, o.hostileTimeout),
			head: []string{"target", "sent", "503s", "rejected share", "200s", "timed out", "other", "503 p50", "503 p99", "503 max", "in-proxy 503 p99", "200 p50", "200 p99", "peak queue", "peak in flight", "upstream peak in-flight", "peak RSS"},
		}
		for _, x := range h.Flood {
			if x.Sent == 0 {
				t.add(string(x.Kind), "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-")
			} else {
				t.add(string(x.Kind), strconv.Itoa(x.Sent), strconv.Itoa(x.Rejected), pct(x.Rejected, x.Sent), strconv.Itoa(x.OK),
					strconv.Itoa(x.TimedOut), strconv.Itoa(x.Bad+x.Errs), msN(x.Reject, x.Reject.P50), msN(x.Reject, x.Reject.P99),
					msN(x.Reject, x.Reject.Max), msN(x.ServerReject, x.ServerReject.P99), msN(x.OKLat, x.OKLat.P50), msN(x.OKLat, x.OKLat.P99),
					fmt.Sprintf("%.0f", x.PeakQueue), fmt.Sprintf("%.0f", x.PeakInFlight), strconv.FormatInt(x.PeakUpstream, 10), mb(x.PeakKiB))
			}
			if x.Note != "" {
				t.notes = append(t.notes, string(x.Kind)+": "+x.Note)
			}
		}
		t.notes = append(t.notes,
			"the overload phase's configuration (admission.max_in_flight, queue.max_depth as above, no critical_keys_env); warm-up without the header",
			"peak queue, peak in flight: the gateway's sluice_queue_depth (all classes) and sluice_in_flight_requests{scope=\"global\"}, and its VmRSS, sampled every 200 ms; "+
				"timed out: the client gave up after the client timeout; in-proxy: the gateway's own time per 503, from its request log")
		ts = append(ts, t)
	}
	return ts
}

// verdicts holds the hostile phase to its targets; sluice-before's figures
// are quoted beside sluice's.
func (h *hostileResults) verdicts(o *options) []verdict {
	var vs []verdict
	n := o.hostileSockets
	v := verdict{Phase: "hostile", Name: fmt.Sprintf("< %d MB RSS added by %d idle sockets declaring 10 MiB", 100*n/1000, n)}
	if s, ok := findRow(h.Sockets, sluice, func(x socketRow) kind { return x.Kind }); ok && s.LoadedKiB > 0 {
		v.Known = true
		v.Pass = s.Opened == n && s.Unanswered == n && s.addedMB() < 100*float64(n)/1000
		v.Measured = fmt.Sprintf("%+.1f MB (%.1f KB per socket), %d of %d unanswered", s.addedMB(), s.addedMB()*1e3/float64(max(1, s.Opened)), s.Unanswered, n)
		if b, ok := findRow(h.Sockets, sluiceBefore, func(x socketRow) kind { return x.Kind }); ok && b.LoadedKiB > 0 {
			v.Measured += fmt.Sprintf("; sluice-before %.1f KB per socket over %d sockets (Go heap +%.1f MB)",
				b.addedMB()*1e3/float64(max(1, b.Opened)), b.Opened, (b.HeapLoaded-b.HeapIdle)/1e6)
		}
	}
	vs = append(vs, v)

	v = verdict{Phase: "hostile", Name: fmt.Sprintf("peak RSS < 200 MB relaying %d answers of %s at once", o.hostileAnswers, mbBytes(float64(o.hostileAnswerBytes)))}
	if a, ok := findRow(h.Answers, sluice, func(x answerRow) kind { return x.Kind }); ok && a.Size > 0 {
		peak := max(a.PeakKiB, a.HWMKiB)
		v.Known = true
		v.Pass = a.Full == a.Answers && float64(peak)*1024 < 200e6
		v.Measured = fmt.Sprintf("%s (%s over idle), %d of %d answers 200 with all %d bytes", mb(peak), fmt.Sprintf("%+.1f MB", a.peakAddedMB()), a.Full, a.Answers, a.Size)
		if b, ok := findRow(h.Answers, sluiceBefore, func(x answerRow) kind { return x.Kind }); ok && b.Size > 0 {
			v.Measured += fmt.Sprintf("; sluice-before %s with answers of %s (%d of %d whole)", mb(max(b.PeakKiB, b.HWMKiB)), mbBytes(float64(b.Size)), b.Full, b.Answers)
		}
	}
	vs = append(vs, v)

	v = verdict{Phase: "hostile", Name: "unearned critical header is shed, not queued"}
	if f, ok := findRow(h.Flood, sluice, func(x floodRow) kind { return x.Kind }); ok && f.Sent > 0 {
		v.Known = true
		v.Pass = f.Rejected > 0 && f.PeakQueue == 0 && f.PeakUpstream <= int64(o.overloadLimit)
		v.Measured = fmt.Sprintf("%s rejected, 503 p99 %s, peak queue %.0f, upstream peak %d", pct(f.Rejected, f.Sent), msN(f.Reject, f.Reject.P99), f.PeakQueue, f.PeakUpstream)
		if b, ok := findRow(h.Flood, sluiceBefore, func(x floodRow) kind { return x.Kind }); ok && b.Sent > 0 {
			v.Measured += fmt.Sprintf("; sluice-before %s rejected, peak queue %.0f, %d of %d timed out", pct(b.Rejected, b.Sent), b.PeakQueue, b.TimedOut, b.Sent)
		}
	}
	vs = append(vs, v)
	return vs
}

// hostileSettings describes the phase for the run's provenance.
func hostileSettings(o *options) string {
	parts := []string{
		fmt.Sprintf("%d idle sockets (sluice-before: %d) declaring %d-byte bodies", o.hostileSockets, o.hostileBaselineSockets, declaredBody),
		fmt.Sprintf("%d concurrent embeddings answers of about %s (sluice-before: %s)", o.hostileAnswers, mbBytes(float64(o.hostileAnswerBytes)), mbBytes(float64(o.hostileBaselineBytes))),
		fmt.Sprintf("a critical-header flood at %.0f req/s for %s with a %s client timeout", o.overloadRate, o.duration, o.hostileTimeout),
	}
	return "Hostile phase: " + strings.Join(parts, "; ") + "; each measurement starts its own gateway and mock; for the sockets and the answers the generated config keeps the default max_body_bytes (10 MiB) and has a 180s provider timeout, the flood uses the overload phase's"
}
