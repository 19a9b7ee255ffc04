package sim

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/sim/report"
)

// creditScenario: one key with a budget of 6,000 requests a minute (a
// burst of 1,000, so a replica holds at most 20 of credit), which three
// replicas take 60 a second from, well below the budget.
const creditScenario = `
providers:
  - {name: llm, kind: openai, base_url: "http://127.0.0.1:8001/v1", max_in_flight: 1000}
models:
  - name: chat
    targets: [{provider: llm, model: m}]
keys:
  - {name: tenant, sha256: 55b54587a370149d66b424d429f9d18d4704b997766c1c3ef95e9d0e869fc264, limits: {rpm: 6000}}
scenario:
  name: fleet credit
  seed: 4
  duration: 1m
  drain: true
  fleet:
    replicas: 3
    store: {latency: 2ms}
  clients:
    key: tenant
    model: chat
    rate: [{at: 0s, rps: 60}]
    arrivals: poisson
    max_tokens: 256
    patience: 15s
  upstreams:
    llm: {ttft: 300ms, tpot: 10ms, output_tokens: 50-150}
  policies:
    - name: shared store
      gateway: {store: "redis://sim:6379/0"}
`

// The simulator's replicas hold credit on a shared key budget as the
// gateway's do (fleet.Credit): below the budget, most takes are answered
// from a replica's credit without asking the store, and none is refused
// for it.
func TestFleetCredit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "credit.yaml")
	if err := os.WriteFile(path, []byte(creditScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	f := load(t, path)
	p := f.Policies()[0]
	cfg, err := f.PolicyConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	r, err := newRun(f, p, cfg, Options{RPSScale: 1, SampleEvery: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r.loop()
	fromCredit, fromStore := r.fleet.fromCredit, r.fleet.fromStore
	t.Logf("takes from credit %d, from the store %d, refills %d, refused %d", fromCredit, fromStore, len(r.fleet.refills), r.row.Counts[report.RateLimited])
	if fromCredit < 2*fromStore {
		t.Errorf("takes from credit %d, from the store %d: credit barely used", fromCredit, fromStore)
	}
	if n := r.row.Counts[report.RateLimited]; n != 0 {
		t.Errorf("%d refused below the budget", n)
	}
}
