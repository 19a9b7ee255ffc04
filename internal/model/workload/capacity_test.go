package workload

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestCapacity runs scripts of steps against one upstream, each step a
// line with its expected result:
//
//	admit a run|wait|refuse    a new call arrives
//	end b|-                    a running call ends; b starts next (- none)
//	withdraw b yes|no          call b gives up: yes if it was waiting; if
//	                           not, it runs, and its host ends it with end
//	state 2/1                  running/waiting
func TestCapacity(t *testing.T) {
	for _, c := range []struct {
		name                   string
		maxRunning, maxWaiting int
		script                 string
	}{
		{"unlimited: everything runs", 0, 0, `
			admit a run
			admit b run
			admit c run
			state 3/0
			end -
			state 2/0`},
		{"waiters start in FIFO order as slots free", 1, 0, `
			admit a run
			admit b wait
			admit c wait
			admit d wait
			state 1/3
			end b
			end c
			end d
			state 1/0
			end -
			state 0/0`},
		{"refused past max_waiting, and queued again once there is room", 1, 2, `
			admit a run
			admit b wait
			admit c wait
			admit d refuse
			state 1/2
			end b
			admit e wait
			admit f refuse`},
		{"max_waiting -1: no queue at all", 2, -1, `
			admit a run
			admit b run
			admit c refuse
			end -
			admit d run`},
		{"a newcomer does not jump the queue", 2, 0, `
			admit a run
			admit b run
			admit c wait
			end c
			admit d wait
			state 2/1`},
		{"a waiter that gives up leaves the queue", 1, 0, `
			admit a run
			admit b wait
			admit c wait
			withdraw b yes
			state 1/1
			end c
			withdraw c no
			end -`},
		{"a running call cancelled frees its slot like any end", 1, 1, `
			admit a run
			admit b wait
			admit c refuse
			end b
			state 1/0
			admit d wait
			withdraw b no
			end d
			state 1/0`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cp := NewCapacity[string](c.maxRunning, c.maxWaiting, 0)
			for _, line := range strings.Split(strings.TrimSpace(c.script), "\n") {
				f := strings.Fields(line)
				var got string
				switch f[0] {
				case "admit":
					got = cp.Admit(f[1]).String()
				case "end":
					got = "-"
					if next, ok := cp.End(); ok {
						got = next
					}
				case "withdraw":
					got = map[bool]string{true: "yes", false: "no"}[cp.Withdraw(f[1])]
				case "state":
					got = fmt.Sprintf("%d/%d", cp.Running(), cp.Waiting())
				default:
					t.Fatalf("unknown step %q", line)
				}
				if want := f[len(f)-1]; got != want {
					t.Fatalf("%s: got %s", strings.TrimSpace(line), got)
				}
			}
		})
	}
}

func TestCapacityTPOT(t *testing.T) {
	for _, c := range []struct {
		running int
		scale   float64
		want    time.Duration
	}{
		{0, 1, 10 * ms}, // nothing running: no slowdown, never a speed-up
		{1, 1, 10 * ms}, // alone in the batch
		{3, 1, 20 * ms}, // two more: 1 + 0.5×2
		{3, 4, 80 * ms}, // and a brownout's multiplier
	} {
		cp := NewCapacity[int](0, 0, 0.5)
		for i := range c.running {
			cp.Admit(i)
		}
		if got := cp.TPOT(10*ms, c.scale); got != c.want {
			t.Errorf("%d running, scale %v: TPOT %v, want %v", c.running, c.scale, got, c.want)
		}
	}
}
