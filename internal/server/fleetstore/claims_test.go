package fleetstore

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-gw/sluice/internal/core/fleet"
	"github.com/sluice-gw/sluice/internal/server/redistest"
)

// The claim script grants what fleet.Grant grants, and keeps what the
// in-memory store (fleet.Claims, the simulator's) keeps: the same asks
// get the same answers, a loss of the store's data included.
func TestClaimScriptAgreesWithCore(t *testing.T) {
	c := redistest.Conn(t)
	prefix := redistest.Prefix(t, c)
	ctx := context.Background()
	keys := []string{prefix + "claims", EpochKey(prefix)}
	const W = fleet.Whole
	core := fleet.Claims{Window: time.Hour}
	known := map[string]string{}
	ask := func(id string, want, held int64) int64 {
		t.Helper()
		res, err := claimScript.Run(ctx, c, keys, id, "i-"+id, want, held, time.Hour.Milliseconds(), W, NewEpochName(), known[id]).Slice()
		if err != nil {
			t.Fatal(err)
		}
		var g int64
		fmt.Sscan(res[0].(string), &g)
		epoch := res[1].(string)
		lost := EpochLost(known[id], epoch)
		known[id] = epoch
		if lost {
			return g
		}
		if want := core.Claim(id, want, held, t0); g != want {
			t.Fatalf("%s asking %d holding %d: Redis granted %d, the core %d", id, want, held, g, want)
		}
		return g
	}
	ask("a", W, 0)
	if g := ask("b", W/2, 0); g != 0 {
		t.Fatalf("b got %d while a held everything", g)
	}
	ask("a", W*7/10, W)
	if g := ask("b", W/2, 0); g != W*3/10 {
		t.Fatalf("b got %d, want the 3/10 a gave back", g)
	}
	ask("c", W/3, 0)
	ask("a", W/3, W*7/10)
	ask("b", W/3, W*3/10)
	ask("c", W/3, 0)
	// The store loses its data: a replica that knew the epoch re-asserts
	// what it held and gets no more, though nothing looks held.
	redistest.Flush(c, prefix)
	if g := ask("b", W/2, W/3); g != W/3 {
		t.Fatalf("after a loss b got %d asking for %d, want what it held, %d", g, W/2, W/3)
	}
}

// joinedMembers is a replica's membership that has joined the fleet,
// for driving Claims by hand: its one heartbeat counted live replicas.
func joinedMembers(t *testing.T, c *redis.Client, prefix, id string) *Members {
	t.Helper()
	m := NewMembers(c, MemberOptions{Prefix: prefix, ID: id, Interval: 100 * time.Millisecond, Timeout: time.Second})
	if _, err := m.Beat(context.Background()); err != nil {
		t.Fatal(err)
	}
	m.cmu.Lock()
	m.settled = true
	m.cmu.Unlock()
	return m
}

// fakeLoads stands in for a replica's engine: one limit of 10 and the
// calls it holds.
type fakeLoads struct{ in atomic.Int64 }

func (f *fakeLoads) loads(fn func([]fleet.Load)) {
	fn([]fleet.Load{{Limit: 10, InFlight: int(f.in.Load())}})
}

// A replica that joins a loaded one takes only what the other gives
// back as its calls end, through Redis: the two never hold more than
// the limit, and end with five each.
func TestClaimsJoinTakesWhatIsGivenBack(t *testing.T) {
	c := redistest.Conn(t)
	prefix := redistest.Prefix(t, c)
	ma := joinedMembers(t, c, prefix, "a")
	a := NewClaims(c, ma, ClaimOptions{Prefix: prefix, ID: "a", Interval: 100 * time.Millisecond, Timeout: time.Second})
	var la, lb fakeLoads
	a.Step(la.loads)
	if got := fleet.Slots(10, a.Parts(), ma.Live()); got != 10 {
		t.Fatalf("alone: %d slots, want 10", got)
	}
	la.in.Store(10)
	mb := joinedMembers(t, c, prefix, "b")
	b := NewClaims(c, mb, ClaimOptions{Prefix: prefix, ID: "b", Interval: 100 * time.Millisecond, Timeout: time.Second})
	if b.Ready() || b.Parts() != 0 {
		t.Fatalf("before its first ask the joiner holds %d parts (ready %v)", b.Parts(), b.Ready())
	}
	ma.Beat(context.Background()) // a counts two
	for in := int64(10); in >= 3; in-- {
		la.in.Store(in)
		a.Step(la.loads)
		b.Step(lb.loads)
		sa, sb := fleet.Slots(10, a.Parts(), ma.Live()), fleet.Slots(10, b.Parts(), mb.Live())
		if int(in)+sb > 10 {
			t.Fatalf("a holds %d calls (%d slots) and b may start %d", in, sa, sb)
		}
		if want := min(5, 10-int(in)); sb != want {
			t.Fatalf("a holds %d calls: b may start %d, want %d", in, sb, want)
		}
	}
	if !b.Ready() {
		t.Error("the joiner holds a part and is not ready")
	}
}

// A claim another instance of the same replica wrote since (a reload's)
// survives the old instance's Close; a replica's own is dropped by it.
func TestClaimsCloseLeavesAReloadsClaim(t *testing.T) {
	c := redistest.Conn(t)
	prefix := redistest.Prefix(t, c)
	ctx := context.Background()
	m := joinedMembers(t, c, prefix, "r")
	var l fakeLoads
	old := NewClaims(c, m, ClaimOptions{Prefix: prefix, ID: "r", Timeout: time.Second})
	old.Step(l.loads)
	next := NewClaims(c, m, ClaimOptions{Prefix: prefix, ID: "r", Timeout: time.Second})
	next.Step(l.loads)
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.HLen(ctx, old.Key()).Result(); n != 1 {
		t.Fatalf("the old instance's Close dropped the reload's claim (%d left)", n)
	}
	if err := next.Close(); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.HLen(ctx, old.Key()).Result(); n != 0 {
		t.Fatalf("Close left its own claim (%d left)", n)
	}
}

// A claims key that holds another type breaks the claims, not the
// replica: Redis answers, so it decides alone with an equal part of
// the fleet it counts, and says what is wrong.
func TestClaimsWrongType(t *testing.T) {
	c := redistest.Conn(t)
	prefix := redistest.Prefix(t, c)
	var mu sync.Mutex
	var errs []error
	m := joinedMembers(t, c, prefix, "r")
	cl := NewClaims(c, m, ClaimOptions{Prefix: prefix, ID: "r", Timeout: time.Second,
		OnKeyError: func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() }})
	if err := c.Set(context.Background(), cl.Key(), "oops", 0).Err(); err != nil {
		t.Fatal(err)
	}
	var l fakeLoads
	cl.Step(l.loads)
	if p := cl.Parts(); p != fleet.Target(m.Live()) || !cl.Ready() {
		t.Errorf("with a broken claims key: %d parts, ready %v; want an equal part, %d, and ready", p, cl.Ready(), fleet.Target(m.Live()))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(errs) != 1 || !KeyError(errs[0]) {
		t.Errorf("OnKeyError heard %v, want one WRONGTYPE", errs)
	}
}
