package pool

import (
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/core/breaker"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

// replicas makes n replicas with limit each and metrics.
func replicas(n, limit int, metrics bool) []Replica {
	out := make([]Replica, n)
	for i := range out {
		out[i] = Replica{Limit: limit, Metrics: metrics}
	}
	return out
}

// picks picks n times at now, ending none, and returns the replicas.
func picks(p *Pool, now time.Time, n int) []int {
	var out []int
	for range n {
		out = append(out, p.Pick(now).Replica)
	}
	return out
}

func TestParseBalance(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Balance
		ok   bool
	}{{"", LeastLoaded, true}, {"least_loaded", LeastLoaded, true}, {"round_robin", RoundRobin, true}, {"random", 0, false}} {
		got, ok := ParseBalance(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseBalance(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestLeastLoaded(t *testing.T) {
	t.Run("equal replicas take turns", func(t *testing.T) {
		p := New(Config{Replicas: replicas(3, 0, false)})
		if got := picks(p, t0, 6); !equal(got, []int{0, 1, 2, 0, 1, 2}) {
			t.Errorf("picks %v, want each in turn", got)
		}
	})
	t.Run("the replica with fewest calls in flight wins", func(t *testing.T) {
		p := New(Config{Replicas: replicas(3, 0, false)})
		a, b, c := p.Pick(t0), p.Pick(t0), p.Pick(t0)
		p.Done(t0, b, breaker.Outcome{Kind: breaker.OK}, 0, false)
		_ = a
		_ = c
		if got := p.Pick(t0).Replica; got != b.Replica {
			t.Errorf("picked %d, want %d, the only one with nothing in flight", got, b.Replica)
		}
	})
	t.Run("a slow replica gets less", func(t *testing.T) {
		p := New(Config{Replicas: replicas(2, 0, false)})
		// Replica 1 answers in 3 s, replica 0 in 300 ms.
		now := t0
		for range 4 {
			for _, pk := range []Pick{p.Pick(now), p.Pick(now)} {
				lat := 300 * time.Millisecond
				if pk.Replica == 1 {
					lat = 3 * time.Second
				}
				p.Done(now, pk, breaker.Outcome{Kind: breaker.OK}, lat, true)
			}
			now = now.Add(100 * time.Millisecond)
		}
		got := picks(p, now, 10)
		n1 := count(got, 1)
		if n1 == 0 || n1 > 2 {
			t.Errorf("picks %v: the slow replica got %d of 10, want 1 or 2 (cost is latency × (load+1))", got, n1)
		}
	})
	t.Run("an idle slow replica is tried again as its latency decays", func(t *testing.T) {
		p := New(Config{Replicas: replicas(2, 0, false), Decay: time.Second})
		p.Done(t0, p.Pick(t0), breaker.Outcome{Kind: breaker.OK}, 200*time.Millisecond, true)
		p.Done(t0, p.Pick(t0), breaker.Outcome{Kind: breaker.OK}, 5*time.Second, true)
		// The fast replica keeps answering in 200 ms, with one call in
		// flight; the slow one's 5 s fades until it is worth a try.
		held := p.Pick(t0)
		if held.Replica != 0 {
			t.Fatalf("right after its slow answer picked %d, want 0", held.Replica)
		}
		for k := 1; k <= 100; k++ {
			now := at(time.Duration(k) * 100 * time.Millisecond)
			pk := p.Pick(now)
			if pk.Replica == 1 {
				if k < 20 {
					t.Errorf("slow replica tried again after %d ms, want its latency to weigh for over 2 s", k*100)
				}
				return
			}
			p.Done(now, pk, breaker.Outcome{Kind: breaker.OK}, 200*time.Millisecond, true)
		}
		t.Error("the slow replica was never tried again in 10 decay constants")
	})
	t.Run("a replica at its limit is passed over while another has room", func(t *testing.T) {
		p := New(Config{Replicas: []Replica{{Limit: 1}, {Limit: 3}}})
		if got := picks(p, t0, 4); !equal(got, []int{0, 1, 1, 1}) {
			t.Errorf("picks %v, want 0 then 1 until it is full", got)
		}
		if got := p.Pick(t0).Replica; got != 0 {
			// Everyone full: least cost, from after the last picked.
			t.Errorf("with every replica full picked %d, want 0", got)
		}
	})
	t.Run("others' requests from metrics count as load", func(t *testing.T) {
		p := New(Config{Replicas: replicas(2, 0, true), StaleAfter: time.Second})
		p.Observe(t0, 0, Load{Running: 8, Waiting: 2})
		p.Observe(t0, 1, Load{Running: 1})
		if got := picks(p, t0, 5); !equal(got, []int{1, 1, 1, 1, 1}) {
			t.Errorf("picks %v, want replica 1 until its load passes replica 0's ten", got)
		}
	})
}

func TestDrain(t *testing.T) {
	t.Run("a long queue drains a replica while another is under its cap", func(t *testing.T) {
		p := New(Config{Replicas: replicas(2, 4, true), StaleAfter: time.Second})
		p.Observe(t0, 0, Load{Running: 2, Waiting: 3}) // more waiting than running
		p.Observe(t0, 1, Load{Running: 20, Waiting: 1})
		if got := picks(p, t0, 3); !equal(got, []int{1, 1, 1}) {
			t.Errorf("picks %v, want only the replica under its cap", got)
		}
		if st := p.Stats(t0); st[0].Drain != Queued || st[1].Drain != NotDrained {
			t.Errorf("drains %v, %v; want queued, none", st[0].Drain, st[1].Drain)
		}
		if l := p.Limit(); l != 4 {
			t.Errorf("limit %d, want 4: the drained replica's 4 leave the pool's", l)
		}
	})
	t.Run("an explicit cap", func(t *testing.T) {
		p := New(Config{Replicas: replicas(2, 0, true), MaxWaiting: 10, StaleAfter: time.Second})
		p.Observe(t0, 0, Load{Running: 2, Waiting: 9})
		p.Observe(t0, 1, Load{Running: 2, Waiting: 11})
		if st := p.Stats(t0); st[0].Drain != NotDrained || st[1].Drain != Queued {
			t.Errorf("drains %v, %v; want none, queued", st[0].Drain, st[1].Drain)
		}
	})
	t.Run("every replica past its cap: all still take calls", func(t *testing.T) {
		p := New(Config{Replicas: replicas(2, 4, true), StaleAfter: time.Second})
		p.Observe(t0, 0, Load{Running: 1, Waiting: 5})
		p.Observe(t0, 1, Load{Running: 1, Waiting: 9})
		if !p.Available(t0) || p.Limit() != 8 {
			t.Errorf("available %v, limit %d; want true, 8", p.Available(t0), p.Limit())
		}
		if got := p.Pick(t0).Replica; got != 0 {
			t.Errorf("picked %d, want 0, the shorter queue", got)
		}
	})
	t.Run("silent metrics drain a replica until a scrape answers", func(t *testing.T) {
		p := New(Config{Replicas: replicas(2, 4, true), StaleAfter: 3 * time.Second})
		p.Observe(t0, 0, Load{})
		p.Observe(t0, 1, Load{})
		p.Observe(at(2*time.Second), 0, Load{})
		now := at(4 * time.Second) // replica 1's last answer is 4 s old
		if got := picks(p, now, 3); !equal(got, []int{0, 0, 0}) {
			t.Errorf("picks %v, want only replica 0", got)
		}
		if st := p.Stats(now); st[1].Drain != Stale {
			t.Errorf("replica 1 drain %v, want stale", st[1].Drain)
		}
		p.Observe(at(5*time.Second), 1, Load{})
		if got := p.Pick(at(5 * time.Second)).Replica; got != 1 {
			t.Errorf("after its scrape answered picked %d, want 1", got)
		}
	})
	t.Run("a replica that never answered is stale from the pool's start", func(t *testing.T) {
		p := New(Config{Replicas: replicas(1, 4, true), StaleAfter: time.Second})
		if !p.Available(t0) {
			t.Fatal("not available at start")
		}
		if p.Available(at(2 * time.Second)) {
			t.Error("available two seconds in with no scrape ever answered")
		}
		if l := p.Limit(); l != 1 {
			t.Errorf("limit %d with nothing available, want 1", l)
		}
	})
	t.Run("a replica without metrics is never drained for them", func(t *testing.T) {
		p := New(Config{Replicas: replicas(1, 4, false), StaleAfter: time.Second})
		if !p.Available(at(time.Hour)) {
			t.Error("a replica with no metrics endpoint drained")
		}
	})
}

func TestBreakerPerReplica(t *testing.T) {
	b0, err := breaker.New(breaker.Config{MinCalls: 4, ErrorRate: 0.5, OpenFor: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	b1, _ := breaker.New(breaker.Config{MinCalls: 4, ErrorRate: 0.5, OpenFor: 10 * time.Second})
	p := New(Config{Replicas: []Replica{{Limit: 10, Breaker: b0}, {Limit: 10, Breaker: b1}}})
	// Replica 0 fails every call; replica 1 answers.
	now := t0
	for range 10 {
		pk := p.Pick(now)
		if !pk.HasTicket {
			t.Fatal("no breaker ticket from a replica with a breaker")
		}
		kind := breaker.OK
		if pk.Replica == 0 {
			kind = breaker.Error
		}
		p.Done(now, pk, breaker.Outcome{Kind: kind, Latency: 100 * time.Millisecond}, 100*time.Millisecond, kind == breaker.OK)
		now = now.Add(10 * time.Millisecond)
	}
	if st := p.Stats(now); st[0].Drain != Tripped || st[1].Drain != NotDrained {
		t.Fatalf("drains %v, %v; want tripped, none", st[0].Drain, st[1].Drain)
	}
	if got := picks(p, now, 3); !equal(got, []int{1, 1, 1}) {
		t.Errorf("picks %v, want only the healthy replica", got)
	}
	if l := p.Limit(); l != 10 {
		t.Errorf("limit %d, want 10: the tripped replica's leave the sum", l)
	}
	if ts := p.Transitions(); len(ts[0]) == 0 || ts[0][len(ts[0])-1].To != breaker.Open {
		t.Errorf("transitions %v, want replica 0 opened", ts)
	}
}

func TestRoundRobin(t *testing.T) {
	p := New(Config{Balance: RoundRobin, Replicas: replicas(3, 1, true), StaleAfter: time.Second})
	for i := range 3 {
		p.Observe(t0, i, Load{})
	}
	p.Observe(t0, 2, Load{Running: 1, Waiting: 50})
	// Round-robin ignores load, limits and queues.
	if got := picks(p, t0, 6); !equal(got, []int{0, 1, 2, 0, 1, 2}) {
		t.Errorf("picks %v, want each in turn", got)
	}
	// But not a replica whose metrics went silent.
	p.Observe(at(2*time.Second), 0, Load{})
	p.Observe(at(2*time.Second), 2, Load{})
	if got := picks(p, at(2*time.Second), 4); count(got, 1) != 0 {
		t.Errorf("picks %v include the stale replica 1", got)
	}
}

func TestLimitSums(t *testing.T) {
	for _, c := range []struct {
		name string
		reps []Replica
		want int
	}{
		{"sum", []Replica{{Limit: 3}, {Limit: 5}}, 8},
		{"one unlimited makes the pool unlimited", []Replica{{Limit: 3}, {}}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := New(Config{Replicas: c.reps}).Limit(); got != c.want {
				t.Errorf("Limit() = %d, want %d", got, c.want)
			}
		})
	}
}

// Pick is a function of the pool's history: two pools fed the same
// calls choose the same replicas.
func TestDeterministic(t *testing.T) {
	run := func() []int {
		p := New(Config{Replicas: replicas(4, 3, true), StaleAfter: time.Second})
		var out []int
		var open []Pick
		for k := range 200 {
			now := at(time.Duration(k) * 37 * time.Millisecond)
			if k%10 == 0 {
				for i := range 4 {
					p.Observe(now, i, Load{Running: float64((k + i) % 5), Waiting: float64((k * i) % 3)})
				}
			}
			pk := p.Pick(now)
			out = append(out, pk.Replica)
			open = append(open, pk)
			if len(open) > 6 {
				p.Done(now, open[0], breaker.Outcome{Kind: breaker.OK}, time.Duration(100+open[0].Replica*50)*time.Millisecond, true)
				open = open[1:]
			}
		}
		return out
	}
	if a, b := run(), run(); !equal(a, b) {
		t.Error("two identical histories picked differently")
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func count(xs []int, v int) int {
	n := 0
	for _, x := range xs {
		if x == v {
			n++
		}
	}
	return n
}

// A second call goes to another replica than its first, even when the
// first's replica is the least loaded: a replica that fails fast (dead,
// refusing connections) empties at once and would otherwise win every
// retry of its own failures. It is still taken when nothing else can be.
func TestPickOther(t *testing.T) {
	// Replica 0 has a call in flight; replica 1's failed at once.
	setup := func() *Pool {
		p := New(Config{Replicas: replicas(2, 0, false)})
		p.Pick(t0)
		p.Done(t0, p.Pick(t0), breaker.Outcome{Kind: breaker.Error}, 0, false)
		return p
	}
	if got := setup().Pick(t0).Replica; got != 1 {
		t.Fatalf("Pick chose %d; the test needs the idle replica 1 to be the least loaded", got)
	}
	if got := setup().PickOther(t0, 1).Replica; got != 0 {
		t.Errorf("PickOther(1) chose %d, with replica 0 able to take the call", got)
	}
	solo := New(Config{Replicas: replicas(1, 0, false)})
	if got := solo.PickOther(t0, 0).Replica; got != 0 {
		t.Errorf("a pool of one: PickOther chose %d", got)
	}
}
