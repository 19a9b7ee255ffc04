package main

import (
	"fmt"
	"strconv"
	"time"
)

// results is everything one run measured.
type results struct {
	Throughput []throughputRow
	Latency    []latencyRow
	Overload   []overloadRow
	Streams    []streamRow
	Brownout   []brownoutRow
	Hostile    *hostileResults // nil when the phase did not run
}

// verdict is one of the targets Sluice is held to.
type verdict struct {
	Phase    string // the phase that measures it
	Name     string
	Measured string
	Pass     bool
	Known    bool // false when the phase did not run or lacked a row
}

func (v verdict) mark() string {
	switch {
	case !v.Known:
		return "N/A"
	case v.Pass:
		return "PASS"
	}
	return "FAIL"
}

func findRow[T any](rows []T, k kind, key func(T) kind) (T, bool) {
	for _, r := range rows {
		if key(r) == k {
			return r, true
		}
	}
	var zero T
	return zero, false
}

func (r *results) verdicts(o *options) []verdict {
	var vs []verdict

	v := verdict{Phase: "throughput", Name: "throughput >= 0.9x bare Go proxy"}
	s, ok1 := findRow(r.Throughput, sluice, func(x throughputRow) kind { return x.Kind })
	g, ok2 := findRow(r.Throughput, goProxy, func(x throughputRow) kind { return x.Kind })
	if ok1 && ok2 && g.RPS > 0 && s.RPS > 0 {
		ratio := s.RPS / g.RPS
		v.Known, v.Pass = true, ratio >= 0.9
		v.Measured = fmt.Sprintf("%.2fx (%.0f vs %.0f req/s)", ratio, s.RPS, g.RPS)
	}
	vs = append(vs, v)

	v = verdict{Phase: "latency", Name: fmt.Sprintf("added p99 <= 1 ms at %.0f req/s", o.rate)}
	sl, ok1 := findRow(r.Latency, sluice, func(x latencyRow) kind { return x.Kind })
	dl, ok2 := findRow(r.Latency, direct, func(x latencyRow) kind { return x.Kind })
	if ok1 && ok2 && sl.Lat.N > 0 && dl.Lat.N > 0 {
		added := sl.Lat.P99 - dl.Lat.P99
		v.Known, v.Pass = true, added <= time.Millisecond
		v.Measured = fmt.Sprintf("%s (p99 %s vs direct %s)", msSigned(added), ms(sl.Lat.P99), ms(dl.Lat.P99))
		if sl.InProxy.N > 0 {
			v.Measured += fmt.Sprintf("; inside Sluice (request log) p99 %s", ms(sl.InProxy.P99))
		}
	}
	vs = append(vs, v)

	v = verdict{Phase: "overload", Name: "rejection p99 <= 1 ms"}
	so, ok := findRow(r.Overload, sluice, func(x overloadRow) kind { return x.Kind })
	if ok && so.Reject.N > 0 {
		v.Known, v.Pass = true, so.Reject.P99 <= time.Millisecond
		v.Measured = fmt.Sprintf("%s over %d rejections", ms(so.Reject.P99), so.Reject.N)
		if d, ok := findRow(r.Overload, direct, func(x overloadRow) kind { return x.Kind }); ok && d.Reject.N > 0 {
			v.Measured += fmt.Sprintf("; floor (the mock's own instant 503s) p99 %s", ms(d.Reject.P99))
		}
		if so.ServerReject.N > 0 {
			v.Measured += fmt.Sprintf("; inside Sluice (request log) p99 %s", ms(so.ServerReject.P99))
		}
	}
	vs = append(vs, v)

	v = verdict{Phase: "streams", Name: "<= 64 KiB per in-flight stream"}
	ss, ok := findRow(r.Streams, sluice, func(x streamRow) kind { return x.Kind })
	if ok && ss.Receiving > 0 && ss.LoadedKiB > 0 {
		v.Known, v.Pass = true, ss.PerStream <= 64 && ss.Receiving == ss.Streams && ss.EndedEarly == 0
		v.Measured = fmt.Sprintf("%.1f KiB/stream over %d streams", ss.PerStream, ss.Receiving)
	}
	vs = append(vs, v)

	v = verdict{Phase: "brownout", Name: "cancels abandoned calls upstream"}
	sb, ok := findRow(r.Brownout, sluice, func(x brownoutRow) kind { return x.Kind })
	if ok && sb.Reached > 0 {
		v.Known, v.Pass = true, sb.propagates()
		v.Measured = fmt.Sprintf("upstream in_flight %d, cancelled %d of %d, %s after clients gave up", sb.InFlight, sb.Cancelled, sb.Reached, o.brownoutSettle)
	}
	vs = append(vs, v)
	if r.Hostile != nil {
		vs = append(vs, r.Hostile.verdicts(o)...)
	}
	return vs
}

func (r *results) tables(o *options) []*table {
	var ts []*table
	if len(r.Throughput) > 0 {
		t := &table{
			phase: "throughput",
			title: fmt.Sprintf("1. Closed-loop throughput: %d clients, %s, non-streaming, upstream instant with 1 output token", o.concurrency, o.duration),
			head:  []string{"target", "req/s", "vs go-proxy", "CPU/req (proxy)", "proxy cores", "mock CPU/req", "loadgen CPU/req", "other load", "p50", "p99", "errors"},
		}
		g, _ := findRow(r.Throughput, goProxy, func(x throughputRow) kind { return x.Kind })
		for _, x := range r.Throughput {
			if x.OK == 0 {
				t.add(string(x.Kind), "-", "-", "-", "-", "-", "-", "-", "-", "-", "-")
				if x.Note != "" {
					t.notes = append(t.notes, string(x.Kind)+": "+x.Note)
				}
				continue
			}
			vs := "-"
			if g.RPS > 0 {
				vs = fmt.Sprintf("%.2fx", x.RPS/g.RPS)
			}
			cpu := micros(x.CPUPerReq)
			if x.Kind == direct {
				cpu += " (mock)"
			}
			t.add(string(x.Kind), fmt.Sprintf("%.0f", x.RPS), vs, cpu, fmt.Sprintf("%.2f", x.Cores),
				micros(x.MockCPUPerReq), micros(x.GenCPUPerReq), cores(x.OtherCores),
				ms(x.Lat.P50), ms(x.Lat.P99), strconv.Itoa(x.Bad+x.Errs))
			if x.Note != "" {
				t.notes = append(t.notes, string(x.Kind)+": "+x.Note)
			}
		}
		t.notes = append(t.notes, "CPU/req is user+system time from /proc/PID/stat over the measured time divided by successful requests; "+
			"other load is machine-wide busy time (/proc/stat) not used by the load generator, proxy or mock: other tenants of the machine")
		ts = append(ts, t)
	}
	if len(r.Latency) > 0 {
		t := &table{
			phase: "latency",
			title: fmt.Sprintf("2. Open-loop latency: %.0f req/s (%s arrivals), %s, upstream latency %s", o.rate, arrivals(o), o.duration, o.latency),
			head:  []string{"target", "sent", "ok", "p50", "p90", "p99", "max", "added p50", "added p90", "added p99", "added max", "in-proxy p50", "in-proxy p99", "sched lag", "other load"},
		}
		d, haveDirect := findRow(r.Latency, direct, func(x latencyRow) kind { return x.Kind })
		for _, x := range r.Latency {
			if x.Lat.N == 0 {
				t.add(string(x.Kind), strconv.Itoa(x.Sent), "0", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-")
				if x.Note != "" {
					t.notes = append(t.notes, string(x.Kind)+": "+x.Note)
				}
				continue
			}
			add := func(a, b time.Duration) string {
				if !haveDirect || d.Lat.N == 0 || x.Kind == direct {
					return "-"
				}
				return msSigned(a - b)
			}
			t.add(string(x.Kind), strconv.Itoa(x.Sent), strconv.Itoa(x.OK),
				ms(x.Lat.P50), ms(x.Lat.P90), ms(x.Lat.P99), ms(x.Lat.Max),
				add(x.Lat.P50, d.Lat.P50), add(x.Lat.P90, d.Lat.P90), add(x.Lat.P99, d.Lat.P99), add(x.Lat.Max, d.Lat.Max),
				msN(x.InProxy, x.InProxy.P50), msN(x.InProxy, x.InProxy.P99), ms(x.Lag), cores(x.OtherCores))
			if x.Note != "" || x.Bad+x.Errs > 0 {
				t.notes = append(t.notes, fmt.Sprintf("%s: %d non-200 answers, %d transport errors. %s", x.Kind, x.Bad, x.Errs, x.Note))
			}
		}
		t.notes = append(t.notes, "in-proxy: Sluice's own time per request from its request log (duration minus upstream_duration); other load: as in table 1")
		if _, ok := findRow(r.Latency, sluiceBefore, func(x latencyRow) kind { return x.Kind }); ok {
			t.notes = append(t.notes, fmt.Sprintf("sluice-before: the earlier binary given with --sluice-baseline (%s), same generated config, its own mock, in the same interleaved rounds as sluice: before and after side by side", o.baseline))
		}
		ts = append(ts, t)
	}
	if len(r.Overload) > 0 {
		t := &table{
			phase: "overload",
			title: fmt.Sprintf("3. Rejection at %.0fx overload: limit %d in flight, upstream latency %s (capacity %.0f req/s), %.0f req/s offered, %s",
				o.overloadRate/(float64(o.overloadLimit)/o.overloadLatency.Seconds()), o.overloadLimit, o.overloadLatency,
				float64(o.overloadLimit)/o.overloadLatency.Seconds(), o.overloadRate, o.duration),
			head: []string{"target", "sent", "503s", "rejected share", "200s", "other", "503 p50", "503 p99", "503 max", "in-proxy 503 p50", "in-proxy 503 p99", "200 p50", "upstream peak in-flight", "other load"},
		}
		for _, x := range r.Overload {
			name := string(x.Kind)
			if x.Kind == direct {
				name = "direct (floor)"
			}
			if x.Sent == 0 {
				t.add(name, "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-")
			} else {
				peak := strconv.FormatInt(x.PeakUpstream, 10)
				if x.Kind == direct {
					peak = "-"
				}
				t.add(name, strconv.Itoa(x.Sent), strconv.Itoa(x.Rejected), pct(x.Rejected, x.Sent), strconv.Itoa(x.OK),
					strconv.Itoa(x.Bad+x.Errs), msN(x.Reject, x.Reject.P50), msN(x.Reject, x.Reject.P99), msN(x.Reject, x.Reject.Max),
					msN(x.ServerReject, x.ServerReject.P50), msN(x.ServerReject, x.ServerReject.P99), msN(x.OKLat, x.OKLat.P50), peak,
					cores(x.OtherCores))
			}
			if x.Note != "" {
				t.notes = append(t.notes, string(x.Kind)+": "+x.Note)
			}
		}
		t.notes = append(t.notes, "direct (floor): the mock itself answers every call with 503 at once, at the same offered rate; "+
			"its latency is what the load generator and the machine add to any rejection")
		t.notes = append(t.notes, "in-proxy: Sluice's own time per 503 (the duration field of its request log, from arrival to answer); HAProxy logs nothing here")
		t.notes = append(t.notes, fmt.Sprintf("sluice: admission.max_in_flight %d, queue.max_depth %d; haproxy: server maxconn %d, timeout queue %s (a queued request gets 503 when it expires)",
			o.overloadLimit, o.overloadQueue, o.overloadLimit, o.haproxyQueueTimeout))
		ts = append(ts, t)
	}
	if len(r.Streams) > 0 {
		t := &table{
			phase: "streams",
			title: fmt.Sprintf("4. Memory per in-flight stream: %d concurrent SSE streams, %d tokens at %s/token", o.streams, o.streamTokens, o.streamTPOT),
			head:  []string{"target", "receiving", "idle RSS", "loaded RSS", "KiB/stream", "time to open all", "upstream in_flight", "in_flight after cancel"},
		}
		for _, x := range r.Streams {
			if x.LoadedKiB == 0 {
				t.add(string(x.Kind), "-", "-", "-", "-", "-", "-", "-")
			} else {
				t.add(string(x.Kind), fmt.Sprintf("%d/%d", x.Receiving, x.Streams), mib(x.IdleKiB), mib(x.LoadedKiB),
					fmt.Sprintf("%.1f", x.PerStream), x.OpenTime.Round(10*time.Millisecond).String(), strconv.FormatInt(x.Upstream, 10),
					fmt.Sprintf("%d (after %s)", x.After, x.DrainTime.Round(time.Millisecond)))
			}
			if x.Note != "" {
				t.notes = append(t.notes, string(x.Kind)+": "+x.Note)
			}
		}
		ts = append(ts, t)
	}
	if len(r.Brownout) > 0 {
		t := &table{
			phase: "brownout",
			title: fmt.Sprintf("5. Brownout cancellation: upstream latency %s, %d clients abandon after %s, counters read %s later",
				o.brownoutLatency, o.brownoutClients, o.brownoutTimeout, o.brownoutSettle),
			head: []string{"target", "clients", "abandoned", "reached upstream", "upstream in_flight", "cancelled_by_client", "cancel propagated"},
		}
		for _, x := range r.Brownout {
			if x.Reached == 0 && x.Note != "" {
				t.add(string(x.Kind), "-", "-", "-", "-", "-", "-")
			} else {
				yes := "no"
				if x.propagates() {
					yes = "yes"
				}
				t.add(string(x.Kind), strconv.Itoa(x.Clients), strconv.Itoa(x.Abandoned), strconv.FormatInt(x.Reached, 10),
					strconv.FormatInt(x.InFlight, 10), strconv.FormatInt(x.Cancelled, 10), yes)
			}
			if x.Note != "" {
				t.notes = append(t.notes, string(x.Kind)+": "+x.Note)
			}
		}
		ts = append(ts, t)
	}
	if r.Hostile != nil {
		ts = append(ts, r.Hostile.tables(o)...)
	}
	return ts
}

func (r *results) verdictTable(o *options) *table {
	t := &table{title: "Targets (Sluice)", head: []string{"target", "measured", "result"}, left: 2}
	for _, v := range r.verdicts(o) {
		m := v.Measured
		if m == "" {
			m = "not measured"
		}
		t.add(v.Name, m, v.mark())
	}
	return t
}

func arrivals(o *options) string {
	if o.poisson {
		return "Poisson"
	}
	return "constant"
}
